package workloads

import (
	"context"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/harness/whatif"
)

// TestWhatIfQuick runs the experiment at its quick size with the
// ladder: a profile (with its 1-core calibration), the ladder and a check
// of every point, each run passed to MeasureEach's callback as made, the
// profile and the ladder's medians once made, and Run's records those of
// what Measure returns.
func TestWhatIfQuick(t *testing.T) {
	w := QuickWhatIf()
	w.Cores, w.WithLadder = 2, true
	dev := DocumentDevice()
	dev.Step = w.Step
	env := Env{Device: Emulated(dev)}
	procs := runtime.GOMAXPROCS(0)
	type passed struct {
		records         int
		profile, ladder bool
	}
	var each []passed
	o, err := w.MeasureEach(context.Background(), env, func(o WhatIfOutcome) error {
		each = append(each, passed{len(WhatIfCodec.Encode(o)), o.Profile != nil, o.Ladder != nil})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOMAXPROCS(0) != procs {
		t.Errorf("GOMAXPROCS left at %d, was %d", runtime.GOMAXPROCS(0), procs)
	}
	profiled, laddered := w.ProfileRuns(), w.ProfileRuns()+len(level.Document)
	var want []passed
	for n := 1; n <= w.Runs(); n++ {
		want = append(want, passed{n, n > profiled, n > laddered})
		if n == profiled {
			want = append(want, passed{n, true, false})
		}
		if n == laddered {
			want = append(want, passed{n, true, true})
		}
	}
	if !reflect.DeepEqual(each, want) {
		t.Errorf("passed (records, profile, ladder)\n%v\nwant\n%v", each, want)
	}
	p := o.Profile
	if p == nil || p.Cores != 2 || p.Workers != w.Pipeline.Workers || p.Batch != w.Pipeline.Batch || p.Step != w.Step || len(p.Stages) != 4 {
		t.Fatalf("profile %+v", p)
	}
	if runtime.GOOS == "linux" && p.CPUSource != whatif.ThreadCPU {
		t.Errorf("CPU from %s on Linux", p.CPUSource)
	}
	if len(o.LadderRuns) != len(level.Document) || len(o.Ladder) != len(level.Document) || len(o.Checks) != 2 || o.Steps != w.Train.Steps {
		t.Fatalf("%d ladder runs, medians %v, %d checks of %d steps", len(o.LadderRuns), o.Ladder, len(o.Checks), o.Steps)
	}
	for _, c := range o.Checks {
		if len(c.Runs) != w.Count || c.Measured() <= 0 || c.Predicted.StepsPerSec <= 0 || c.Predicted.Scenario.Cores != 1 || len(c.Predicted.Limits) == 0 {
			t.Errorf("check %+v", c)
		}
	}
	recs := WhatIfCodec.Encode(o)
	if len(recs) != w.Runs() || !strings.HasPrefix(recs[0].Name.String(), "BenchmarkWhatIf/profile/cores=2/workers=2-2") ||
		!strings.HasPrefix(recs[profiled].Name.String(), "BenchmarkLadder/level=") || recs[len(recs)-1].Name.String() != "BenchmarkWhatIf/check/cores=1/workers=2/step=x2" {
		t.Errorf("records %v", recs)
	}
	// What was measured is written exactly: read back and decoded, it
	// encodes as the same records.
	read := throughFile(t, recs)
	back, err := WhatIfCodec.Decode(read)
	if err != nil {
		t.Fatal(err)
	}
	again := throughFile(t, WhatIfCodec.Encode(back))
	for i := range again {
		if again[i].Name.String() != read[i].Name.String() || again[i].Iters != read[i].Iters || !reflect.DeepEqual(again[i].Values, read[i].Values) {
			t.Errorf("record %d decodes and encodes as\n%v\nwas\n%v", i, again[i], read[i])
		}
	}
	if len(again) != len(recs) {
		t.Errorf("%d records again, want %d", len(again), len(recs))
	}
	// Run makes those records, passed to env.Result.
	var streamed []string
	env.Result = func(r *benchfmt.Result) error { streamed = append(streamed, r.Name.String()); return nil }
	w.WithLadder = false
	rs, err := w.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != w.Runs() || len(streamed) != len(rs) || streamed[0] != rs[0].Name.String() {
		t.Errorf("Run made %d records, passed %v; want %d", len(rs), streamed, w.Runs())
	}
}

func TestWhatIfValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(w *WhatIf)
		want string
	}{
		{"count", func(w *WhatIf) { w.Count = 0 }, "count 0"},
		{"cores", func(w *WhatIf) { w.Verify.Cores = []int{0} }, "cores 0"},
		{"workers", func(w *WhatIf) { w.Verify.Workers = []int{-1} }, "workers -1"},
		{"steps", func(w *WhatIf) { w.Verify.StepScales = []float64{0} }, "multiplier 0"},
		{"pipeline", func(w *WhatIf) { w.Pipeline.Batch = 0 }, "batch size 0"},
		{"profile step", func(w *WhatIf) { w.ProfileStep = -1 }, "profile step"},
	} {
		w := QuickWhatIf()
		tc.edit(&w)
		if err := w.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := DefaultWhatIf().Validate(); err != nil {
		t.Errorf("the default: %v", err)
	}
}

// TestWhatIfCodec: a WhatIf's outcome, encoded then decoded, is itself
// but for what its records do not hold: the profile the model was fed
// (the file's whatif-profile line), a profiling run's profile beyond its
// record's figures, a prediction beyond its scenario and steps/s. The
// ladder's records are kept whole, and a point's runs go round after
// round, a round cut short where the run was.
func TestWhatIfCodec(t *testing.T) {
	prof := func(cores int, sps, used float64, host time.Duration) whatif.Profile {
		return whatif.Profile{Cores: cores, Workers: 2, Measured: sps, Host: host, Used: used, Step: 20 * time.Millisecond, Upload: 262149,
			Stages: []whatif.Stage{{Name: "load", CPU: 47469}, {Name: "transform", CPU: 860407}, {Name: "batch", CPU: 1928}}}
	}
	check := func(c, w int, m, pred float64, runs, neighbours []float64) whatif.Check {
		return whatif.Check{Predicted: whatif.Prediction{Scenario: whatif.Scenario{Cores: c, Workers: w, StepScale: m}, StepsPerSec: pred}, Runs: runs, Neighbours: neighbours}
	}
	profiling := []whatif.Profile{prof(2, 27.708663839485503, 0.9018970577372887, 0), prof(1, 17.249525522691926, 0, 239970),
		{Cores: 16, Workers: 1, Measured: 1e-9, Stages: []whatif.Stage{{Name: "fetch", CPU: 1}}}}
	checks := []whatif.Check{
		check(1, 1, 0.5, 25, []float64{24.91983165557244, 25.1}, []float64{0.01803166507101679, -1}),
		check(1, 2, 0.5, 33.333333333333336, []float64{30}, []float64{-1}),
		check(2, 8, 2, 1e-9, []float64{1, 2}, []float64{0, 3}),
	}
	for _, tc := range []struct {
		name string
		o    WhatIfOutcome
	}{
		{"the profile alone", WhatIfOutcome{Profiling: profiling}},
		{"checks of a saved profile, the last round cut short", WhatIfOutcome{Checks: checks, Steps: 12}},
		{"a profile and its checks", WhatIfOutcome{Profiling: profiling[:2], Checks: checks[:1], Steps: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, WhatIfCodec, tc.o) })
	}
	// With the ladder: its records are the ladder's own, kept whole.
	var runs []WhatIfLadderRun
	for i, l := range append(slices.Clone(level.Document), level.Document...) {
		pt := ladder.Point{Level: l, Workers: 2, Impl: "naive", Placement: loader.Host, Pinned: true}
		res := train.Result{Steps: 12, Batch: 32, Wall: time.Duration(i+1) * time.Second}
		runs = append(runs, WhatIfLadderRun{Level: l, StepsPerSec: res.StepsPerSec(), Record: pt.Benchmark(res)})
	}
	o := WhatIfOutcome{Profiling: profiling[:2], LadderRuns: runs, Ladder: ladderMedians(runs), Checks: checks, Steps: 12}
	if len(o.Ladder) != len(level.Document) || o.Ladder[level.None] != (runs[0].StepsPerSec+runs[len(level.Document)].StepsPerSec)/2 {
		t.Fatalf("medians %v of %d runs", o.Ladder, len(runs))
	}
	if got, err := WhatIfCodec.Decode(WhatIfCodec.Encode(o)); err != nil || !reflect.DeepEqual(got, o) {
		t.Errorf("in memory: decoded\n%+v, %v\nwant\n%+v", got, err, o)
	}
	got, err := WhatIfCodec.Decode(throughFile(t, WhatIfCodec.Encode(o)))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got.LadderRuns {
		want := throughFile(t, []*benchfmt.Result{runs[i].Record})[0]
		if r.Record.Name.String() != want.Name.String() || r.Record.Iters != want.Iters || !reflect.DeepEqual(r.Record.Values, want.Values) {
			t.Errorf("ladder run %d: record %v, want %v", i, r.Record, want)
		}
		got.LadderRuns[i].Record = runs[i].Record
	}
	if !reflect.DeepEqual(got, o) {
		t.Errorf("through a file: decoded\n%+v\nwant\n%+v", got, o)
	}
}

// TestWhatIfCodecCommittedFiles: the committed what-if result files (one
// from before --out recorded the report's lines, one from the GPU
// machine) decode, and their runs encode as the files' records again.
func TestWhatIfCodecCommittedFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks int
	}{{"whatif-d98ca25.txt", 16}, {"whatif-3797d48.txt", 16}, {"gpu/nvidia-h100-80gb-hbm3-15709d7-whatif.txt", 4}} {
		t.Run(tc.name, func(t *testing.T) {
			o := reencodes(t, WhatIfCodec, filepath.Join("..", "results", filepath.FromSlash(tc.name)))
			if len(o.Profiling) != 6 || len(o.LadderRuns) != 15 || len(o.Ladder) != len(level.Document) || len(o.Checks) != tc.checks || o.Steps != 12 {
				t.Errorf("%d profiling runs, %d ladder runs (medians %v), %d checks of %d steps; want 6, 15, %d of 12",
					len(o.Profiling), len(o.LadderRuns), o.Ladder, len(o.Checks), o.Steps, tc.checks)
			}
		})
	}
}
