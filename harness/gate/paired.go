package gate

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/disturb"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Paired comparison defaults.
const (
	// DefaultPairedThreshold is the change of the median per-round
	// ratio a paired verdict must exceed: 3%. Interleaving cancels the
	// machine's slow drifts, so the paired gate can look closer than
	// the file comparison's 5%.
	DefaultPairedThreshold = 0.03
	// DefaultResamples is the bootstrap's resamples per interval.
	DefaultResamples = 2000
	// DefaultMinRounds is the fewest undisturbed rounds a metric needs
	// for a verdict.
	DefaultMinRounds = 5
	// CPUBoundShare is the CPU time, as a share of wall time (base's
	// least, the run that waited least for a CPU), at or
	// above which a point is CPU-bound: it kept at least half a core busy,
	// so its CPU time per op (cpu-ns/op) is its verdict metric; below
	// it, the point waits (on the device, on I/O) and its wall time per
	// op (sec/op) is.
	CPUBoundShare = 0.5
)

// PairSide is one side of a paired comparison.
type PairSide int

// The sides: the base revision and the head (the working tree).
const (
	Base PairSide = iota
	Head
)

// String is "base" or "head".
func (s PairSide) String() string {
	if s == Base {
		return "base"
	}
	return "head"
}

// Round is one round of a paired comparison: both sides run once each,
// one after the other, in Order.
type Round struct {
	// Index counts rounds from 1.
	Index int
	// Order is which side ran first and which second.
	Order [2]PairSide
	// Results are each side's results of the round, by PairSide.
	Results [2][]*benchfmt.Result
}

// PairedOptions configures ComparePaired.
type PairedOptions struct {
	// Threshold is the relative change of the median ratio a verdict of
	// slower or faster must exceed; DefaultPairedThreshold when 0.
	Threshold float64
	// Confidence is the family-wise level of the bootstrap intervals:
	// each verdict metric's interval is at 1 - (1-Confidence)/m for m
	// verdict metrics (Bonferroni); Confidence (0.95) when 0.
	Confidence float64
	// Resamples per bootstrap interval; DefaultResamples when 0.
	Resamples int
	// Seed seeds the bootstrap, so a report is reproducible.
	Seed uint64
	// MaxDelay is the difference of the sides' run-queue delay shares
	// beyond which a round is disturbed for a benchmark's wall-time and
	// other units (and left out of their ratios); disturb.DefaultMaxDelay
	// when 0. Where a side records no delay, a round where a side's run
	// carries a disturbed mark is disturbed. CPU time per op is never
	// left out: it does not count waiting (roundDisturbed).
	MaxDelay float64
	// MinRounds is the fewest undisturbed rounds a verdict needs;
	// DefaultMinRounds when 0.
	MinRounds int

	// countOnly skips the intervals: a Session counting undisturbed
	// rounds needs no verdicts.
	countOnly bool
	// cpuAlways judges every CPU-bound point on CPU time, settled wall
	// time or not: the rule before issue 41, kept for the simulation's
	// side-by-side table (sim_test.go).
	cpuAlways bool
}

func (o PairedOptions) withDefaults() PairedOptions {
	o.Threshold = cmp.Or(o.Threshold, DefaultPairedThreshold)
	o.Confidence = cmp.Or(o.Confidence, Confidence)
	o.Resamples = cmp.Or(o.Resamples, DefaultResamples)
	o.MaxDelay = cmp.Or(o.MaxDelay, disturb.DefaultMaxDelay)
	o.MinRounds = cmp.Or(o.MinRounds, DefaultMinRounds)
	return o
}

// Validate says what is wrong with o, naming the flag.
func (o PairedOptions) Validate() error {
	switch {
	case !(o.Threshold >= 0 && o.Threshold < 1):
		return fmt.Errorf("--threshold %v: want a change in [0, 1), e.g. 0.03 for 3%%", o.Threshold)
	case !(o.Confidence >= 0 && o.Confidence < 1):
		return fmt.Errorf("--confidence %v: want a level in (0, 1), e.g. 0.95", o.Confidence)
	case o.Resamples < 0 || o.MinRounds < 0:
		return fmt.Errorf("resamples and rounds must not be negative")
	}
	return nil
}

