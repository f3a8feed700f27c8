package tune

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Candidate is one setting the search ran, summarised over its search
// runs.
type Candidate struct {
	Setting Setting
	Summary summary.Summary // steps/s over its search runs
	Failed  string          // why its run failed; "" where none did
}

// Candidates are the settings the search ran, in the order first run.
func (r Result) Candidates() []Candidate {
	var out []Candidate
	for _, run := range r.Runs {
		if run.Stage != Search {
			continue
		}
		i := slices.IndexFunc(out, func(c Candidate) bool { return c.Setting == run.Setting })
		if i < 0 {
			out = append(out, Candidate{Setting: run.Setting})
			i = len(out) - 1
		}
		if run.Failed {
			out[i].Failed = run.Reason
			if out[i].Failed == "" {
				out[i].Failed = "failed"
			}
		}
	}
	for i := range out {
		out[i].Summary = r.summary(Search, out[i].Setting)
	}
	return out
}

// summary is s's steps/s over its runs of stage.
func (r Result) summary(stage string, s Setting) summary.Summary {
	var xs []float64
	for _, run := range r.Runs {
		if run.Stage == stage && run.Setting == s && !run.Failed {
			xs = append(xs, run.StepsPerSec)
		}
	}
	return summary.Of(xs)
}

// Answer is what the tune says: the setting to use, steps/s before and
// after in the final check, the share of the headspace recovered, or
// why nothing helps.
type Answer struct {
	Own, Best Setting
	// Recommend says the best measured faster than the script's own in
	// the final check: never where it measured slower.
	Recommend     bool
	Before, After summary.Summary // steps/s in the final check (the script's own, the best)
	// Recovered is the share of the headspace (the step time cached
	// batches save) that the best recovers, in the check; NaN with no
	// headspace.
	Recovered float64
	// Why says why nothing is recommended.
	Why string
}

// Answer reads the result's answer.
func (r Result) Answer() Answer {
	p := r.Profile
	a := Answer{Own: p.Own.Normal(), Best: r.Best, Recovered: math.NaN()}
	a.Before, a.After = r.summary(Check, a.Own), r.summary(Check, a.Best)
	failedCheck := slices.ContainsFunc(r.Runs, func(x Run) bool { return x.Stage == Check && x.Failed })
	if a.Best != a.Own && a.Before.N > 0 && a.After.N > 0 && !failedCheck && a.After.Median > a.Before.Median {
		a.Recommend = true
		if hs := 1/a.Before.Median - 1/p.Cached; p.Cached > 0 && hs > 0 {
			a.Recovered = (1/a.Before.Median - 1/a.After.Median) / hs
		}
		return a
	}
	switch {
	case a.Best == a.Own && r.Stopped == "interrupted":
		a.Why = "interrupted before any setting beat " + p.own()
	case a.Best == a.Own:
		a.Why = "no setting the search ran beat " + p.own()
	case failedCheck:
		a.Why = fmt.Sprintf("%s failed in the final check", p.Args(a.Best))
	case a.After.N == 0:
		a.Why = "the final check did not run"
	default:
		a.Why = fmt.Sprintf("%s measured %.2f steps/s in the final check against %s %.2f: not faster", p.Args(a.Best), a.After.Median, p.own(), a.Before.Median)
	}
	return a
}

// Bound says what would speed the script up where no loader setting
// does: the model step, or the stage the what-if names and what it
// would take.
func (r Result) Bound() string {
	p := r.Profile
	if p.Ours() {
		return r.oursBound()
	}
	if p.HeadspacePercent() < 5 {
		return fmt.Sprintf("the loop is model-bound: %.2f steps/s with the loader, %.2f on cached batches (headspace %.1f%%): no loader setting can speed it; a faster model step would",
			p.Before, p.Cached, p.HeadspacePercent())
	}
	m := p.Model
	if m == nil {
		return fmt.Sprintf("the loader holds the loop back (headspace %.1f%%), but its stages were not timed (workers that do not fork): headspace analyze with forked workers names the stage", p.HeadspacePercent())
	}
	cores := float64(r.cores())
	s := fmt.Sprintf("the loader holds the loop back (headspace %.1f%%); its slowest stage is %s, %s a batch", p.HeadspacePercent(), m.Stage, report.Ms(m.StageTime, 1))
	if need := m.NeedCores(); need > cores {
		have := fmt.Sprintf("this machine has %.0f", cores)
		if p.Ranks > 0 {
			have = fmt.Sprintf("a rank has %.0f (the machine's shared by %d ranks)", cores, p.Ranks)
		}
		s += fmt.Sprintf("; the cores are spent: the step and its batch need %.1f cores at the model's bound, %s", need, have)
	}
	if need, over := m.StageNeed(); need > 0 {
		s += fmt.Sprintf("; keeping %d workers, %s must take %s a batch instead of %s (%.1f× faster)", m.Workers, m.Stage, report.Ms(need, 1), report.Ms(m.StageTime, 1), float64(m.StageTime)/float64(need))
	} else if over > 0 {
		s += fmt.Sprintf("; keeping %d workers no one stage can make up the %s a batch over: more cores it is", m.Workers, report.Ms(over, 1))
	}
	return s
}

