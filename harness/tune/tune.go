package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Setting is one candidate: a script's training loader's settings
// (ownloop.LoaderSettings), or our pipeline's (Workers, Prefetch and,
// with data in a bucket, Fetch; Profile.Pipeline).
type Setting struct {
	Workers  int
	Prefetch int
	// Pin, Persistent and Start are a script's DataLoader's alone.
	Pin, Persistent bool
	Start           string
	// Fetch is our pipeline's requests in flight to a bucket
	// (--fetch-concurrency); 0 for a script's loader, or data that is
	// not in a bucket.
	Fetch int
}

// FromLoader is the setting of a script's loader settings.
func FromLoader(l ownloop.LoaderSettings) Setting {
	return Setting{Workers: l.Workers, Prefetch: l.Prefetch, Pin: l.Pin, Persistent: l.Persistent, Start: l.Start}
}

// Loader is s as the hook applies it to a script's loader.
func (s Setting) Loader() ownloop.LoaderSettings {
	return ownloop.LoaderSettings{Workers: s.Workers, Prefetch: s.Prefetch, Pin: s.Pin, Persistent: s.Persistent, Start: s.Start}
}

// Normal is s as it runs (ownloop.LoaderSettings.Normal), Fetch kept:
// our pipeline's settings, whose workers and prefetch are positive, are
// their own.
func (s Setting) Normal() Setting {
	n := FromLoader(s.Loader().Normal())
	n.Fetch = s.Fetch
	return n
}

// Args are the DataLoader arguments that set s (a script's): the line
// to paste.
func (s Setting) Args() string { return s.Loader().Args() }

// Flags are the flags that set s in our pipeline's command: "--workers
// 6 --prefetch 4", with "--fetch-concurrency N" where it fetches.
func (s Setting) Flags() string {
	f := fmt.Sprintf("--workers %d --prefetch %d", s.Workers, s.Prefetch)
	if s.Fetch > 0 {
		f += fmt.Sprintf(" --fetch-concurrency %d", s.Fetch)
	}
	return f
}

// Profile is what the search starts from: the analysis run of the
// script as it is.
type Profile struct {
	Own    Setting // the training loader's settings, as the script made them
	Before float64 // steps/s with the loader (the analysis's step time before caching)
	Cached float64 // steps/s on cached batches: the model step's bound
	// Model is the what-if model of the loader; nil where its stages
	// were not timed (workers that do not fork).
	Model *ownloop.WhatIf
	// Startup is a run's time before its first step: the profile run's
	// wall time less its steps.
	Startup time.Duration
	CUDA    bool
	// Iterable says the training dataset is an IterableDataset: each
	// worker iterates all of it unless it shards by get_worker_info().
	Iterable bool
	// Ranks is the node's ranks where the script starts them (torchrun,
	// torch.multiprocessing.spawn); 0 for one process. Each candidate is
	// then applied to every rank's training loader, its steps/s are the
	// slowest rank's (the ranks step in lockstep), and the profile,
	// Before, Cached and Model, is the slowest rank's, its model on a
	// rank's cores (CoresPerRank).
	Ranks int

	// Pipeline names our own pipeline where the tune is of it ("ladder",
	// "remote"; its settings are its command's flags); "" is a script's
	// DataLoader.
	Pipeline string
	// Predict, where set, is the what-if model's steps/s at a setting on
	// cores cores (our pipeline's, package whatif); a script's comes
	// from Model. Not recorded.
	Predict func(s Setting, cores int) float64
	// FetchPick is the fetch concurrency the model predicts enough for
	// our pipeline reading from a bucket (Little's law on the profile's
	// requests); 0 where it does not fetch.
	FetchPick int
	// Limit is what binds our pipeline at its own setting, as the
	// what-if model names it (whatif.Limit: "cores", "copy", "step",
	// "<stage> workers"); "" for a script (Model.Stage says it).
	Limit string
}

// CoresPerRank is the cores each of a node's ranks has: the machine's
// cores shared among ranks ranks (at least 1), all of them for one
// process (ranks 0).
func CoresPerRank(cores, ranks int) int { return max(1, cores/max(1, ranks)) }

// LimitFetch is Profile.Limit where Little's law on the profile's
// requests wants more requests in flight than our pipeline was given.
const LimitFetch = "requests in flight"

