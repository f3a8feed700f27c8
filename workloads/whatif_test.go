package workloads

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/level"
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
		records          int
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
