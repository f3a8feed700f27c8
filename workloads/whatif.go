package workloads

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/level"
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
	// --stats`): Measure checks its predictions instead of profiling.
	Profiled *whatif.Profile
	// WithLadder also runs the caching ladder at the profile's setting,
	// between the profile and the checks.
	WithLadder bool
	// Each, if set, is the hook Run passes to MeasureEach: it receives
	// the outcome so far after each run, once the profile is made and
	// once the ladder's medians are, and the whole outcome when the run
	// ends (headspace whatif prints the profile and the ladder as they
	// come). An error from it stops the run.
	Each func(WhatIfOutcome) error

	// cmd is what headspace whatif's flags set beside the experiment.
	cmd *whatIfCommand
}

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

// WhatIfOutcome is what a WhatIf measured, each part in the order it ran.
type WhatIfOutcome struct {
	// Profiling are the profiling runs' profiles (none with Profiled). A
	// decoded one holds what its record does (profileRecord).
	Profiling []whatif.Profile
	// Profile is the profile the model was fed: the median of Profiling
	// (calibrated at 1 core where its cores are more), or Profiled; nil
	// before it is made. A result file's whatif-profile line holds it,
	// not its records: a decoded outcome has none.
	Profile *whatif.Profile
	// LadderRuns are the caching ladder's runs (WithLadder), and Ladder
	// each level's median steps/s of them once the ladder has run.
	LadderRuns []WhatIfLadderRun
	Ladder     map[level.Level]float64
	// Checks are the points of Verify, each with the profile's prediction
	// and the runs finished; nil before the checks begin. A decoded
	// check's prediction holds its scenario and steps/s alone.
	Checks []whatif.Check
	// Steps are a checked run's measured steps: its record's iterations.
	Steps int
	// Report is what the run's --report stated, as its result file
	// records it (WhatIfReportSettings): a decoded outcome's, nil where
	// the records' configuration holds none of its lines (records not
	// read from such a file).
	Report *WhatIfReport
}

// WhatIfLadderRun is one run of WhatIf's caching ladder: its level, its
// steps/s and its record, the ladder's own (ladder.Point.Benchmark).
type WhatIfLadderRun struct {
	Level       level.Level
	StepsPerSec float64
	Record      *benchfmt.Result
}

// whatIfRun is a WhatIf measuring.
type whatIfRun struct {
	WhatIf
	open func(m float64) (device.Device, error)
	env  Env
	out  WhatIfOutcome
	each func(WhatIfOutcome) error
}

// made passes the outcome so far to each, if set.
func (r *whatIfRun) made() error {
	if r.each == nil {
		return nil
	}
	return r.each(r.out)
}