// oursBound is Bound for our pipeline: the what-if model's binding
// resource at its own setting.
func (r Result) oursBound() string {
	p := r.Profile
	if p.HeadspacePercent() < 5 {
		return fmt.Sprintf("the pipeline keeps up: %.2f steps/s with the loader, %.2f with the data on the device (headspace %.1f%%): no setting can speed it; a faster step would",
			p.Before, p.Cached, p.HeadspacePercent())
	}
	s := fmt.Sprintf("the pipeline holds the loop back (headspace %.1f%%)", p.HeadspacePercent())
	switch {
	case p.Limit == "":
		return s + ", and the what-if model was not made: headspace whatif names the stage in the way"
	case p.Limit == LimitFetch:
		return s + "; in the way: the requests in flight (Little's law on the profile's requests wants more than --fetch-concurrency gives; the what-if model has no network)"
	case p.Limit == "cores":
		return s + "; in the way: the cores (the what-if model's bound at your setting): they are spent, and a stage itself must get cheaper (headspace whatif names the speed-up each stage needs)"
	}
	return s + "; in the way: " + p.Limit + " (the what-if model's bound at your setting; headspace whatif names the speed-up each stage needs)"
}

func (r Result) cores() int {
	if r.Profile.Model != nil {
		return r.Profile.Model.Cores
	}
	return 0
}

// own names the setting the tune started from.
func (p Profile) own() string {
	if p.Ours() {
		return "your own"
	}
	return "the script's own"
}

// interval is s as "median (95% CI lo – hi, n runs)".
func interval(s summary.Summary) string {
	if s.N == 0 {
		return "n/a"
	}
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) || math.IsNaN(s.Lo) {
		return fmt.Sprintf("%.2f (n=%d: too few runs for an interval)", s.Median, s.N)
	}
	return fmt.Sprintf("%.2f (95%% CI %.2f – %.2f, n=%d)", s.Median, s.Lo, s.Hi, s.N)
}

// WriteCandidates prints the candidates the search ran, each with its
// interval.
func (r Result) WriteCandidates(w io.Writer) {
	p := r.Profile
	fmt.Fprintf(w, "candidates (steps/s over their search runs, alternated round by round):\n")
	for _, c := range r.Candidates() {
		mark := ""
		switch {
		case c.Setting == r.Profile.Own.Normal():
			mark = "  (" + p.own() + ")"
		case c.Setting == r.Best:
			mark = "  (best)"
		}
		if c.Failed != "" {
			fmt.Fprintf(w, "  %-70s failed: %s\n", p.Args(c.Setting), c.Failed)
			continue
		}
		fmt.Fprintf(w, "  %-70s %s%s\n", p.Args(c.Setting), interval(c.Summary), mark)
	}
}

// WriteText prints the candidates and the answer: the line to paste,
// steps/s before and after with their intervals and the share of the
// headspace recovered, or why nothing helps and what would.
func (r Result) WriteText(w io.Writer) {
	r.writeProfile(w)
	fmt.Fprintln(w)
	r.WriteCandidates(w)
	search := 0
	for _, run := range r.Runs {
		if run.Stage == Search {
			search++
		}
	}
	fmt.Fprintf(w, "runs: the profile, %d in the search (%s), %d in the final check\n\n", search, r.stopped(), len(r.Runs)-search)
	p, a := r.Profile, r.Answer()
	if a.Recommend {
		r.writeSet(w, a)
		return
	}
	if p.Ours() {
		fmt.Fprintf(w, "keep your own (%s): %s\n", p.Args(a.Own), a.Why)
	} else {
		fmt.Fprintf(w, "keep the script's own settings (DataLoader(..., %s)): %s\n", a.Own.Args(), a.Why)
	}
	if a.Before.N > 0 {
		fmt.Fprintf(w, "  final check: %s %s steps/s, %s %s\n", p.own(), interval(a.Before), p.Args(a.Best), interval(a.After))
	}
	fmt.Fprintf(w, "  %s\n", r.Bound())
}