// Ours says the tune is of headspace's own pipeline, not a script.
func (p Profile) Ours() bool { return p.Pipeline != "" }

// Args are s as the answer gives it: our pipeline's flags, or a script's
// DataLoader arguments.
func (p Profile) Args(s Setting) string {
	if p.Ours() {
		return s.Normal().Flags()
	}
	return s.Args()
}

// predict is the model's steps/s at s on cores cores; 0 without a
// model.
func (p Profile) predict(s Setting, cores int) float64 {
	switch {
	case p.Predict != nil:
		return p.Predict(s, cores)
	case p.Model != nil && s.Workers > 0:
		return p.Model.StepsPerSec(s.Workers, cores)
	case p.Model != nil:
		return 1 / (p.Model.PerBatch + p.Model.Step).Seconds()
	}
	return 0
}

// HeadspacePercent is the share of the step time with the loader that
// cached batches save.
func (p Profile) HeadspacePercent() float64 {
	if p.Before <= 0 || p.Cached <= 0 {
		return 0
	}
	return 100 * (1/p.Before - 1/p.Cached) / (1 / p.Before)
}

// Config is a search's settings.
type Config struct {
	Budget time.Duration // the whole tune's, the profile run included
	Steps  int           // timed steps a run, after its warm-up
	Rounds int           // runs of each candidate in a stage
	Pairs  int           // pairs of the final check, at most
	Cores  int
	// MaxWorkers is the largest worker count tried; MaxFetch the
	// largest fetch concurrency (our pipeline's, with data in a bucket).
	MaxWorkers, MaxFetch int
	// Fork says the platform's workers can fork (Linux, macOS).
	Fork bool
	// Warmup is the steps a run takes before its timed ones, where
	// fixed (our pipeline's); 0 is a script's: one, and the batches its
	// workers prefetch.
	Warmup int
}

// Validate refuses a config no search can run.
func (c Config) Validate() error {
	switch {
	case c.Budget <= 0:
		return fmt.Errorf("budget %v must be positive", c.Budget)
	case c.Steps < 1:
		return fmt.Errorf("steps %d must be positive", c.Steps)
	case c.Rounds < 1:
		return fmt.Errorf("rounds %d must be positive", c.Rounds)
	case c.Pairs < 1:
		return fmt.Errorf("pairs %d must be positive", c.Pairs)
	case c.Cores < 1:
		return fmt.Errorf("cores %d must be positive", c.Cores)
	case c.MaxWorkers < 1:
		return fmt.Errorf("max workers %d must be positive", c.MaxWorkers)
	case c.MaxFetch < 0:
		return fmt.Errorf("max fetch concurrency %d must not be negative", c.MaxFetch)
	}
	return nil
}

// The stages a run belongs to.
const (
	Search = "search"
	Check  = "check"
)

// Run is one short run of the script at one setting.
type Run struct {
	Setting     Setting
	Stage       string // Search or Check
	StepsPerSec float64
	Steps       int
	Wall        time.Duration // the run's whole time, the script's stop included
	// Failed says the run failed; Reason (not recorded in the records)
	// says why.
	Failed bool
	Reason string
}

// Result is a search: the profile, every run in order, the best setting
// the search found and why it stopped.
type Result struct {
	Script  string // the records' script= key; our pipeline's level= key
	Profile Profile
	Runs    []Run
	// Pick is the worker count the model predicted best (Searcher.Pick).
	Pick int
	// FetchPick is the fetch concurrency the search started from
	// (Searcher.FetchPick); 0 where it does not fetch.
	FetchPick int
	// Best is the best setting the search found (so far, where it was
	// interrupted): the one the final check runs against the script's.
	Best Setting
	// Stopped says why the search ended: "done", "budget" or
	// "interrupted".
	Stopped string
}

// Runner runs the script once with its training loader at s for the
// config's steps (ownloop.RunAt).
type Runner func(ctx context.Context, s Setting) (ownloop.Timed, error)

// ErrBudget is wrapped when the budget cannot hold one candidate and
// its paired check.
var ErrBudget = errors.New("budget too small")

