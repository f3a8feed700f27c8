package tune_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/tune"
)

// machine is a fake script on a fake clock: each setting's steps/s is
// rate's, a run takes startup and its steps at that rate, and the clock
// moves by the run's wall time.
type machine struct {
	t       time.Time
	startup time.Duration
	steps   int
	rate    func(s tune.Setting, run int) (float64, error)
	ran     []tune.Setting
}

func (m *machine) now() time.Time { return m.t }

func (m *machine) run(ctx context.Context, s tune.Setting) (ownloop.Timed, error) {
	m.ran = append(m.ran, s)
	r, err := m.rate(s, len(m.ran)-1)
	wall := m.startup
	if err == nil {
		wall += time.Duration(float64(m.steps+1+s.Workers*s.Normal().Prefetch) / r * float64(time.Second))
	}
	m.t = m.t.Add(wall)
	if err != nil {
		return ownloop.Timed{Wall: wall}, err
	}
	step := time.Duration(float64(time.Second) / r)
	t := ownloop.Timed{Wall: wall, Workers: s.Workers}
	for range m.steps {
		t.Steps = append(t.Steps, step)
	}
	return t, nil
}

// model is the what-if model of a loader whose worker makes a batch in
// perBatch (cpu of it on a core) for a step of step, on 2 cores.
func model(step, perBatch, cpu time.Duration) *ownloop.WhatIf {
	return &ownloop.WhatIf{Step: step, PerBatch: perBatch, FreePerBatch: perBatch, CPUPerBatch: cpu, Cores: 2, Stage: "dataset __getitem__", StageTime: perBatch}
}

// truthOf is the model's own prediction as the machine's truth, the
// loader's other settings changing nothing.
func truthOf(m *ownloop.WhatIf) func(tune.Setting, int) (float64, error) {
	return func(s tune.Setting, _ int) (float64, error) {
		if s.Workers == 0 {
			return 1 / (m.PerBatch + m.Step).Seconds(), nil
		}
		return m.StepsPerSec(s.Workers, 2), nil
	}
}

func searcher(m *machine, p tune.Profile, budget time.Duration) *tune.Searcher {
	m.t = time.Unix(1e9, 0)
	if m.startup == 0 {
		m.startup = 2 * time.Second
	}
	if m.steps == 0 {
		m.steps = 20
	}
	p.Startup = m.startup
	return &tune.Searcher{Config: tune.Config{Budget: budget, Steps: m.steps, Rounds: 3, Pairs: 3, Cores: 2, MaxWorkers: 8, Fork: true},
		Profile: p, Run: m.run, Now: m.now, Start: m.t}
}

func workers(ss []tune.Setting) []int {
	var out []int
	for _, s := range ss {
		out = append(out, s.Workers)
	}
	return out
}

// own0 is a profile of a script with num_workers=0 whose loader makes a
// batch in 200 ms of sleep (40 ms on the CPU) for a 50 ms step: the
// model's pick is 4 workers (4/200 ms = 1/50 ms).
func own0() tune.Profile {
	m := model(50*time.Millisecond, 200*time.Millisecond, 40*time.Millisecond)
	return tune.Profile{Before: 4, Cached: 20, Model: m}
}

