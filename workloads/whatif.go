package workloads

import (
	"context"
	"fmt"
	"github.com/headspace-bench/headspace/harness/level"
	"runtime"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/harness/whatif"
	"github.com/headspace-bench/headspace/internal/rusage"
	"github.com/headspace-bench/headspace/internal/summary"
)

// WhatIf is the what-if model's experiment (issue 17): profile the full
// pipeline (ladder level none) with each stage's CPU time measured, feed
// the costs to the model (package whatif), and check its predictions by
// running the points of Verify that this machine can run: worker counts,
// core counts (GOMAXPROCS) and step multipliers.
type WhatIf struct {
	// Pipeline is the profiling run's pipeline, Workers included.
	Pipeline loader.Config
	Train    train.Config
	// Step is the emulated device's step at multiplier 1.
	Step time.Duration
	// Cores is GOMAXPROCS for the profiling run; 0 keeps the process's.
	Cores int
	// ProfileStep is the step multiplier of the profiling runs: 0 (the
	// default) runs the pipeline against a device that takes no time, so
	// the pipeline sets the pace and the run shows what the cores give;
	// the profile's step is then Step. A device whose step cannot be
	// scaled (CUDA) needs 1, and its step is the one measured.
	ProfileStep float64
	// Count is the runs of the profile and of every checked point; the
	// profile takes each cost's median, a check the median steps/s.
	Count  int
	Verify whatif.Grid
	// Profiled, if set, is a profile measured before (`headspace whatif
	// --stats`): Run checks its predictions instead of profiling.
	Profiled *whatif.Profile
	// WithLadder also runs the caching ladder at the profile's setting
	// (Ladder), between the profile and the checks.
	WithLadder bool
}

// WhatIfLadder is each level's median steps/s of the caching ladder at
// the profile's setting (WhatIf.Ladder), as Run passes it to env.Details.
type WhatIfLadder map[level.Level]float64

// DefaultWhatIf is the experiment at a size whose check runs in about a
// minute on 2 cores: the document's transforms (naive) on 256² raw images
// cropped to 128, batches of 32, a 20 ms step (about the pipeline's own
// rate on 2 cores, so the grid's ×0.5 is input-bound and ×2 model-bound),
// profiled with 2 workers; checked at workers 1, 2, 4 and 8, GOMAXPROCS 1
// and 2, step ×0.5 and ×2: 16 points, 3 runs each.
func DefaultWhatIf() WhatIf {
	p := loader.DefaultConfig()
	p.Dataset.Width, p.Dataset.Height = 256, 256
	p.Transforms.Crop = 128
	p.Batch, p.Workers = 32, 2
	return WhatIf{
		Pipeline: p,
		Train:    train.Config{Steps: 12, Warmup: 2},
		Step:     20 * time.Millisecond,
		Count:    3,
		Verify:   whatif.Grid{Cores: []int{1, 2}, Workers: []int{1, 2, 4, 8}, StepScales: []float64{0.5, 2}},
	}
}

// QuickWhatIf runs every code path in seconds: no comparable numbers.
func QuickWhatIf() WhatIf {
	w := DefaultWhatIf()
	w.Pipeline.Dataset.Width, w.Pipeline.Dataset.Height = 48, 48
	w.Pipeline.Transforms.Crop, w.Pipeline.Batch = 16, 4
	w.Train = train.Config{Steps: 3, Warmup: 1}
	w.Step, w.Count = 2*time.Millisecond, 1
	w.Verify = whatif.Grid{Cores: []int{1}, Workers: []int{1, 2}, StepScales: []float64{2}}
	return w
}

// Validate reports the first problem with the experiment.
func (w WhatIf) Validate() error {
	if err := w.Pipeline.Validate(); err != nil {
		return err
	}
	if err := w.Train.Validate(); err != nil {
		return err
	}
	switch {
	case w.Count <= 0:
		return fmt.Errorf("count %d must be positive", w.Count)
	case w.Step < 0:
		return fmt.Errorf("step %v must not be negative", w.Step)
	case w.Cores < 0:
		return fmt.Errorf("cores %d must not be negative", w.Cores)
	case w.ProfileStep < 0:
		return fmt.Errorf("profile step multiplier %v must not be negative", w.ProfileStep)
	}
	for _, c := range w.Verify.Cores {
		if c <= 0 {
			return fmt.Errorf("verify: cores %d must be positive", c)
		}
	}
	for _, n := range w.Verify.Workers {
		if n <= 0 {
			return fmt.Errorf("verify: workers %d must be positive", n)
		}
	}
	for _, m := range w.Verify.StepScales {
		if !(m > 0) {
			return fmt.Errorf("verify: step multiplier %v must be positive", m)
		}
	}
	return nil
}