// Searcher runs a search.
type Searcher struct {
	Config  Config
	Profile Profile
	Run     Runner
	// Now is the clock the budget is kept by (time.Now if nil); Start
	// is when the tune began, the profile run included.
	Now   func() time.Time
	Start time.Time
	// Each, if set, is called with each run as it ends.
	Each func(Run)
	// Limit is how long a run may take, from its expected time
	// (DefaultLimit if nil): a run still going then is stopped and
	// recorded as failed, so that a script that hangs at one setting
	// does not take the budget.
	Limit func(expected time.Duration) time.Duration

	res      Result
	rotation int
}

func (s *Searcher) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// MinBudget is the budget one candidate needs: the profile run so far,
// one run of the model's pick and one pair of the check.
func (s *Searcher) MinBudget() time.Duration {
	own, pick := s.Profile.Own.Normal(), s.first()[0]
	return s.now().Sub(s.Start) + 2*s.cost(pick) + s.cost(own)
}

// Tune runs the search and the final check. It returns what it
// measured, with ctx's error when it was interrupted (Stopped
// "interrupted"), and ErrBudget, measuring nothing, when the budget
// cannot hold one candidate and its check.
func (s *Searcher) Tune(ctx context.Context) (Result, error) {
	s.res = Result{Profile: s.Profile, Best: s.Profile.Own.Normal(), Pick: s.Pick()}
	if s.Profile.Own.Fetch > 0 {
		s.res.FetchPick = s.FetchPick()
	}
	if err := s.Config.Validate(); err != nil {
		return s.res, err
	}
	if min := s.MinBudget(); min > s.Config.Budget {
		return s.res, fmt.Errorf("%w: one candidate and its paired check need about %v (a run of this script about %v, and %v went to the profile run)",
			ErrBudget, min.Round(time.Second), s.cost(s.Profile.Own.Normal()).Round(100*time.Millisecond), s.now().Sub(s.Start).Round(100*time.Millisecond))
	}
	err := s.search(ctx)
	switch {
	case errors.Is(err, errStop):
		s.res.Stopped = "budget"
	case err != nil:
		s.res.Stopped = "interrupted"
		return s.res, err
	default:
		s.res.Stopped = "done"
	}
	if err := s.check(ctx); err != nil {
		s.res.Stopped = "interrupted"
		return s.res, err
	}
	return s.res, nil
}

// errStop ends the search: the budget holds no more rounds.
var errStop = errors.New("the budget holds no more rounds")

// WorkerLadder is the worker counts the search steps along, up to max,
// with own's.
func WorkerLadder(max, own int) []int {
	return ladderOf([]int{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}, max, own)
}

// FetchLadder is the fetch concurrencies the search steps along (our
// pipeline's, with data in a bucket), up to max, with own's.
func FetchLadder(max, own int) []int {
	return ladderOf([]int{1, 2, 4, 8, 16, 32, 64, 128, 256}, max, own)
}

// ladderOf is the values of steps up to max, with own's.
func ladderOf(steps []int, max, own int) []int {
	var ws []int
	for _, w := range steps {
		if w <= max {
			ws = append(ws, w)
		}
	}
	if !slices.Contains(ws, own) {
		ws = append(ws, own)
		slices.Sort(ws)
	}
	return ws
}

// axis is a setting the search steps along: its values in order, a
// setting's value, and a setting at another value.
type axis struct {
	values []int
	get    func(Setting) int
	set    func(Setting, int) Setting
}

// workers is the worker ladder: from 1 for our pipeline, whose loader
// needs a worker a stage.
func (s *Searcher) workers() axis {
	ws := WorkerLadder(s.Config.MaxWorkers, s.Profile.Own.Workers)
	if s.Profile.Ours() {
		ws = slices.DeleteFunc(ws, func(w int) bool { return w < 1 })
	}
	return axis{values: ws, get: func(x Setting) int { return x.Workers },
		set: func(x Setting, w int) Setting { x.Workers = w; return x.Normal() }}
}

// fetches is the fetch concurrency's ladder.
func (s *Searcher) fetches() axis {
	return axis{values: FetchLadder(max(s.Config.MaxFetch, 1), s.Profile.Own.Fetch), get: func(x Setting) int { return x.Fetch },
		set: func(x Setting, f int) Setting { x.Fetch = f; return x }}
}

