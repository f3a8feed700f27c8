package spdlcache

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Side is one side's estimate over the rounds.
type Side struct {
	Name    string
	Runs    int // runs with figures
	Missing int
	// Before and After are the medians of the runs' step times.
	Before, After time.Duration
	// Share is the median of the runs' headspace shares, with its 95%
	// interval by order statistics (±Inf under 6 runs).
	Share summary.Summary
}

// Report is a comparison: both sides and how they compare.
type Report struct {
	Config []resultfile.Config
	Runs   []Run
	Sides  [2]Side // Ours, SPDL
	// Diff is ours' share − SPDL's, paired by round, in points of share:
	// the median over the rounds where both ran, and its 95%
	// percentile-bootstrap interval; Pairs counts those rounds.
	Diff, DiffLo, DiffHi float64
	Pairs                int
	// Same are both sides by one estimator: [0] the means of the steps
	// (SPDL's side's), [1] the median of the round means (ours'), each
	// from the runs that have it.
	Same [2]Same
}

// Same is both sides' headspace by one estimator: each side's median
// share, and ours − SPDL's paired by round as Report's Diff.
type Same struct {
	Estimator            string
	Ours, SPDL           float64
	Diff, DiffLo, DiffHi float64
	Pairs                int
}

// paired is the median of ours − SPDL's over the rounds both have, its
// bootstrap interval and the number of rounds.
func paired(ours, spdl map[int]float64) (diff, lo, hi float64, n int) {
	var diffs []float64
	for round, o := range ours {
		if p, ok := spdl[round]; ok {
			diffs = append(diffs, o-p)
		}
	}
	if len(diffs) == 0 {
		return math.NaN(), math.NaN(), math.NaN(), 0
	}
	lo, hi = summary.Bootstrap(diffs, summary.Confidence, bootstrapResamples, rand.New(rand.NewPCG(bootstrapSeed, 0)))
	return summary.Median(diffs), lo, hi, len(diffs)
}

// medianOf is the median of m's values, NaN for none.
func medianOf(m map[int]float64) float64 {
	var xs []float64
	for _, v := range m {
		xs = append(xs, v)
	}
	return summary.Median(xs)
}

// bootstrapResamples and bootstrapSeed fix the paired interval, so that a
// report rebuilt from its file is the same.
const (
	bootstrapResamples = 10000
	bootstrapSeed      = 54
)

// NewReport summarises runs; config is the file's configuration.
func NewReport(config []resultfile.Config, runs []Run) Report {
	rep := Report{Config: config, Runs: runs}
	share := map[string]map[int]float64{}
	for i, name := range Sides {
		s := Side{Name: name}
		var shares, before, after []float64
		for _, r := range runs {
			if r.Side != name {
				continue
			}
			if r.Missing != "" {
				s.Missing++
				continue
			}
			s.Runs++
			shares = append(shares, r.Share())
			before, after = append(before, float64(r.Before)), append(after, float64(r.After))
			if share[name] == nil {
				share[name] = map[int]float64{}
			}
			share[name][r.Round] = r.Share()
		}
		s.Share = summary.Of(shares)
		s.Before, s.After = time.Duration(summary.Median(before)), time.Duration(summary.Median(after))
		rep.Sides[i] = s
	}
	rep.Diff, rep.DiffLo, rep.DiffHi, rep.Pairs = paired(share[Ours], share[SPDL])
	// One estimator for both: a run's own share where it is that side's
	// estimator, its other share where it is the other side's.
	for i, est := range []string{"the means of the steps (SPDL's side's)", "the median of the round means (ours')"} {
		by := map[string]map[int]float64{Ours: {}, SPDL: {}}
		for _, r := range runs {
			if r.Missing != "" {
				continue
			}
			own := (r.Side == SPDL) == (i == 0)
			switch {
			case own:
				by[r.Side][r.Round] = r.Share()
			case r.OtherBefore > 0:
				by[r.Side][r.Round] = r.OtherShare()
			}
		}
		sm := Same{Estimator: est, Ours: medianOf(by[Ours]), SPDL: medianOf(by[SPDL])}
		sm.Diff, sm.DiffLo, sm.DiffHi, sm.Pairs = paired(by[Ours], by[SPDL])
		rep.Same[i] = sm
	}
	return rep
}

// Agree says whether the two sides' intervals overlap; known is false
// when a side has no runs or an interval is infinite (too few rounds).
func (r Report) Agree() (agree, known bool) {
	o, p := r.Sides[0].Share, r.Sides[1].Share
	for _, v := range []float64{o.Lo, o.Hi, p.Lo, p.Hi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false, false
		}
	}
	return o.Lo <= p.Hi && p.Lo <= o.Hi, true
}