// Settings is the configuration block of the experiment's result file.
func (w WhatIf) Settings() []resultfile.Config {
	return append(w.Pipeline.Settings(),
		resultfile.Config{Key: "transforms", Value: w.Pipeline.Impl},
		resultfile.Config{Key: "placement", Value: w.Pipeline.Placement.String()},
		resultfile.Config{Key: "steps", Value: fmt.Sprint(w.Train.Steps)},
		resultfile.Config{Key: "warmup", Value: fmt.Sprint(w.Train.Warmup)},
		resultfile.Config{Key: "whatif-step", Value: w.Step.String()},
	)
}

// WhatIfRun is how the experiment opens its device and reports.
type WhatIfRun struct {
	// Open opens the device with its step scaled by m (1 for the
	// profile). A device whose step cannot be set (CUDA) returns an error
	// for m ≠ 1.
	Open func(m float64) (device.Device, error)
	// Start, if set, is called before each run with what it runs.
	Start func(name string)
	// Result, if set, receives every run's benchmark-format record.
	Result func(b *benchfmt.Result) error
}

// EmulatedWhatIf opens the emulated device of cfg with its step scaled.
func EmulatedWhatIf(cfg device.EmulatedConfig) func(m float64) (device.Device, error) {
	return func(m float64) (device.Device, error) {
		c := cfg
		c.Step = time.Duration(float64(cfg.Step) * m)
		return device.NewEmulated(c)
	}
}

// withCores runs f with GOMAXPROCS set to n (0: unchanged).
func withCores(n int, f func() error) error {
	if n > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	return f()
}

// runOnce runs the full pipeline once at workers w on a device stepped ×m,
// with each stage's CPU measured where the system can, and returns the
// run with the process's CPU over it.
func (w WhatIf) runOnce(ctx context.Context, h WhatIfRun, workers int, m float64, measure bool) (train.Result, whatif.Run, error) {
	run := whatif.Run{Workers: workers, Cores: runtime.GOMAXPROCS(0), CPUs: runtime.NumCPU(), LoadLatency: w.Pipeline.LoadLatency}
	dev, err := h.Open(m)
	if err != nil {
		return train.Result{}, run, fmt.Errorf("opening the device: %w", err)
	}
	defer dev.Close()
	cfg := w.Pipeline
	cfg.Workers, cfg.MeasureCPU = workers, measure
	c0, cerr := rusage.ProcessCPU()
	m0, merr := whatif.MachineBusy()
	t0 := time.Now()
	res, err := ladder.Run(ctx, level.None, cfg, dev, w.Train)
	wall := time.Since(t0)
	m1, _ := whatif.MachineBusy()
	c1, _ := rusage.ProcessCPU()
	if cerr == nil {
		run.ProcessCPU = c1 - c0
	}
	run.Neighbours = -1
	if cerr == nil && merr == nil {
		run.Neighbours = whatif.Neighbours(m1-m0, run.ProcessCPU, wall)
	}
	return res, run, err
}

// ProfileRuns is the profiling runs Profile makes: Count at the
// profile's cores, and Count more at 1 core to calibrate when those are
// more than 1 (each measured run followed by an unmeasured one on Linux
// counts once: ProfileRuns counts records).
func (w WhatIf) ProfileRuns() int {
	c := w.Cores
	if c == 0 {
		c = runtime.GOMAXPROCS(0)
	}
	if c > 1 {
		return 2 * w.Count
	}
	return w.Count
}

// Profile runs the profiling run Count times (each stage's CPU measured
// where the system has thread CPU clocks: Linux) and returns the model's
// profile, each cost the median of the runs'. Where the profile's cores
// are more than 1, each run is followed by one at 1 core, so both see the
// machine's other load alike, and the model fits from them how the CPU
// per sample grows with cores (whatif.Profile.Calibrate).
func (w WhatIf) Profile(ctx context.Context, h WhatIfRun) (whatif.Profile, error) {
	if err := w.Validate(); err != nil {
		return whatif.Profile{}, err
	}
	cores := w.Cores
	if cores == 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	var at, one []whatif.Profile
	for range w.Count {
		p, err := w.profileOnce(ctx, h, cores)
		if err != nil {
			return whatif.Profile{}, err
		}
		at = append(at, p)
		if cores > 1 {
			p, err := w.profileOnce(ctx, h, 1)
			if err != nil {
				return whatif.Profile{}, err
			}
			one = append(one, p)
		}
	}
	p, err := whatif.Median(at)
	if err != nil || cores <= 1 {
		return p, err
	}
	o, err := whatif.Median(one)
	if err != nil {
		return p, err
	}
	return p.Calibrate(o)
}