// TestSearchOrder checks the search order given the stage times: the
// model's pick first, then its neighbours on the ladder, each round
// rotated; the loader's variants at the best; then the paired check of
// the script's own and the best.
func TestSearchOrder(t *testing.T) {
	p := own0()
	m := &machine{rate: truthOf(p.Model)}
	s := searcher(m, p, time.Hour)
	if got := s.Pick(); got != 4 {
		t.Fatalf("pick %d, want 4", got)
	}
	r, err := s.Tune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []int{4, 3, 6, 3, 6, 4, 6, 4, 3, // workers: the pick, its neighbours; rotated
		4, 4, 4, 4, 4, 4, 4, 4, 4, // best, persistent, prefetch 4, rotated (no variant beats it)
		0, 4, 4, 0, 0, 4} // the check against the script's own, paired and alternated
	if got := workers(m.ran); !slices.Equal(got, want) {
		t.Errorf("runs at workers %v\nwant %v", got, want)
	}
	wantVariants := []tune.Setting{{Workers: 4, Prefetch: 2}, {Workers: 4, Prefetch: 2, Persistent: true}, {Workers: 4, Prefetch: 4}}
	if got := m.ran[9:12]; !slices.Equal(got, wantVariants) {
		t.Errorf("the loader's stage ran %+v, want %+v", got, wantVariants)
	}
	a := r.Answer()
	if !a.Recommend || a.Best != (tune.Setting{Workers: 4, Prefetch: 2}) {
		t.Fatalf("answer %+v, want 4 workers recommended", a)
	}
	var out bytes.Buffer
	r.WriteText(&out)
	for _, want := range []string{"set: DataLoader(..., num_workers=4, prefetch_factor=2)", "before (the script's own): 4.00 (n=3: too few runs for an interval) steps/s", "after:                     20.00 (n=3: too few runs for an interval) steps/s, 5.00× before", "recovers 100% of the headspace", "the what-if model's pick: 4 workers"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSearchFollowsTheMeasurement checks the search goes on along the
// worker ladder where the runs beat the model's pick at its end, and
// keeps a loader variant that measures faster.
func TestSearchFollowsTheMeasurement(t *testing.T) {
	p := own0()
	m := &machine{rate: func(s tune.Setting, _ int) (float64, error) {
		r := float64(s.Workers) // the model underestimates: 8 workers are best
		if s.Persistent {
			r *= 1.2
		}
		return max(r, 1), nil
	}}
	s := searcher(m, p, time.Hour)
	r, err := s.Tune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (tune.Setting{Workers: 8, Prefetch: 2, Persistent: true}); r.Best != want {
		t.Errorf("best %+v, want %+v", r.Best, want)
	}
	if !slices.Contains(workers(m.ran), 8) {
		t.Errorf("never ran 8 workers: %v", workers(m.ran))
	}
	if !r.Answer().Recommend {
		t.Errorf("not recommended: %+v", r.Answer())
	}
}

// TestNeverSlower checks a best that measures slower than the script's
// own in the final check is not recommended.
func TestNeverSlower(t *testing.T) {
	p := own0()
	var checkFrom int
	m := &machine{}
	m.rate = func(s tune.Setting, run int) (float64, error) {
		if checkFrom > 0 && run >= checkFrom && s.Workers > 0 {
			return 3, nil // the load changed: the best is slower than the script's 4 steps/s now
		}
		return truthOf(p.Model)(s, run)
	}
	s := searcher(m, p, time.Hour)
	s.Each = func(r tune.Run) {
		if checkFrom == 0 && len(m.ran) == 18 { // the search's 18 runs (TestSearchOrder)
			checkFrom = 18
		}
	}
	r, err := s.Tune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a := r.Answer()
	if a.Recommend {
		t.Fatalf("recommended %+v, measured %v against the script's %v", a.Best, a.After, a.Before)
	}
	if !strings.Contains(a.Why, "not faster") {
		t.Errorf("why %q", a.Why)
	}
	var out bytes.Buffer
	r.WriteText(&out)
	if !strings.Contains(out.String(), "keep the script's own settings (DataLoader(..., num_workers=0))") || strings.Contains(out.String(), "set: ") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestBudget checks the budget: too small for one candidate and its
// check is refused before any run; a small one stops the search, keeps
// the final check and ends within it.
func TestBudget(t *testing.T) {
	p := own0()
	m := &machine{rate: truthOf(p.Model)}
	s := searcher(m, p, 5*time.Second)
	if _, err := s.Tune(context.Background()); !errors.Is(err, tune.ErrBudget) || len(m.ran) != 0 {
		t.Errorf("budget 5s: %v after %d runs, want ErrBudget and none", err, len(m.ran))
	}
	for _, budget := range []time.Duration{15 * time.Second, 20 * time.Second, 30 * time.Second, 45 * time.Second, 90 * time.Second} {
		m := &machine{rate: truthOf(p.Model)}
		s := searcher(m, p, budget)
		start := m.t
		r, err := s.Tune(context.Background())
		if err != nil {
			t.Errorf("budget %v: %v", budget, err)
			continue
		}
		if used := m.t.Sub(start); used > budget {
			t.Errorf("budget %v: used %v", budget, used)
		}
		if r.Stopped != "budget" {
			t.Errorf("budget %v: stopped %q, want budget", budget, r.Stopped)
		}
		if a := r.Answer(); a.Before.N == 0 || a.After.N == 0 {
			t.Errorf("budget %v: no final check: %+v", budget, a)
		}
	}
}

// TestFailedCandidate checks a setting whose run fails is recorded as
// failed with its reason and left out, and the search goes on.
func TestFailedCandidate(t *testing.T) {
	p := own0()
	m := &machine{rate: func(s tune.Setting, run int) (float64, error) {
		if s.Workers >= 6 {
			return 0, fmt.Errorf("DataLoader worker (pid 4242) is killed by signal: Killed")
		}
		return truthOf(p.Model)(s, run)
	}}
	s := searcher(m, p, time.Hour)
	r, err := s.Tune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(fmt.Sprint(workers(m.ran)), "6"); n != 1 {
		t.Errorf("6 workers ran %d times, want once: %v", n, workers(m.ran))
	}
	var failed bool
	for _, c := range r.Candidates() {
		if c.Setting.Workers == 6 {
			failed = strings.Contains(c.Failed, "killed by signal")
		}
	}
	if !failed {
		t.Errorf("6 workers not recorded as failed: %+v", r.Candidates())
	}
	if a := r.Answer(); !a.Recommend || a.Best.Workers != 4 {
		t.Errorf("answer %+v, want 4 workers", a)
	}
	var out bytes.Buffer
	r.WriteCandidates(&out)
	if !strings.Contains(out.String(), "failed: DataLoader worker (pid 4242) is killed") {
		t.Errorf("candidates:\n%s", out.String())
	}
}

// TestInterrupted checks an interrupted search returns the context's
// error with the best so far.
func TestInterrupted(t *testing.T) {
	p := own0()
	ctx, cancel := context.WithCancel(context.Background())
	m := &machine{}
	m.rate = func(s tune.Setting, run int) (float64, error) {
		if run == 13 {
			cancel()
		}
		return truthOf(p.Model)(s, run)
	}
	s := searcher(m, p, time.Hour)
	r, err := s.Tune(ctx)
	if !errors.Is(err, context.Canceled) || r.Stopped != "interrupted" {
		t.Fatalf("%v, stopped %q", err, r.Stopped)
	}
	if r.Best.Workers != 4 || len(r.Runs) != 13 {
		t.Errorf("best %+v after %d runs, want 4 workers after 13", r.Best, len(r.Runs))
	}
}

// TestNothingHelps checks what a tune says where no setting helps: a
// model-bound loop, and a loader whose cores are spent.
func TestNothingHelps(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    tune.Profile
		want []string
	}{
		{"model-bound", tune.Profile{Before: 9.9, Cached: 10, Model: model(100*time.Millisecond, 20*time.Millisecond, 10*time.Millisecond)},
			[]string{"the loop is model-bound", "headspace 1.0%", "a faster model step would"}},
		{"cores spent", tune.Profile{Own: tune.Setting{Workers: 2}, Before: 4, Cached: 20,
			Model: &ownloop.WhatIf{Step: 50 * time.Millisecond, PerBatch: 500 * time.Millisecond, CPUPerBatch: 400 * time.Millisecond, Workers: 2, Cores: 2, Stage: "dataset .transform", StageTime: 450 * time.Millisecond}},
			[]string{"slowest stage is dataset .transform, 450.0 ms a batch", "the cores are spent: the step and its batch need 8.0 cores", "dataset .transform must take 50.0 ms a batch instead of 450.0 ms (9.0× faster)"}},
	} {
		m := &machine{rate: func(s tune.Setting, run int) (float64, error) { return tc.p.Before, nil }}
		s := searcher(m, tc.p, time.Hour)
		r, err := s.Tune(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if r.Answer().Recommend {
			t.Errorf("%s: recommended %+v", tc.name, r.Best)
		}
		var out bytes.Buffer
		r.WriteText(&out)
		for _, w := range append(tc.want, "keep the script's own settings") {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out.String())
			}
		}
	}
}

// TestPasteLine checks the line a tune prints to paste: torch's
// defaults spelled out where they apply, nothing that a loader without
// workers would refuse.
func TestPasteLine(t *testing.T) {
	for _, tc := range []struct {
		s    tune.Setting
		want string
	}{
		{tune.Setting{Workers: 6, Prefetch: 4, Persistent: true}, "num_workers=6, prefetch_factor=4, persistent_workers=True"},
		{tune.Setting{Workers: 2}, "num_workers=2, prefetch_factor=2"},
		{tune.Setting{Workers: 0, Prefetch: 4, Persistent: true, Start: "spawn"}, "num_workers=0"},
		{tune.Setting{Workers: 0, Pin: true}, "num_workers=0, pin_memory=True"},
		{tune.Setting{Workers: 2, Pin: true, Start: "forkserver"}, `num_workers=2, prefetch_factor=2, pin_memory=True, multiprocessing_context="forkserver"`},
	} {
		if got := tc.s.Args(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}

// TestWorkerLadder checks the counts the search steps along: the
// script's own among them, none above the largest.
func TestWorkerLadder(t *testing.T) {
	for _, tc := range []struct {
		max, own int
		want     []int
	}{
		{8, 0, []int{0, 1, 2, 3, 4, 6, 8}},
		{8, 5, []int{0, 1, 2, 3, 4, 5, 6, 8}},
		{4, 10, []int{0, 1, 2, 3, 4, 10}},
		{32, 2, []int{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32}},
	} {
		if got := tune.WorkerLadder(tc.max, tc.own); !slices.Equal(got, tc.want) {
			t.Errorf("WorkerLadder(%d, %d) = %v, want %v", tc.max, tc.own, got, tc.want)
		}
	}
}

// TestPickWithoutAModel checks the first stage without a model (the
// loader's workers do not fork): the cores first, then its neighbours
// and the script's own.
func TestPickWithoutAModel(t *testing.T) {
	p := tune.Profile{Own: tune.Setting{Workers: 1, Start: "spawn"}, Before: 4, Cached: 20}
	m := &machine{rate: func(s tune.Setting, _ int) (float64, error) { return float64(max(1, s.Workers)), nil }}
	s := searcher(m, p, time.Hour)
	if got := s.Pick(); got != 2 {
		t.Fatalf("pick %d, want the 2 cores", got)
	}
	r, err := s.Tune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := workers(m.ran[:4]), []int{2, 1, 3}; !slices.Equal(got[:3], want) {
		t.Errorf("first round %v, want %v then the script's own", got, want)
	}
	// The script's spawn: fork is tried at the best.
	if !slices.ContainsFunc(m.ran, func(x tune.Setting) bool { return x.Start == "fork" }) {
		t.Errorf("fork never tried against the script's spawn: %+v", m.ran)
	}
	if !r.Answer().Recommend {
		t.Errorf("answer %+v", r.Answer())
	}
}

// TestHangingCandidate checks a run that does not end within its limit
// is stopped and recorded as failed, and the search goes on.
func TestHangingCandidate(t *testing.T) {
	p := own0()
	m := &machine{rate: truthOf(p.Model)}
	s := searcher(m, p, time.Hour)
	s.Limit = func(time.Duration) time.Duration { return 20 * time.Millisecond }
	run := s.Run
	s.Run = func(ctx context.Context, c tune.Setting) (ownloop.Timed, error) {
		if c.Workers == 3 {
			<-ctx.Done() // a script that hangs at 3 workers
			return ownloop.Timed{}, ctx.Err()
		}
		return run(ctx, c)
	}
	r, err := s.Tune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var reason string
	for _, c := range r.Candidates() {
		if c.Setting.Workers == 3 {
			reason = c.Failed
		}
	}
	if !strings.Contains(reason, "stopped at its time limit, 0s (its expected time 3.8s)") {
		t.Errorf("3 workers: %q", reason)
	}
	if a := r.Answer(); !a.Recommend || a.Best.Workers != 4 {
		t.Errorf("answer %+v", a)
	}
}

// TestIterableDatasetCaution checks a recommendation of more workers for
// an IterableDataset says each worker iterates all of it unless it
// shards, and one for a map-style dataset does not.
func TestIterableDatasetCaution(t *testing.T) {
	for _, iterable := range []bool{false, true} {
		p := own0()
		p.Iterable = iterable
		m := &machine{rate: truthOf(p.Model)}
		r, err := searcher(m, p, time.Hour).Tune(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		r.WriteText(&out)
		if got := strings.Contains(out.String(), "the training dataset is an IterableDataset: each of 4 workers iterates all of it unless"); got != iterable {
			t.Errorf("iterable %v: caution %v:\n%s", iterable, got, out.String())
		}
	}
}

// TestSearchOurs runs the search over our pipeline's settings on a fake
// machine reading from a bucket: steps/s is the least of the workers'
// rate (12 steps/s each), the requests in flight's (3 each) and the
// step's (60), so 5 workers and 20 requests in flight are needed. The
// search starts from the model's picks, walks each axis while its best
// is at an end, tries twice the prefetch, and answers with the flags;
// from a setting that is already the best it keeps your own, naming
// what binds.
func TestSearchOurs(t *testing.T) {
	rate := func(s tune.Setting) float64 { return min(12*float64(s.Workers), 3*float64(s.Fetch), 60) }
	for _, tc := range []struct {
		name      string
		own       tune.Setting
		fetchPick int
		recommend bool
		want      tune.Setting // the best the search finds
		answer    string
	}{
		{"from one worker and 2 requests", tune.Setting{Workers: 1, Prefetch: 1, Fetch: 2}, 16, true, tune.Setting{Workers: 6, Prefetch: 1, Fetch: 32},
			"set: --workers 6 --prefetch 1 --fetch-concurrency 32\n  final check, paired runs alternated:\n    before (your own):         6.00 (n=3: too few runs for an interval) steps/s"},
		{"the model's fetch pick missing", tune.Setting{Workers: 1, Prefetch: 2, Fetch: 4}, 0, true, tune.Setting{Workers: 6, Prefetch: 2, Fetch: 32}, "set: --workers 6 --prefetch 2 --fetch-concurrency 32\n"},
		{"already the best", tune.Setting{Workers: 6, Prefetch: 1, Fetch: 32}, 32, false, tune.Setting{Workers: 6, Prefetch: 1, Fetch: 32},
			"keep your own (--workers 6 --prefetch 1 --fetch-concurrency 32): no setting the search ran beat your own\n  the pipeline holds the loop back (headspace 40.0%); in the way: the cores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &machine{rate: func(s tune.Setting, _ int) (float64, error) { return rate(s), nil }}
			p := tune.Profile{Own: tc.own, Pipeline: "ladder", Before: rate(tc.own), Cached: 100, FetchPick: tc.fetchPick, Limit: "cores",
				Predict: func(s tune.Setting, cores int) float64 { return min(12*float64(s.Workers), 60) }}
			s := searcher(m, p, 10*time.Minute)
			s.Config.MaxFetch, s.Config.Pairs = 64, 3
			r, err := s.Tune(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r.Best != tc.want || r.Pick != 6 {
				t.Errorf("best %+v, pick %d; want %+v and 6 (ran %v)", r.Best, r.Pick, tc.want, m.ran)
			}
			if slices.ContainsFunc(m.ran, func(s tune.Setting) bool { return s.Workers < 1 || s.Persistent || s.Pin || s.Start != "" }) {
				t.Errorf("ran a setting our pipeline has no flag for: %v", m.ran)
			}
			if a := r.Answer(); a.Recommend != tc.recommend {
				t.Errorf("recommend %v, want %v: %+v", a.Recommend, tc.recommend, a)
			}
			var b bytes.Buffer
			r.WriteText(&b)
			if !strings.Contains(b.String(), tc.answer) {
				t.Errorf("answer lacks %q:\n%s", tc.answer, b.String())
			}
		})
	}
}

// TestFlags checks the answer for our pipeline: the flags to pass.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		s    tune.Setting
		want string
	}{
		{tune.Setting{Workers: 6, Prefetch: 4}, "--workers 6 --prefetch 4"},
		{tune.Setting{Workers: 2, Prefetch: 1, Fetch: 16}, "--workers 2 --prefetch 1 --fetch-concurrency 16"},
	} {
		if got := (tune.Profile{Pipeline: "remote"}).Args(tc.s); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}

// TestFetchLadder checks the fetch concurrencies the search steps along.
func TestFetchLadder(t *testing.T) {
	if got, want := tune.FetchLadder(64, 12), []int{1, 2, 4, 8, 12, 16, 32, 64}; !slices.Equal(got, want) {
		t.Errorf("FetchLadder(64, 12) = %v, want %v", got, want)
	}
}

// TestEveryFirstCandidateFails checks the search goes on where every
// candidate of its first stage fails (the model picks 8 workers, and 4
// or more run out of memory): down the worker ladder from the lowest
// tried, one count a stage, until one runs, then on as usual; a fetch
// concurrency that fails likewise.
func TestEveryFirstCandidateFails(t *testing.T) {
	oom := fmt.Errorf("DataLoader worker (pid 4242) is killed by signal: Killed")
	for _, tc := range []struct {
		name string
		p    tune.Profile
		fail func(tune.Setting) bool
		want tune.Setting
	}{
		{"a script's workers", tune.Profile{Own: tune.Setting{}, Before: 4, Cached: 100, Model: model(10*time.Millisecond, 60*time.Millisecond, time.Millisecond)},
			func(s tune.Setting) bool { return s.Workers >= 4 }, tune.Setting{Workers: 3, Prefetch: 4}},
		{"our fetch concurrency", tune.Profile{Own: tune.Setting{Workers: 2, Prefetch: 2, Fetch: 1}, Pipeline: "remote", Before: 4, Cached: 100, FetchPick: 64,
			Predict: func(s tune.Setting, _ int) float64 { return min(50*float64(s.Workers), 100) }},
			func(s tune.Setting) bool { return s.Fetch >= 32 }, tune.Setting{Workers: 2, Prefetch: 4, Fetch: 16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &machine{rate: func(s tune.Setting, _ int) (float64, error) {
				if tc.fail(s) {
					return 0, oom
				}
				return min(20*float64(max(s.Workers, 1)), 3*float64(max(s.Fetch, 1)), 100) + float64(s.Prefetch), nil
			}}
			s := searcher(m, tc.p, time.Hour)
			s.Config.MaxFetch = 64
			r, err := s.Tune(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r.Best != tc.want || !r.Answer().Recommend {
				t.Errorf("best %+v, recommend %v; want %+v (ran %v)", r.Best, r.Answer().Recommend, tc.want, m.ran)
			}
		})
	}
}

// TestRanksAnswer checks the answer of a tune of a node's ranks: the
// profile is the slowest rank's, the model's pick is a rank's on a
// rank's cores, and the line to paste says it goes in every rank's
// DataLoader.
func TestRanksAnswer(t *testing.T) {
	p := own0()
	p.Ranks, p.Model.Cores = 2, 1
	m := &machine{rate: truthOf(p.Model)}
	s := searcher(m, p, time.Hour)
	s.Config.Cores = tune.CoresPerRank(2, p.Ranks)
	r, err := s.Tune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r.WriteText(&out)
	for _, want := range []string{
		"profile (the script as it is, 2 ranks, each rank's loader num_workers=0; the slowest rank's, which the others wait for): 4.00 steps/s",
		"each candidate runs in every rank's training loader; its steps/s are the node's: the slowest rank's",
		"the what-if model's pick: 4 workers a rank (predicted 20.00 steps/s on a rank's 1 cores: the machine's shared by 2 ranks)",
		"set, in every rank (the DataLoader each of the 2 ranks makes): DataLoader(..., num_workers=4",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the answer lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCoresPerRank checks a rank's share of the cores: the machine's
// for one process, at least one.
func TestCoresPerRank(t *testing.T) {
	for _, tc := range []struct{ cores, ranks, want int }{{2, 0, 2}, {2, 1, 2}, {2, 2, 1}, {16, 3, 5}, {2, 8, 1}} {
		if got := tune.CoresPerRank(tc.cores, tc.ranks); got != tc.want {
			t.Errorf("%d cores, %d ranks: %d, want %d", tc.cores, tc.ranks, got, tc.want)
		}
	}
}