// runOnce runs the full pipeline once at workers w on a device stepped ×m,
// with each stage's CPU measured where the system can, and returns the
// run with the process's CPU over it.
func (r *whatIfRun) runOnce(ctx context.Context, workers int, m float64, measure bool) (train.Result, whatif.Run, error) {
	run := whatif.Run{Workers: workers, Cores: runtime.GOMAXPROCS(0), CPUs: runtime.NumCPU(), LoadLatency: r.Pipeline.LoadLatency}
	dev, err := r.open(m)
	if err != nil {
		return train.Result{}, run, fmt.Errorf("opening the device: %w", err)
	}
	defer dev.Close()
	cfg := r.Pipeline
	cfg.Workers, cfg.MeasureCPU = workers, measure
	c0, cerr := rusage.ProcessCPU()
	m0, merr := whatif.MachineBusy()
	t0 := time.Now()
	res, err := ladder.Run(ctx, level.None, cfg, dev, r.Train)
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

// ProfileRuns is the profiling records Measure makes: Count at the
// profile's cores, and Count more at 1 core to calibrate when those are
// more than 1.
func (w WhatIf) ProfileRuns() int {
	if w.profileCores() > 1 {
		return 2 * w.Count
	}
	return w.Count
}

// profileCores is Cores, or the process's GOMAXPROCS.
func (w WhatIf) profileCores() int {
	if w.Cores == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return w.Cores
}

// profile runs the profiling run Count times and returns the model's
// profile, each cost the median of the runs'. Where the profile's cores
// are more than 1, each run is followed by one at 1 core, so both see the
// machine's other load alike, and the model fits from them how the CPU
// per sample grows with cores (whatif.Profile.Calibrate).
func (r *whatIfRun) profile(ctx context.Context) (whatif.Profile, error) {
	cores := r.profileCores()
	var at, one []whatif.Profile
	for range r.Count {
		p, err := r.profileOnce(ctx, cores)
		if err != nil {
			return whatif.Profile{}, err
		}
		at = append(at, p)
		if cores > 1 {
			p, err := r.profileOnce(ctx, 1)
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
func (r *whatIfRun) profileOnce(ctx context.Context, cores int) (whatif.Profile, error) {
	var p whatif.Profile
	measure := runtime.GOOS == "linux"
	err := withCores(cores, func() error {
		name := fmt.Sprintf("WhatIf/profile/cores=%d/workers=%d", cores, r.Pipeline.Workers)
		r.env.start(name)
		res, run, err := r.runOnce(ctx, r.Pipeline.Workers, r.ProfileStep, measure)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if p, err = whatif.FromRun(res, run); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if measure && run.ProcessCPU > 0 {
			plain, prun, err := r.runOnce(ctx, r.Pipeline.Workers, r.ProfileStep, false)
			if err != nil {
				return fmt.Errorf("%s, unmeasured: %w", name, err)
			}
			if n := plain.Pipeline.Stages[0].Tasks; n > 0 && prun.ProcessCPU > 0 {
				if p, err = p.WithProcessCPU(prun.ProcessCPU / time.Duration(n)); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
		}
		if r.ProfileStep == 0 {
			p.Step = r.Step
		}
		r.out.Profiling = append(r.out.Profiling, p)
		return r.made()
	})
	return p, err
}

// profileRecord is one profiling run's record: steps/s and the model's
// inputs (each stage's cpu-ns/sample, the host's, the step, the upload).
func profileRecord(p whatif.Profile) *benchfmt.Result {
	name := fmt.Sprintf("WhatIf/profile/cores=%d/workers=%d", p.Cores, p.Workers)
	r := newRecord(name, p.Cores, 1, benchfmt.Value{Value: p.Measured, Unit: "steps/s"})
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

// checkName names a checked point: "WhatIf/check/cores=1/workers=4/step=x0.5".
func checkName(s whatif.Scenario) string {
	return fmt.Sprintf("WhatIf/check/cores=%d/workers=%d/step=x%g", s.Cores, s.Workers, s.StepScale)
}

// check runs every point of Verify Count times, without CPU measurement
// as a user would run it, beside the profile's prediction. The runs go
// round the points Count times, so a burst of the machine's other work
// falls on many points a little rather than on one point wholly. It
// stops at the first error, or when ctx is done, the checks keeping the
// runs finished before.
func (r *whatIfRun) check(ctx context.Context, p whatif.Profile) error {
	for _, m := range r.Verify.StepScales {
		for _, c := range r.Verify.Cores {
			for _, n := range r.Verify.Workers {
				r.out.Checks = append(r.out.Checks, whatif.Check{Predicted: p.Predict(whatif.Scenario{Cores: c, Workers: n, StepScale: m})})
			}
		}
	}
	for range r.Count {
		for i := range r.out.Checks {
			ck := &r.out.Checks[i]
			s := ck.Predicted.Scenario
			name := checkName(s)
			err := withCores(s.Cores, func() error {
				if err := ctx.Err(); err != nil {
					return err
				}
				r.env.start(name)
				res, run, err := r.runOnce(ctx, s.Workers, s.StepScale, false)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				ck.Runs = append(ck.Runs, res.StepsPerSec())
				ck.Neighbours = append(ck.Neighbours, run.Neighbours)
				r.out.Steps = max(res.Steps, 1)
				return r.made()
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// ladder runs the caching ladder at the profile's setting (the
// pipeline's workers, Cores, the step ×1) Count times at each of the
// document's levels and sets each level's median steps/s, for the
// ladder's attribution beside the model's (whatif.WriteLadder).
func (r *whatIfRun) ladder(ctx context.Context) error {
	err := withCores(r.Cores, func() error {
		for range r.Count {
			for _, l := range level.Document {
				pt := ladder.Point{Level: l, Workers: r.Pipeline.Workers, Impl: r.Pipeline.Impl, Placement: r.Pipeline.Placement, Pinned: true}
				r.env.start(pt.Name())
				dev, err := r.open(1)
				if err != nil {
					return fmt.Errorf("opening the device: %w", err)
				}
				res, err := ladder.Run(ctx, l, r.Pipeline, dev, r.Train)
				dev.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", pt.Name(), err)
				}
				r.out.LadderRuns = append(r.out.LadderRuns, WhatIfLadderRun{Level: l, StepsPerSec: res.StepsPerSec(), Record: pt.Benchmark(res)})
				if err := r.made(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.out.Ladder = ladderMedians(r.out.LadderRuns)
	return r.made()
}

// ladderMedians is each level's median steps/s of runs; nil for none.
func ladderMedians(runs []WhatIfLadderRun) map[level.Level]float64 {
	if len(runs) == 0 {
		return nil
	}
	by := map[level.Level][]float64{}
	for _, r := range runs {
		by[r.Level] = append(by[r.Level], r.StepsPerSec)
	}
	med := map[level.Level]float64{}
	for l, vs := range by {
		med[l] = summary.Median(vs)
	}
	return med
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

// Measure is MeasureEach with no callback.
func (w WhatIf) Measure(ctx context.Context, env Env) (WhatIfOutcome, error) {
	return w.MeasureEach(ctx, env, nil)
}

// MeasureEach profiles the pipeline (or takes Profiled), runs the caching
// ladder at its setting with WithLadder, and checks the model's
// predictions at every point of Verify, on env's device; a device whose
// step cannot be scaled is profiled at its own step, and its checks stop
// at the first scaled one. It returns what it measured, also before an
// error. each, if not nil, receives the outcome so far after each run,
// once the profile is made and once the ladder's medians are: `headspace
// whatif` prints and streams from it. An error from each stops the run
// and is returned.
func (w WhatIf) MeasureEach(ctx context.Context, env Env, each func(WhatIfOutcome) error) (WhatIfOutcome, error) {
	d := env.device()
	r := &whatIfRun{WhatIf: w, open: d.Scale, env: env, each: each}
	if d.Scale == nil {
		r.ProfileStep = 1
		r.open = func(m float64) (device.Device, error) {
			if m != 1 {
				return nil, fmt.Errorf("step ×%g: the device's step cannot be scaled", m)
			}
			return d.Open(true)
		}
	}
	if err := w.Validate(); err != nil {
		return r.out, err
	}
	r.out.Profile = w.Profiled
	if w.Profiled == nil {
		p, err := r.profile(ctx)
		if err != nil {
			return r.out, err
		}
		r.out.Profile = &p
	}
	if err := r.made(); err != nil {
		return r.out, err
	}
	if w.WithLadder {
		if err := r.ladder(ctx); err != nil {
			return r.out, err
		}
	}
	return r.out, r.check(ctx, *r.out.Profile)
}

// Run measures the experiment (MeasureEach, with Each) and returns its
// records (WhatIfCodec), each given to env as its run ends. A run
// interrupted before its checks began returns none: a profile alone is
// no what-if (headspace whatif keeps no file of it).
func (w WhatIf) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	sent := 0 // the records given to env
	give := func(o WhatIfOutcome) error {
		recs := WhatIfCodec.Encode(o)
		for _, r := range recs[sent:] {
			if err := env.result(r); err != nil {
				return err
			}
		}
		sent = len(recs)
		if w.Each != nil {
			return w.Each(o)
		}
		return nil
	}
	o, err := w.MeasureEach(ctx, env, give)
	if errors.Is(err, context.Canceled) && o.Checks == nil {
		return nil, err
	}
	if err == nil || errors.Is(err, context.Canceled) {
		// The whole outcome: the last records, and Each the checks
		// begun (an interrupted run's included).
		if gerr := give(o); err == nil {
			err = gerr
		}
	}
	return WhatIfCodec.Encode(o), err
}

// Codec is WhatIfCodec.
func (WhatIf) Codec() Codec[WhatIfOutcome] { return WhatIfCodec }

var _ Typed[WhatIfOutcome] = WhatIf{}

// WhatIfCodec is a WhatIf's records codec: a record a run, in the order
// they ran: the profiling runs' (BenchmarkWhatIf/profile/cores=…/workers=…,
// profileRecord); the caching ladder's own records, kept whole; then the
// checked runs', round after round (BenchmarkWhatIf/check/cores=…/workers=…/step=x…,
// checkRecord). Each has its cores' GOMAXPROCS suffix.
var WhatIfCodec = Codec[WhatIfOutcome]{
	Experiment: "WhatIf",
	Keys: map[string][]string{
		"WhatIf/profile": {"cores", "workers"},
		"WhatIf/check":   {"cores", "workers", "step"},
		"Ladder":         pointKeys,
	},
	Borrowed: []string{"Ladder"},
	Order:    []string{"WhatIf/profile", "Ladder", "WhatIf/check"},
	Procs:    true,
	encode: func(o WhatIfOutcome) []*benchfmt.Result {
		out := recordsOf(o.Profiling, profileRecord)
		out = append(out, recordsOf(o.LadderRuns, func(r WhatIfLadderRun) *benchfmt.Result { return r.Record })...)
		for round := 0; ; round++ {
			n := len(out)
			for _, ck := range o.Checks {
				if round < len(ck.Runs) {
					out = append(out, checkRecord(ck, round, o.Steps))
				}
			}
			if len(out) == n {
				return out
			}
		}
	},
	decode: decodeWhatIf,
}

// checkRecord is the record of ck's run i, of steps measured steps:
// steps/s, predicted-steps/s and other-cores where known.
func checkRecord(ck whatif.Check, i, steps int) *benchfmt.Result {
	s := ck.Predicted.Scenario
	r := newRecord(checkName(s), s.Cores, steps, benchfmt.Value{Value: ck.Runs[i], Unit: "steps/s"},
		benchfmt.Value{Value: ck.Predicted.StepsPerSec, Unit: "predicted-steps/s"})
	if i < len(ck.Neighbours) && ck.Neighbours[i] >= 0 {
		r.Values = append(r.Values, benchfmt.Value{Value: ck.Neighbours[i], Unit: "other-cores"})
	}
	return r
}

// decodeWhatIf is WhatIfCodec's decode: the records in the order a run
// makes them, each record's GOMAXPROCS its cores, a point's prediction
// the same in every run.
func decodeWhatIf(recs []Record) (WhatIfOutcome, error) {
	d := whatIfDecoder{checks: map[whatif.Scenario]int{}, last: [2]int{-1, -1}}
	for _, r := range recs {
		if err := d.record(r); err != nil {
			return d.out, err
		}
	}
	out := d.out
	out.Ladder = ladderMedians(out.LadderRuns)
	if len(recs) > 0 {
		r, err := decodeReport(out, recs[0].Result)
		if err != nil {
			return out, fmt.Errorf("%s: %w", filePart(recs[0].Result), err)
		}
		out.Report = r
	}
	return out, nil
}

// whatIfDecoder is decodeWhatIf's outcome so far.
type whatIfDecoder struct {
	out    WhatIfOutcome
	checks map[whatif.Scenario]int // a scenario's index in out.Checks
	last   [2]int                  // the check record before: its round and point
}

// record decodes one record: a ladder run, a profiling run or a run that
// checks a prediction (check).
func (d *whatIfDecoder) record(r Record) error {
	name := at(r.Result)
	sps, err := r.Value("steps/s")
	if err != nil {
		return err
	}
	if r.Benchmark == "Ladder" {
		p, err := r.point()
		if err != nil {
			return err
		}
		d.out.LadderRuns = append(d.out.LadderRuns, WhatIfLadderRun{Level: p.Level, StepsPerSec: sps, Record: r.Result})
		return nil
	}
	// No figure a what-if writes is negative, infinite or NaN.
	for _, v := range r.Values {
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) || v.Value < 0 {
			return fmt.Errorf("%s: %s %v: want a finite figure, 0 or more", name, cmp.Or(v.OrigUnit, v.Unit), cmp.Or(v.OrigValue, v.Value))
		}
	}
	cores, err := r.count("cores", true)
	if err != nil {
		return err
	}
	workers, err := r.count("workers", true)
	if err != nil {
		return err
	}
	if r.Procs != cores {
		return fmt.Errorf("%s: GOMAXPROCS %d, not its cores", name, r.Procs)
	}
	if r.Benchmark == "WhatIf/profile" {
		p, err := decodeProfiling(r, cores, workers, sps)
		if err != nil {
			return err
		}
		d.out.Profiling = append(d.out.Profiling, p)
		return nil
	}
	return d.check(r, name, cores, workers, sps)
}

// check adds a run at sps, of cores and workers and its record's step
// multiplier, to the check of its point: runs in the order a run checks
// its points in, every one of the same steps and with the point's
// prediction, with the other processes' cores where known.
func (d *whatIfDecoder) check(r Record, name string, cores, workers int, sps float64) error {
	step, ok := strings.CutPrefix(r.Keys["step"], "x")
	m, err := strconv.ParseFloat(step, 64)
	if !ok || err != nil || !(m > 0) || fmt.Sprintf("x%g", m) != r.Keys["step"] {
		return fmt.Errorf("%s: step %q: want x and a multiplier", name, r.Keys["step"])
	}
	predicted, err := r.Value("predicted-steps/s")
	if err != nil {
		return err
	}
	s := whatif.Scenario{Cores: cores, Workers: workers, StepScale: m}
	i, seen := d.checks[s]
	if !seen {
		i, d.checks[s] = len(d.out.Checks), len(d.out.Checks)
		d.out.Checks = append(d.out.Checks, whatif.Check{Predicted: whatif.Prediction{Scenario: s, StepsPerSec: predicted}})
	}
	ck := &d.out.Checks[i]
	switch at := [2]int{len(ck.Runs), i}; {
	case predicted != ck.Predicted.StepsPerSec:
		return fmt.Errorf("%s: predicted %v steps/s, its first run %v", name, predicted, ck.Predicted.StepsPerSec)
	case at[0] < d.last[0] || at[0] == d.last[0] && at[1] <= d.last[1]:
		return fmt.Errorf("%s: out of the order a run checks its points in (round after round)", name)
	case d.out.Steps != 0 && r.Iters != d.out.Steps:
		return fmt.Errorf("%s: %d steps, the checks before %d", name, r.Iters, d.out.Steps)
	default:
		d.last = at
	}
	d.out.Steps = r.Iters
	ck.Runs = append(ck.Runs, sps)
	n, values := -1.0, 2 // the other processes' cores unknown
	if v, ok := resultfile.Value(r.Result, "other-cores"); ok {
		n, values = v, 3
	}
	if len(r.Values) != values {
		return fmt.Errorf("%s: %d values, want steps/s, predicted-steps/s and other-cores where known", name, len(r.Values))
	}
	ck.Neighbours = append(ck.Neighbours, n)
	return nil
}

// filePart is the file r was read from, its name where it was not.
func filePart(r *benchfmt.Result) string {
	if file, _ := r.Pos(); file != "" {
		return file
	}
	return fullName(r)
}

// decodeProfiling is the profile of a profiling run's record
// (profileRecord) at cores and workers, of sps steps/s.
func decodeProfiling(r Record, cores, workers int, sps float64) (whatif.Profile, error) {
	p := whatif.Profile{Cores: cores, Workers: workers, Measured: sps}
	for _, v := range r.Values {
		unit := cmp.Or(v.OrigUnit, v.Unit) // as profileRecord wrote it, before benchfmt tidied it
		x, err := r.Value(unit)
		if err != nil {
			return p, err
		}
		d := time.Duration(math.Round(x))
		switch stage, ok := strings.CutSuffix(unit, "-cpu-ns/sample"); {
		case unit == "steps/s":
		case ok && stage == "host":
			p.Host = d
		case ok:
			p.Stages = append(p.Stages, whatif.Stage{Name: stage, CPU: d})
		case unit == "cores-used":
			p.Used = x
		case unit == "step-ns":
			p.Step = d
		case unit == "upload-ns/op":
			p.Upload = d
		default:
			return p, fmt.Errorf("%s: a value in %s, which a profiling record does not hold", at(r.Result), unit)
		}
	}
	return p, nil
}
