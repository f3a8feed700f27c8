package workloads

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/whatif"
)

// TestWhatIfQuick runs the experiment at its quick size: a profile (with
// its 1-core calibration where the process has more) and a check of every
// point, each with its records.
func TestWhatIfQuick(t *testing.T) {
	w := QuickWhatIf()
	w.Cores = 2
	var names []string
	dev := DocumentDevice()
	dev.Step = w.Step
	h := WhatIfRun{Open: EmulatedWhatIf(dev), Result: func(b *benchfmt.Result) error {
		names = append(names, string(b.Name))
		return nil
	}}
	procs := runtime.GOMAXPROCS(0)
	p, err := w.Profile(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOMAXPROCS(0) != procs {
		t.Errorf("GOMAXPROCS left at %d, was %d", runtime.GOMAXPROCS(0), procs)
	}
	if p.Cores != 2 || p.Workers != w.Pipeline.Workers || p.Batch != w.Pipeline.Batch || p.Step != w.Step || len(p.Stages) != 4 {
		t.Fatalf("profile %+v", p)
	}
	if runtime.GOOS == "linux" && p.CPUSource != whatif.ThreadCPU {
		t.Errorf("CPU from %s on Linux", p.CPUSource)
	}
	if len(names) != w.ProfileRuns() || !strings.HasPrefix(names[0], "BenchmarkWhatIf/profile/cores=2/workers=2-2") {
		t.Errorf("profile records %v, want %d", names, w.ProfileRuns())
	}
	names = nil
	cs, err := w.Check(context.Background(), h, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || len(names) != 2 || names[1] != "BenchmarkWhatIf/check/cores=1/workers=2/step=x2" {
		t.Fatalf("%d checks, records %v", len(cs), names)
	}
	for _, c := range cs {
		if len(c.Runs) != w.Count || c.Measured() <= 0 || c.Predicted.StepsPerSec <= 0 || c.Predicted.Scenario.Cores != 1 {
			t.Errorf("check %+v", c)
		}
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