// Pick is the worker count the model predicts best: the fewest of the
// ladder's (1 or more) whose predicted steps/s is within 3% of the
// largest; without a model, the cores.
func (s *Searcher) Pick() int {
	c := s.Config
	p := s.Profile
	if p.Model == nil && p.Predict == nil {
		return min(c.Cores, c.MaxWorkers)
	}
	ws := s.workers()
	best := 0.0
	for _, w := range ws.values {
		if w > 0 {
			best = max(best, p.predict(ws.set(p.Own, w), c.Cores))
		}
	}
	for _, w := range ws.values {
		if w > 0 && p.predict(ws.set(p.Own, w), c.Cores) >= 0.97*best {
			return w
		}
	}
	return 1
}

// FetchPick is the fetch concurrency the model predicts enough
// (Profile.FetchPick, within the ladder's), or the pipeline's own.
func (s *Searcher) FetchPick() int {
	if f := s.Profile.FetchPick; f > 0 {
		return min(f, max(s.Config.MaxFetch, 1))
	}
	return s.Profile.Own.Fetch
}

// withWorkers is the script's own setting at w workers.
func (s *Searcher) withWorkers(w int) Setting { return s.workers().set(s.Profile.Own, w) }

// first is the first stage's candidates in the order of a round: the
// model's pick, the ladder's counts below it and above it. The script's
// own runs only where it is one of them: the profile measured it and
// the final check runs it against the best.
func (s *Searcher) first() []Setting { return firstOf(s.workers(), s.Profile.Own.Normal(), s.Pick()) }

// firstOf is an axis's first stage from base: base at pick, then at the
// values below and above it.
func firstOf(ax axis, base Setting, pick int) []Setting {
	vs := ax.values
	i := slices.Index(vs, pick)
	if i < 0 {
		vs = append(slices.Clone(vs), pick)
		slices.Sort(vs)
		i = slices.Index(vs, pick)
	}
	out := []Setting{ax.set(base, pick)}
	if i > 0 {
		out = append(out, ax.set(base, vs[i-1]))
	}
	if i+1 < len(vs) {
		out = append(out, ax.set(base, vs[i+1]))
	}
	return out
}

// search runs the stages: the workers, the fetch concurrency (our
// pipeline's, reading from a bucket), the other settings.
func (s *Searcher) search(ctx context.Context) error {
	best, ok, err := s.walk(ctx, s.workers(), s.first())
	if !ok || err != nil {
		return err
	}
	if s.Profile.Own.Fetch > 0 {
		ax := s.fetches()
		var b Setting
		b, ok, err = s.walk(ctx, ax, firstOf(ax, best, s.FetchPick()))
		if err != nil {
			return err
		}
		if ok {
			best = b
		}
	}
	if best.Workers == 0 {
		return nil
	}
	// The loader's other settings at the best worker count.
	variants := s.variants(best)
	from := len(s.res.Runs)
	_, _, err = s.stage(ctx, append([]Setting{best}, variants...))
	inc := s.median(from, best)
	var better []Setting
	for _, v := range variants {
		if s.median(from, v) > inc {
			better = append(better, v)
		}
	}
	if len(better) > 0 {
		s.res.Best = s.bestSince(from, better)
	}
	if len(better) < 2 || err != nil {
		return err
	}
	combined := best
	for _, v := range better {
		combined = merge(combined, best, v)
	}
	b, ok, err := s.stage(ctx, []Setting{s.res.Best, combined})
	if ok {
		s.res.Best = b
	}
	return err
}

// walk runs the first stage of an axis, cands, then, while the best is
// at an end of the values tried, the next value beyond it against it.
// It returns the best (also the result's), and ok where any ran.
func (s *Searcher) walk(ctx context.Context, ax axis, cands []Setting) (Setting, bool, error) {
	best, ok, err := s.stage(ctx, cands)
	lo, hi := ax.get(cands[0]), ax.get(cands[0])
	for _, c := range cands {
		lo, hi = min(lo, ax.get(c)), max(hi, ax.get(c))
	}
	// Every candidate failed (too many workers for the memory, too many
	// requests for the store): the search goes on down the axis from the
	// lowest tried, a value a stage, until one runs.
	for !ok && err == nil {
		i := slices.IndexFunc(ax.values, func(v int) bool { return v >= lo })
		if i <= 0 {
			return best, false, nil
		}
		lo = ax.values[i-1]
		best, ok, err = s.stage(ctx, []Setting{ax.set(cands[0], lo)})
	}
	if ok {
		s.res.Best = best
	}
	if !ok || err != nil {
		return best, ok, err
	}
	for {
		i := slices.Index(ax.values, ax.get(best))
		next := -1
		switch {
		case i < 0:
		case ax.get(best) == hi && i+1 < len(ax.values):
			next = ax.values[i+1]
			hi = next
		case ax.get(best) == lo && i > 0:
			next = ax.values[i-1]
			lo = next
		}
		if next < 0 {
			return best, true, nil
		}
		b, ok, err := s.stage(ctx, []Setting{best, ax.set(best, next)})
		if ok {
			s.res.Best = b
		}
		if err != nil {
			return best, true, err
		}
		if b == best {
			return best, true, nil
		}
		best = b
	}
}