// writeProfile prints the profile's line, the loader's steps/s before
// and on cached batches, and the what-if model's pick.
func (r Result) writeProfile(w io.Writer) {
	p := r.Profile
	if p.Ours() {
		fmt.Fprintf(w, "profile (headspace %s as given, %s): %.2f steps/s with the loader, %.2f with the data on the device: headspace %.1f%%\n",
			p.Pipeline, p.Args(p.Own), p.Before, p.Cached, p.HeadspacePercent())
		fmt.Fprintf(w, "the what-if model's pick: %s", report.Plural(r.Pick, "worker"))
		if r.FetchPick > 0 {
			fmt.Fprintf(w, ", %d requests in flight (Little's law)", r.FetchPick)
		}
		fmt.Fprintf(w, " (its bound at the given setting: %s)\n", p.Limit)
	} else if p.Ranks > 0 {
		fmt.Fprintf(w, "profile (the script as it is, %d ranks, each rank's loader %s; the slowest rank's, which the others wait for): %.2f steps/s with the loader, %.2f on cached batches: headspace %.1f%%\n",
			p.Ranks, p.Own.Normal().Args(), p.Before, p.Cached, p.HeadspacePercent())
		fmt.Fprintf(w, "each candidate runs in every rank's training loader; its steps/s are the node's: the slowest rank's (the ranks step in lockstep)\n")
	} else {
		fmt.Fprintf(w, "profile (the script as it is, %s): %.2f steps/s with the loader, %.2f on cached batches: headspace %.1f%%\n",
			p.Own.Normal().Args(), p.Before, p.Cached, p.HeadspacePercent())
	}
	if p.Model != nil && p.Ranks > 0 {
		fmt.Fprintf(w, "the what-if model's pick: %d workers a rank (predicted %.2f steps/s on a rank's %d cores: the machine's shared by %d ranks)\n",
			r.Pick, p.Model.StepsPerSec(r.Pick, p.Model.Cores), p.Model.Cores, p.Ranks)
	} else if p.Model != nil {
		fmt.Fprintf(w, "the what-if model's pick: %d workers (predicted %.2f steps/s on %d cores)\n", r.Pick, p.Model.StepsPerSec(r.Pick, p.Model.Cores), p.Model.Cores)
	}
}

// writeSet prints the answer a that recommends a setting: the setting
// to use and the final check of it against the loader's own.
func (r Result) writeSet(w io.Writer, a Answer) {
	p := r.Profile
	if p.Ours() {
		fmt.Fprintf(w, "set: %s\n", p.Args(a.Best))
	} else if p.Ranks > 0 {
		fmt.Fprintf(w, "set, in every rank (the DataLoader each of the %d ranks makes): DataLoader(..., %s)\n", p.Ranks, a.Best.Args())
	} else {
		fmt.Fprintf(w, "set: DataLoader(..., %s)\n", a.Best.Args())
	}
	if p.Iterable && a.Best.Workers > max(1, a.Own.Workers) {
		fmt.Fprintf(w, "  but the training dataset is an IterableDataset: each of %d workers iterates all of it unless its __iter__ shards by\n"+
			"  torch.utils.data.get_worker_info(); the steps/s above count its batches either way: check it does before using more workers\n", a.Best.Workers)
	}
	fmt.Fprintf(w, "  final check, paired runs alternated:\n")
	fmt.Fprintf(w, "    %-27s%s steps/s\n", "before ("+p.own()+"):", interval(a.Before))
	fmt.Fprintf(w, "    after:                     %s steps/s, %.2f× before\n", interval(a.After), a.After.Median/a.Before.Median)
	if !math.IsNaN(a.Recovered) {
		fmt.Fprintf(w, "  recovers %.0f%% of the headspace (the step time cached batches save)\n", 100*a.Recovered)
	}
	if a.Before.Hi >= a.After.Lo && !math.IsInf(a.Before.Hi, 0) {
		fmt.Fprintln(w, "  the two intervals overlap: the gain is within this machine's noise")
	}
}

func (r Result) stopped() string {
	switch r.Stopped {
	case "budget":
		return "stopped by the budget"
	case "done":
		return "done"
	case "interrupted":
		return "interrupted"
	}
	return "done"
}

// MaxWorkers is the default of the largest worker count tried on cores
// cores: twice the cores, at least 8, at most 32.
func MaxWorkers(cores int) int { return min(32, max(8, 2*cores)) }