// PairedVerdict is the paired gate's decision about one metric.
type PairedVerdict int

// The paired verdicts.
const (
	// NotSure: the interval holds a slowdown beyond the threshold and
	// does not exclude no change (or a slowdown within it), or a first
	// alarm did not reproduce while the interval still holds one: never
	// a pass (Outcome.Unsure).
	NotSure PairedVerdict = iota
	// Same: the whole interval is within the threshold.
	Same
	// Slower: the whole interval is on the worse side of no change, and
	// the median ratio is worse by more than the threshold.
	Slower
	// Faster: likewise on the better side.
	Faster
	// Unsettled: too few undisturbed rounds for a verdict; rerun.
	Unsettled
	// Described: a run condition (run-queue delay, CPU pressure), or a
	// unit of unknown direction: its ratio is shown, never judged.
	Described
	// OneSided: the metric is on one side only.
	OneSided
	// TooFew: fewer rounds than a verdict needs, none of them disturbed
	// (an interrupted session, replayed): rerun, never pass.
	TooFew
	// NotSlower: the interval excludes a slowdown beyond the threshold
	// but is neither within it (same) nor wholly faster: it passes.
	NotSlower
)

var pairedNames = [...]string{
	NotSure:   "not sure",
	Same:      "same",
	Slower:    "slower",
	Faster:    "faster",
	Unsettled: "disturbed: rerun",
	Described: "not judged",
	OneSided:  "one side only",
	TooFew:    "too few rounds: rerun",
	NotSlower: "not slower",
}

// String is the verdict as reports print it.
func (v PairedVerdict) String() string {
	if v >= 0 && int(v) < len(pairedNames) {
		return pairedNames[v]
	}
	return fmt.Sprintf("PairedVerdict(%d)", int(v))
}

// PairedRow is the paired comparison of one benchmark in one unit.
type PairedRow struct {
	// Name is the benchmark's full name with the "Benchmark" prefix.
	Name string
	// Unit is the tidied unit (sec/op for ns/op).
	Unit string
	// Better is which way the unit is better.
	Better resultfile.Direction
	// Verdict marks the benchmark's verdict metric (cpu-ns/op on a
	// CPU-bound point, sec/op otherwise): only these fail a gate.
	Verdict bool
	// Rounds counts the rounds whose ratio entered, Disturbed those left
	// out for disturbance.
	Rounds, Disturbed int
	// Ratio is the median over rounds of head/base; Lo and Hi its
	// bootstrap interval at Level.
	Ratio, Lo, Hi, Level float64
	// Decision is the verdict.
	Decision PairedVerdict
	// Note explains the verdict where it needs explaining.
	Note string
}

// PairedReport is the result of ComparePaired.
type PairedReport struct {
	Rows []PairedRow
	// Rounds counts the rounds compared.
	Rounds int
	// Options are the settings used, defaults filled in.
	Options PairedOptions
}

// Slower returns the verdict metrics found slower.
func (r PairedReport) Slower() []PairedRow { return r.verdicts(Slower) }

// Unsure returns the verdict metrics that are not sure: their interval
// still holds a slowdown beyond the threshold, so they may not pass.
func (r PairedReport) Unsure() []PairedRow { return r.verdicts(NotSure) }

// Passes reports whether every verdict metric's interval excludes a
// slowdown beyond the threshold (same, faster or not slower): the only
// report a gate passes on.
func (r PairedReport) Passes() bool {
	for _, row := range r.Rows {
		if row.Verdict && !passing(row.Decision) {
			return false
		}
	}
	return true
}