// stage runs the rounds of cands and returns the best of them over its
// runs; ok says it ran any (then the best is set even with errStop).
func (s *Searcher) stage(ctx context.Context, cands []Setting) (best Setting, ok bool, err error) {
	from := len(s.res.Runs)
	err = s.rounds(ctx, cands)
	if !slices.ContainsFunc(s.res.Runs[from:], func(r Run) bool { return !r.Failed }) {
		return Setting{}, false, err
	}
	return s.bestSince(from, cands), true, err
}

// variants are best's neighbours in the loader's other settings: twice
// the prefetch, and for a script's loader persistent workers, pinned
// memory (with CUDA) and fork (where it can).
func (s *Searcher) variants(best Setting) []Setting {
	if s.Profile.Ours() {
		v := best
		v.Prefetch = 2 * best.Prefetch
		return []Setting{v}
	}
	var out []Setting
	if !best.Persistent {
		v := best
		v.Persistent = true
		out = append(out, v)
	}
	v := best
	v.Prefetch = 2 * best.Prefetch
	out = append(out, v)
	if s.Profile.CUDA && !best.Pin {
		v := best
		v.Pin = true
		out = append(out, v)
	}
	if s.Config.Fork && best.Start != "" && best.Start != "fork" {
		v := best
		v.Start = "fork"
		out = append(out, v)
	}
	return out
}

// merge is x with the one field v changes from base.
func merge(x, base, v Setting) Setting {
	if v.Persistent != base.Persistent {
		x.Persistent = v.Persistent
	}
	if v.Prefetch != base.Prefetch {
		x.Prefetch = v.Prefetch
	}
	if v.Pin != base.Pin {
		x.Pin = v.Pin
	}
	if v.Start != base.Start {
		x.Start = v.Start
	}
	if v.Fetch != base.Fetch {
		x.Fetch = v.Fetch
	}
	return x
}

// rounds runs cands Rounds times, each round every candidate once, the
// order rotated from round to round; a candidate that failed is left
// out. It returns errStop where the budget holds no more rounds (after
// one at least, if the budget held it).
func (s *Searcher) rounds(ctx context.Context, cands []Setting) error {
	for range s.Config.Rounds {
		live := slices.DeleteFunc(slices.Clone(cands), s.failed)
		if len(live) == 0 {
			return nil
		}
		var cost time.Duration
		for _, c := range live {
			cost += s.cost(c)
		}
		if !s.fits(cost + s.reserve(min(s.Config.Pairs, 3))) {
			if slices.ContainsFunc(s.res.Runs, func(r Run) bool { return r.Stage == Search }) {
				return errStop
			}
			// The first round does not fit: as many of its candidates
			// as fit beside one pair of the check, the pick first
			// (MinBudget holds it).
			n := 0
			for cost = 0; n < len(live) && s.fits(cost+s.cost(live[n])+s.reserve(1)); n++ {
				cost += s.cost(live[n])
			}
			for _, c := range live[:max(n, 1)] {
				if _, err := s.one(ctx, c, Search); err != nil {
					return err
				}
			}
			return errStop
		}
		k := s.rotation % len(live)
		s.rotation++
		for _, c := range append(live[k:], live[:k]...) {
			if _, err := s.one(ctx, c, Search); err != nil {
				return err
			}
		}
	}
	return nil
}