// config is the value of key in the file's configuration, or "".
func (r Report) config(key string) string {
	for _, c := range r.Config {
		if c.Key == key {
			return c.Value
		}
	}
	return ""
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	if math.IsInf(v, 0) {
		return "∞"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

func points(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%+.1f", 100*v)
}

// label is how the report names a side.
func label(side string) string {
	if side == Ours {
		return "headspace analyze (`ours`)"
	}
	return "SPDL's CacheDataLoader (`spdl-cache`)"
}

// Table is the two sides' table.
func (r Report) Table() *report.Table {
	t := report.NewTable("lrrrrr", "estimate", "step time (loader)", "step time (cached)", "headspace (median)", "95% interval", "runs")
	for _, s := range r.Sides {
		runs := strconv.Itoa(s.Runs)
		if s.Missing > 0 {
			runs += fmt.Sprintf(" (%d missing)", s.Missing)
		}
		if s.Runs == 0 {
			t.Add(label(s.Name), "—", "—", "—", "—", runs)
			continue
		}
		t.Add(label(s.Name), report.Ms(s.Before, 1), report.Ms(s.After, 1), pct(s.Share.Median),
			pct(s.Share.Lo)+" – "+pct(s.Share.Hi), runs)
	}
	return t
}

// Verdict is the lines that say whether the two agree.
func (r Report) Verdict() []string {
	var out []string
	if r.Pairs > 0 {
		out = append(out, fmt.Sprintf("ours − SPDL's, paired by round: %s points (median of %s; 95%% bootstrap interval %s to %s)",
			points(r.Diff), report.Plural(r.Pairs, "round"), points(r.DiffLo), points(r.DiffHi)))
	}
	for _, sm := range r.Same {
		if sm.Pairs > 0 {
			out = append(out, fmt.Sprintf("one estimator for both, %s: ours %s, SPDL's %s; ours − SPDL's %s points (95%% bootstrap interval %s to %s)",
				sm.Estimator, pct(sm.Ours), pct(sm.SPDL), points(sm.Diff), points(sm.DiffLo), points(sm.DiffHi)))
		}
	}
	switch agree, known := r.Agree(); {
	case !known:
		out = append(out, "agreement: not known: each side needs at least 6 runs for a 95% interval (--count 6 or more)")
	case agree:
		out = append(out, "agreement: yes, the two 95% intervals overlap")
	default:
		out = append(out, "agreement: no, the two 95% intervals do not overlap")
	}
	return out
}

// Missing are the missing runs' lines.
func (r Report) Missing() []string {
	var out []string
	for _, run := range r.Runs {
		if run.Missing != "" {
			out = append(out, fmt.Sprintf("%s round %d: %s", run.Side, run.Round, run.Missing))
		}
	}
	return out
}

// WriteText prints the report.
func (r Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "SPDL's own headspace beside headspace analyze: %s\n", r.config("script-command"))
	if _, err := r.Table().WriteTo(w); err != nil {
		return err
	}
	for _, line := range append(r.Verdict(), r.Missing()...) {
		fmt.Fprintln(w, line)
	}
	return nil
}

// WriteMarkdown writes the report as Markdown.
func (r Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# SPDL's own headspace beside headspace analyze\n\n")
	fmt.Fprintf(&b, "The script: `%s`, on %s (%s, %s cores).\n", r.config("script-command"), r.config("dataset"), r.config("cpu"), r.config("cores"))
	fmt.Fprintf(&b, "Both sides: %s cached, the switch after %s steps from the loader, %s steps after it; %s rounds, alternated.\n\n",
		r.config("num-caches"), r.config("return-caches-after"), r.config("steps-after"), r.config("rounds"))
	b.WriteString(r.Table().String())
	b.WriteString("\n")
	for _, line := range r.Verdict() {
		fmt.Fprintf(&b, "- %s\n", line)
	}
	if m := r.Missing(); len(m) > 0 {
		b.WriteString("\nMissing runs:\n\n")
		for _, line := range m {
			fmt.Fprintf(&b, "- %s\n", line)
		}
	}
	b.WriteString("\nEvery run, by round (the order within a round alternates):\n\n")
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return err
	}
	t := report.NewTable("rlrrr", "round", "side", "step time (loader)", "step time (cached)", "headspace")
	byRound := slices.Clone(r.Runs)
	slices.SortStableFunc(byRound, func(a, b Run) int { return a.Round - b.Round })
	for _, run := range byRound {
		if run.Missing != "" {
			t.Add(strconv.Itoa(run.Round), run.Side, "—", "—", "missing")
			continue
		}
		t.Add(strconv.Itoa(run.Round), run.Side, report.Ms(run.Before, 1), report.Ms(run.After, 1), pct(run.Share()))
	}
	_, err = t.WriteTo(w)
	return err
}