// passing reports whether a verdict metric's decision lets a session
// pass: its interval excludes a slowdown beyond the threshold, or the
// benchmark is on one side only (added or removed: nothing to compare).
func passing(v PairedVerdict) bool {
	return v == Same || v == Faster || v == NotSlower || v == OneSided
}

// Unsettled returns the verdict metrics with too few undisturbed rounds,
// whether rounds were disturbed (Unsettled) or too few were run (TooFew):
// a session with any, and nothing slower, is to be rerun, never passed.
func (r PairedReport) Unsettled() []PairedRow { return r.verdicts(Unsettled, TooFew) }

func (r PairedReport) verdicts(vs ...PairedVerdict) []PairedRow {
	var out []PairedRow
	for _, row := range r.Rows {
		if row.Verdict && slices.Contains(vs, row.Decision) {
			out = append(out, row)
		}
	}
	return out
}

// pmetric is one benchmark and tidied unit.
type pmetric struct{ bench, unit string }

// sideRound is one side's values in one round: each metric's median
// over the round's runs, whether a run stayed disturbed, and every metric
// met, in order (with or without a finite value).
type sideRound struct {
	vals      map[pmetric]float64
	disturbed map[string]bool
	met       []pmetric
}

func summarize(rs []*benchfmt.Result) sideRound {
	all := map[pmetric][]float64{}
	sr := sideRound{vals: map[pmetric]float64{}, disturbed: map[string]bool{}}
	for _, r := range rs {
		bench := strings.TrimPrefix(string(r.Name), "Benchmark")
		for _, v := range r.Values {
			t := resultfile.TidyValue(v)
			m := pmetric{bench, t.Unit}
			sr.met = append(sr.met, m)
			if math.IsNaN(t.Value) || math.IsInf(t.Value, 0) {
				continue
			}
			all[m] = append(all[m], t.Value)
			if t.Unit == disturb.DisturbedUnit && t.Value > 0 {
				sr.disturbed[bench] = true
			}
		}
	}
	for m, vs := range all {
		sr.vals[m] = summary.Median(vs)
	}
	return sr
}

// ComparePaired compares the rounds of a paired session: for each
// benchmark and unit, the ratio head/base in each round (each side's
// median over its runs in the round), left out where the round was
// disturbed for the benchmark; the median ratio with a bootstrap
// interval over rounds (summary.Bootstrap: the round is the unit of
// replication); and a verdict. Verdict metrics (PairedRow.Verdict) are
// each benchmark's cpu-ns/op where base's CPU time (median over rounds)
// is at least CPUBoundShare of its least wall time (the run that waited
// least for a CPU) and both sides record it, else its sec/op; a
// CPU-bound point whose wall time is settled (wallSettled) has both as
// verdict metrics. Their intervals share the Confidence by Bonferroni.
func ComparePaired(rounds []Round, opt PairedOptions) PairedReport {
	opt = opt.withDefaults()
	sides, order := pairedMetrics(rounds)
	rep := PairedReport{Rounds: len(rounds), Options: opt}
	verdictUnits := verdictUnitsOf(sides, order, opt)
	isVerdict := func(m pmetric) bool { return slices.Contains(verdictUnits[m.bench], m.unit) }
	nVerdict := 0
	for _, m := range order {
		if isVerdict(m) {
			nVerdict++
		}
	}
	level := 1 - (1-opt.Confidence)/float64(max(nVerdict, 1))
	rng := rand.New(rand.NewPCG(opt.Seed, 0x9a1e))
	for _, m := range order {
		rep.Rows = append(rep.Rows, pairedRow(m, isVerdict(m), level, sides, opt, rng))
	}
	return rep
}

// pairedMetrics summarises each round's two sides and lists every
// benchmark and unit met, in the order met.
func pairedMetrics(rounds []Round) ([][2]sideRound, []pmetric) {
	sides := make([][2]sideRound, len(rounds))
	var order []pmetric
	seen := map[pmetric]bool{}
	for i, r := range rounds {
		for s := range 2 {
			sides[i][s] = summarize(r.Results[s])
			for _, m := range sides[i][s].met {
				if !seen[m] {
					seen[m] = true
					order = append(order, m)
				}
			}
		}
	}
	return sides, order
}