// one runs the script at c once and records the run; an error is the
// context's, a failed run is recorded.
func (s *Searcher) one(ctx context.Context, c Setting, stage string) (Run, error) {
	start := s.now()
	limit := DefaultLimit
	if s.Limit != nil {
		limit = s.Limit
	}
	d := limit(s.cost(c))
	rctx, cancel := context.WithTimeout(ctx, d)
	t, err := s.Run(rctx, c)
	cancel()
	if ctx.Err() != nil {
		return Run{}, ctx.Err()
	}
	if err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("stopped at its time limit, %v (its expected time %v): %w", d.Round(100*time.Millisecond), s.cost(c).Round(100*time.Millisecond), err)
	}
	// The run's whole time, as the budget counts it: its start, its
	// steps and the stopping of the script and its workers.
	r := Run{Setting: c, Stage: stage, Wall: s.now().Sub(start)}
	if err != nil {
		r.Failed, r.Reason = true, err.Error()
	} else {
		r.StepsPerSec, r.Steps = t.StepsPerSec(), len(t.Steps)
	}
	s.res.Runs = append(s.res.Runs, r)
	if s.Each != nil {
		s.Each(r)
	}
	return r, nil
}

// DefaultLimit is how long a run may take: three times its expected
// time and 10 s.
func DefaultLimit(expected time.Duration) time.Duration { return 3*expected + 10*time.Second }

func (s *Searcher) failed(c Setting) bool {
	return slices.ContainsFunc(s.res.Runs, func(r Run) bool { return r.Failed && r.Setting == c })
}

// fits says d more stays within the budget.
func (s *Searcher) fits(d time.Duration) bool {
	return s.now().Sub(s.Start)+d <= s.Config.Budget
}

// reserve is the cost of pairs pairs of the final check: the script's
// own setting and the best so far.
func (s *Searcher) reserve(pairs int) time.Duration {
	own := s.Profile.Own.Normal()
	best := s.res.Best
	if best == own {
		best = s.first()[0]
	}
	return time.Duration(pairs) * (s.cost(own) + s.cost(best))
}

// cost is a run's expected wall time at c: the mean of its runs', or
// the profile's start-up and the warm-up and steps at the model's rate.
func (s *Searcher) cost(c Setting) time.Duration {
	var sum time.Duration
	n := 0
	for _, r := range s.res.Runs {
		if r.Setting == c {
			sum += r.Wall
			n++
		}
	}
	if n > 0 {
		return sum / time.Duration(n)
	}
	rate := s.Profile.Before
	if r := s.Profile.predict(c, s.Config.Cores); r > 0 {
		rate = r
	}
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		rate = 1
	}
	steps := 1 + s.Config.Steps + c.Workers*c.Normal().Prefetch
	if s.Config.Warmup > 0 {
		steps = s.Config.Warmup + s.Config.Steps
	}
	return s.Profile.Startup + time.Duration(float64(steps)/rate*float64(time.Second))
}

// median is c's median steps/s over its search runs from index from.
func (s *Searcher) median(from int, c Setting) float64 {
	var xs []float64
	for _, r := range s.res.Runs[from:] {
		if r.Setting == c && !r.Failed && r.Stage == Search {
			xs = append(xs, r.StepsPerSec)
		}
	}
	if len(xs) == 0 {
		return math.Inf(-1)
	}
	return summary.Median(xs)
}

// bestSince is the candidate of cands with the largest median over the
// runs from index from (the first of equals).
func (s *Searcher) bestSince(from int, cands []Setting) Setting {
	best, bv := cands[0], math.Inf(-1)
	for _, c := range cands {
		if v := s.median(from, c); v > bv {
			best, bv = c, v
		}
	}
	return best
}

// check runs the final paired check: the script's own setting and the
// best, alternated, as many pairs (up to Pairs, one at least) as the
// budget holds.
func (s *Searcher) check(ctx context.Context) error {
	own, best := s.Profile.Own.Normal(), s.res.Best
	if best == own {
		return nil
	}
	pair := s.cost(own) + s.cost(best)
	n := 1
	for n < s.Config.Pairs && s.fits(time.Duration(n+1)*pair) {
		n++
	}
	for i := range n {
		order := []Setting{own, best}
		if i%2 == 1 {
			order = []Setting{best, own}
		}
		for _, c := range order {
			r, err := s.one(ctx, c, Check)
			if err != nil {
				return err
			}
			if r.Failed && c == own {
				return fmt.Errorf("the final check: the script's own settings failed: %s", r.Reason)
			}
			if r.Failed {
				return nil // the best failed in the check: not recommended
			}
		}
	}
	return nil
}