// profileOnce is one profiling run at GOMAXPROCS cores, with each
// stage's CPU measured where the system can (Linux), followed there by
// the same run without measuring: the host's share is that run's CPU per
// sample less the stages', so the cost of measuring (a clock read per task,
// a thread hand-off per queue operation of a locked worker) is not taken
// for the pipeline's.
func (w WhatIf) profileOnce(ctx context.Context, h WhatIfRun, cores int) (whatif.Profile, error) {
	var p whatif.Profile
	measure := runtime.GOOS == "linux"
	err := withCores(cores, func() error {
		name := fmt.Sprintf("WhatIf/profile/cores=%d/workers=%d", cores, w.Pipeline.Workers)
		if h.Start != nil {
			h.Start(name)
		}
		res, run, err := w.runOnce(ctx, h, w.Pipeline.Workers, w.ProfileStep, measure)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if p, err = whatif.FromRun(res, run); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if measure && run.ProcessCPU > 0 {
			plain, prun, err := w.runOnce(ctx, h, w.Pipeline.Workers, w.ProfileStep, false)
			if err != nil {
				return fmt.Errorf("%s, unmeasured: %w", name, err)
			}
			if n := plain.Pipeline.Stages[0].Tasks; n > 0 && prun.ProcessCPU > 0 {
				if p, err = p.WithProcessCPU(prun.ProcessCPU / time.Duration(n)); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
		}
		if w.ProfileStep == 0 {
			p.Step = w.Step
		}
		if h.Result != nil {
			return h.Result(profileRecord(name, cores, p))
		}
		return nil
	})
	return p, err
}

// profileRecord is one profiling run as a benchmark record: steps/s and
// the model's inputs (each stage's cpu-ns/sample, the host's, the step's
// and the upload's time).
func profileRecord(name string, cores int, p whatif.Profile) *benchfmt.Result {
	r := &benchfmt.Result{Name: benchfmt.Name(benchName(name, cores)), Iters: 1,
		Values: []benchfmt.Value{{Value: p.Measured, Unit: "steps/s"}}}
	add := func(v time.Duration, unit string) {
		if v > 0 {
			r.Values = append(r.Values, benchfmt.Value{Value: float64(v), Unit: unit})
		}
	}
	for _, s := range p.Stages {
		add(s.CPU, s.Name+"-cpu-ns/sample")
	}
	add(p.Host, "host-cpu-ns/sample")
	if p.Used > 0 {
		r.Values = append(r.Values, benchfmt.Value{Value: p.Used, Unit: "cores-used"})
	}
	add(p.Step, "step-ns")
	add(p.Upload, "upload-ns/op")
	return r
}

// benchName is name's benchmark name at cores (resultfile.BenchName).
func benchName(name string, cores int) string { return resultfile.BenchName(name, cores) }

// CheckName names a checked point: "WhatIf/check/cores=1/workers=4/step=x0.5".
func CheckName(s whatif.Scenario) string {
	return fmt.Sprintf("WhatIf/check/cores=%d/workers=%d/step=x%g", s.Cores, s.Workers, s.StepScale)
}

// Check runs every point of Verify Count times (the pipeline without CPU
// measurement, as a user would run it) and sets each median steps/s
// beside the profile's prediction. The runs go round the points Count
// times, so a burst of the machine's other work falls on many points a
// little rather than on one point wholly. It stops at the first error, or
// when ctx is done, returning the checks with the runs finished before.
func (w WhatIf) Check(ctx context.Context, h WhatIfRun, p whatif.Profile) ([]whatif.Check, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	var out []whatif.Check
	for _, m := range w.Verify.StepScales {
		for _, c := range w.Verify.Cores {
			for _, n := range w.Verify.Workers {
				out = append(out, whatif.Check{Predicted: p.Predict(whatif.Scenario{Cores: c, Workers: n, StepScale: m})})
			}
		}
	}
	for range w.Count {
		for i := range out {
			ck := &out[i]
			s := ck.Predicted.Scenario
			name := CheckName(s)
			err := withCores(s.Cores, func() error {
				if err := ctx.Err(); err != nil {
					return err
				}
				if h.Start != nil {
					h.Start(name)
				}
				res, run, err := w.runOnce(ctx, h, s.Workers, s.StepScale, false)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				ck.Runs = append(ck.Runs, res.StepsPerSec())
				ck.Neighbours = append(ck.Neighbours, run.Neighbours)
				if h.Result == nil {
					return nil
				}
				r := &benchfmt.Result{Name: benchfmt.Name(benchName(name, s.Cores)), Iters: max(res.Steps, 1), Values: []benchfmt.Value{
					{Value: res.StepsPerSec(), Unit: "steps/s"},
					{Value: ck.Predicted.StepsPerSec, Unit: "predicted-steps/s"},
				}}
				if run.Neighbours >= 0 {
					r.Values = append(r.Values, benchfmt.Value{Value: run.Neighbours, Unit: "other-cores"})
				}
				return h.Result(r)
			})
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// Ladder runs the caching ladder at the profile's setting — the
// pipeline's workers, Cores, the step ×1 — Count times at each of the
// document's levels (level.Document) and returns each level's median
// steps/s, for the ladder's attribution
// beside the model's (whatif.WriteLadder). Each run's record is the
// ladder's own (ladder.Point.Benchmark).
func (w WhatIf) Ladder(ctx context.Context, h WhatIfRun) (map[level.Level]float64, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	runs := map[level.Level][]float64{}
	err := withCores(w.Cores, func() error {
		for range w.Count {
			for _, l := range level.Document {
				pt := ladder.Point{Level: l, Workers: w.Pipeline.Workers, Impl: w.Pipeline.Impl, Placement: w.Pipeline.Placement, Pinned: true}
				if h.Start != nil {
					h.Start(pt.Name())
				}
				dev, err := h.Open(1)
				if err != nil {
					return fmt.Errorf("opening the device: %w", err)
				}
				res, err := ladder.Run(ctx, l, w.Pipeline, dev, w.Train)
				dev.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", pt.Name(), err)
				}
				runs[l] = append(runs[l], res.StepsPerSec())
				if h.Result != nil {
					if err := h.Result(pt.Benchmark(res)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	med := map[level.Level]float64{}
	for l, vs := range runs {
		med[l] = summary.Median(vs)
	}
	return med, nil
}

// Name is "WhatIf": BenchmarkWhatIf/profile/… and BenchmarkWhatIf/check/….
func (WhatIf) Name() string { return "WhatIf" }

// Document is "": the model is headspace's own (issue 17), after
// DS-Analyzer's what-if analysis.
func (WhatIf) Document() string { return "" }

// Runs is the records Run makes: the profiling runs (none with
// Profiled), the ladder's, and Count of every point of Verify.
func (w WhatIf) Runs() int {
	n := len(w.Verify.Cores) * len(w.Verify.Workers) * len(w.Verify.StepScales) * w.Count
	if w.Profiled == nil {
		n += w.ProfileRuns()
	}
	if w.WithLadder {
		n += len(level.Document) * w.Count
	}
	return n
}

// Run profiles the pipeline (or takes Profiled), runs the caching ladder
// at its setting with WithLadder, and checks the model's predictions at
// every point of Verify (Profile, Ladder, then Check) on env's device; a
// device whose step cannot be scaled is profiled at its own step, and its
// checks stop at the first scaled one. env.Details receives the
// whatif.Profile once it is known, the WhatIfLadder once the ladder has
// run, and the []whatif.Check once the checks end, also when they stop
// early (their Runs then hold the runs finished before).
func (w WhatIf) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	var out []*benchfmt.Result
	h := w.env(env, env.collect(&out))
	if env.device().Scale == nil {
		w.ProfileStep = 1
	}
	var p whatif.Profile
	if w.Profiled != nil {
		if err := w.Validate(); err != nil {
			return nil, err
		}
		p = *w.Profiled
	} else {
		var err error
		if p, err = w.Profile(ctx, h); err != nil {
			return out, err
		}
	}
	send(env.Details.Profile, p)
	if w.WithLadder {
		med, err := w.Ladder(ctx, h)
		if err != nil {
			return out, err
		}
		send(env.Details.WhatIfLadder, WhatIfLadder(med))
	}
	if len(w.Verify.Cores) == 0 || len(w.Verify.Workers) == 0 || len(w.Verify.StepScales) == 0 {
		return out, nil
	}
	checks, err := w.Check(ctx, h, p)
	if checks != nil {
		send(env.Details.Checks, checks)
	}
	return out, err
}

// env is how the experiment opens env's device and reports to result.
func (w WhatIf) env(env Env, result func(*benchfmt.Result) error) WhatIfRun {
	d := env.device()
	open := d.Scale
	if open == nil {
		open = func(m float64) (device.Device, error) {
			if m != 1 {
				return nil, fmt.Errorf("step ×%g: the device's step cannot be scaled", m)
			}
			return d.Open(true)
		}
	}
	return WhatIfRun{Open: open, Start: env.Start, Result: result}
}