// verdictUnitsOf is the verdict metric of each benchmark: CPU time for a
// point that keeps a core busy (and wall time beside it where it is
// settled), else wall time.
func verdictUnitsOf(sides [][2]sideRound, order []pmetric, opt PairedOptions) map[string][]string {
	// values are side s's values of m over the rounds; their median and
	// least are NaN for none.
	values := func(s PairSide, m pmetric) []float64 {
		var vs []float64
		for _, sr := range sides {
			if v, ok := sr[s].vals[m]; ok {
				vs = append(vs, v)
			}
		}
		return vs
	}
	verdictUnits := map[string][]string{}
	for _, m := range order {
		if _, ok := verdictUnits[m.bench]; ok {
			continue
		}
		// Whether the point keeps a core busy is read from base's
		// least-waiting run: a neighbour that takes the CPUs lengthens
		// the wall time of the others, not their CPU time.
		wall := summary.Min(values(Base, pmetric{m.bench, "sec/op"}))
		cpu := summary.Median(values(Base, pmetric{m.bench, cpuUnit}))
		headCPU := summary.Median(values(Head, pmetric{m.bench, cpuUnit}))
		switch {
		case !math.IsNaN(cpu) && !math.IsNaN(headCPU) && wall > 0 && cpu/wall >= CPUBoundShare:
			verdictUnits[m.bench] = []string{cpuUnit}
			if !opt.cpuAlways && wallSettled(sides, m.bench, opt) {
				verdictUnits[m.bench] = append(verdictUnits[m.bench], "sec/op")
			}
		default:
			verdictUnits[m.bench] = []string{"sec/op"}
		}
	}
	return verdictUnits
}

// pairedRow is metric m's row: the median head/base ratio of its
// undisturbed rounds and, where it may be decided, its bootstrap interval
// at level (drawn from rng) and decision.
func pairedRow(m pmetric, verdict bool, level float64, sides [][2]sideRound, opt PairedOptions, rng *rand.Rand) PairedRow {
	row := PairedRow{Name: "Benchmark" + m.bench, Unit: m.unit, Better: resultfile.DirectionOf(m.unit, nil),
		Verdict: verdict, Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Level: level}
	var ratios []float64
	present := [2]bool{}
	for _, sr := range sides {
		b, okB := sr[Base].vals[m]
		h, okH := sr[Head].vals[m]
		present[Base] = present[Base] || okB
		present[Head] = present[Head] || okH
		if !okB || !okH || b == 0 {
			continue
		}
		if roundDisturbed(sr, m.bench, m.unit, opt.MaxDelay) {
			row.Disturbed++
			continue
		}
		ratios = append(ratios, h/b)
	}
	row.Rounds = len(ratios)
	if len(ratios) > 0 {
		row.Ratio = summary.Median(ratios) // sorts ratios: Bootstrap does not mind
	}
	switch {
	case !present[Base] || !present[Head]:
		row.Decision = OneSided
	case disturb.IsCondition(m.unit) || row.Better == resultfile.NoDirection:
		row.Decision = Described
	case len(ratios) < opt.MinRounds:
		row.Decision = Unsettled
		row.Note = fmt.Sprintf("%d undisturbed rounds of %d, fewer than the %d a verdict needs", len(ratios), len(sides), opt.MinRounds)
		if row.Disturbed == 0 {
			row.Decision = TooFew
		}
	case opt.countOnly:
	default:
		row.Lo, row.Hi = summary.Bootstrap(ratios, level, opt.Resamples, rng)
		row.Decision = decidePaired(row, opt.Threshold)
	}
	return row
}

// wallSettled reports whether a CPU-bound benchmark's wall time is
// judged beside its CPU time: where both sides record their run-queue
// delay and at least half the rounds, and at least MinRounds, are
// undisturbed for its wall time. On a machine that lets both sides run
// undisturbed, wall time is the truer and often the tighter measure
// (session s16 of docs/gate.md: on the machine alone, CPU time read
// +7.8% "not sure" where wall time read +9.9% [8.7%, 11.1%]); where
// neighbours take the CPUs, CPU time, which does not count waiting,
// keeps every round. Both are then verdict metrics (Bonferroni counts
// both), so a slowdown either sees fails the gate: judging wall time
// instead of CPU time lost power on the simulated machine, whose
// unseen slow windows lengthen wall time alone.
func wallSettled(sides [][2]sideRound, bench string, opt PairedOptions) bool {
	wall, delay := pmetric{bench, "sec/op"}, pmetric{bench, disturb.RunDelayUnit}
	clean := 0
	for _, sr := range sides {
		_, okB := sr[Base].vals[delay]
		_, okH := sr[Head].vals[delay]
		if !okB || !okH {
			return false
		}
		if !roundDisturbed(sr, bench, wall.unit, opt.MaxDelay) {
			clean++
		}
	}
	return clean >= opt.MinRounds && 2*clean >= len(sides)
}

// cpuUnit is disturb.CPUUnit as benchfmt tidies it: cpu-sec/op.
var cpuUnit = resultfile.TidyValue(benchfmt.Value{Value: 1, Unit: disturb.CPUUnit}).Unit

// roundDisturbed reports whether a round is disturbed for a metric of a
// benchmark. CPU time (cpu-sec/op) does not count time spent waiting for
// a CPU, so no round is left out of it for run-queue delay. For the other
// units: where both sides record their run-queue delay, when the shares
// of it other processes caused (disturb.OthersDelay, where both sides
// record other-cores; else the whole delay, as a base older than issue
// 52 records) differ by more than maxDelay (a neighbour took the CPUs
// from one side and not the other; one that took them from both alike
// cancels in the ratio); where a side does not, when a side's run stayed
// disturbed. A side's own threads waiting for each other are no
// disturbance: a head that adds a thread is measured, not left out.
func roundDisturbed(sr [2]sideRound, bench, unit string, maxDelay float64) bool {
	if unit == cpuUnit {
		return false
	}
	m := pmetric{bench, disturb.RunDelayUnit}
	b, okB := sr[Base].vals[m]
	h, okH := sr[Head].vals[m]
	if !okB || !okH {
		return sr[Base].disturbed[bench] || sr[Head].disturbed[bench]
	}
	o := pmetric{bench, disturb.OtherCoresUnit}
	ob, okOB := sr[Base].vals[o]
	oh, okOH := sr[Head].vals[o]
	if okOB && okOH {
		return math.Abs(disturb.OthersDelay(h, oh)-disturb.OthersDelay(b, ob)) > maxDelay
	}
	return math.Abs(h-b)/100 > maxDelay
}

// decidePaired gives a row with an interval its verdict.
func decidePaired(row PairedRow, threshold float64) PairedVerdict {
	// worse is the ratio's direction of getting worse: up for
	// lower-is-better units.
	worse := 1.0
	if row.Better == resultfile.HigherIsBetter {
		worse = -1
	}
	change := worse * (row.Ratio - 1) // > 0: worse
	lo, hi := worse*(row.Lo-1), worse*(row.Hi-1)
	if lo > hi {
		lo, hi = hi, lo
	}
	switch {
	case lo > 0 && change > threshold:
		return Slower
	case hi < 0 && -change > threshold:
		return Faster
	case lo >= -threshold && hi <= threshold:
		return Same
	case hi <= threshold:
		// A slowdown beyond the threshold is excluded, all that a pass
		// needs, though the interval reaches a speed-up beyond it.
		return NotSlower
	}
	return NotSure
}
