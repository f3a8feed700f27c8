package workloads

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Headspace is SPDL's headspace analysis (documents 000 and 001): wrap the
// loader in a cache, as CacheDataLoader does, and compare the step time
// before and after the loop is fed from the cache; once per transform
// implementation.
type Headspace struct {
	// Analysis is every run's analysis; its pipeline's Impl is set per
	// run from Transforms.
	Analysis   analysis.Config
	Transforms []string
	// cmd is what headspace analyze's flags set beside the analysis.
	cmd analyzeCommand
}

// The document's own figures: "about 200 ms for one step", a headspace of
// 30 ms, "13% reduction in training time", "1.7 hour" saved — at 30 ms a
// step, about 200,000 steps.
const (
	HeadspaceDocumentStep       = 200 * time.Millisecond
	HeadspaceDocumentHeadspace  = 30 * time.Millisecond
	HeadspaceDocumentPercent    = 13.0
	HeadspaceDocumentHoursSaved = 1.7
	HeadspaceDocumentSteps      = 200000
)

// DefaultHeadspace is SPDL's method (caches returned after a warm-up of
// the real loader, then cached steps; the hours saved over the document's
// 200,000 steps) on the document 003's pipeline, one worker per core:
// 5 caches after 30 batches, 30 cached steps, with the naive and the fast
// transforms.
func DefaultHeadspace() Headspace {
	a := analysis.DefaultConfig()
	a.TotalSteps = HeadspaceDocumentSteps
	a.Pipeline.Workers = runtime.GOMAXPROCS(0)
	a.NumCaches, a.ReturnCachesAfter, a.StepsAfter, a.Skip = 5, 30, 30, 1
	return Headspace{Analysis: a, Transforms: []string{transforms.Naive, transforms.Fast}}
}

// QuickHeadspace runs every code path in a second or two.
func QuickHeadspace() Headspace {
	h := DefaultHeadspace()
	p := &h.Analysis.Pipeline
	p.Dataset.Width, p.Dataset.Height, p.Transforms.Crop, p.Batch = 64, 64, 16, 4
	h.Analysis.NumCaches, h.Analysis.ReturnCachesAfter, h.Analysis.StepsAfter = 2, 5, 5
	return h
}

// Name is "Headspace": BenchmarkHeadspace/transforms=…/phase=….
func (Headspace) Name() string { return "Headspace" }

// Document is "000" (and its source, 001).
func (Headspace) Document() string { return "000" }

// HeadspaceOutcome is what a Headspace measured: one analysis per
// transform implementation.
type HeadspaceOutcome struct {
	Analyses []HeadspaceAnalysis
	// Settings are the result file's configuration lines, which the
	// command gives it (settled); the codec reads records alone.
	Settings []resultfile.Config
}

// settle gives o its file's settings.
func (o *HeadspaceOutcome) settle(s []resultfile.Config) { o.Settings = s }

// HeadspaceAnalysis is one analysis: its transform implementation and
// its whole report. Its records (HeadspaceCodec) hold the report's
// StepTimes and Switch, its Verdict's Wait and Wall, and its Stats' stages
// with their output queues (named as their stage); a decoded report has
// those alone (Report rebuilds the rest).
type HeadspaceAnalysis struct {
	Transforms string
	Report     analysis.Report
}

// Measure runs the analysis once per transform implementation.
func (h Headspace) Measure(ctx context.Context, env Env) (HeadspaceOutcome, error) {
	var out HeadspaceOutcome
	dev, err := env.device().Open(true)
	if err != nil {
		return out, fmt.Errorf("opening the device: %w", err)
	}
	defer dev.Close()
	for _, impl := range h.Transforms {
		env.start("analyze " + impl)
		cfg := h.Analysis
		cfg.Pipeline.Impl = impl
		if onStep := cfg.OnStep; env.Tick != nil {
			cfg.OnStep = func(i int, d time.Duration) {
				if onStep != nil {
					onStep(i, d)
				}
				env.tick()
			}
		}
		rep, err := analysis.Run(ctx, cfg, dev)
		if err != nil {
			return out, fmt.Errorf("analysis with %s transforms: %w", impl, err)
		}
		out.Analyses = append(out.Analyses, HeadspaceAnalysis{Transforms: impl, Report: rep})
	}
	return out, nil
}

// Run runs the analyses (Measure) and returns their records.
func (h Headspace) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[HeadspaceOutcome](ctx, h, env)
}

// Codec is HeadspaceCodec.
func (Headspace) Codec() Codec[HeadspaceOutcome] { return HeadspaceCodec }

var _ Typed[HeadspaceOutcome] = Headspace{}

// HeadspaceCodec is a Headspace's records codec: each analysis's
// records (HeadspaceRecords) in turn.
var HeadspaceCodec = Codec[HeadspaceOutcome]{
	Experiment: "Headspace",
	Keys: map[string][]string{
		"Headspace":      {"transforms", "phase"},
		"HeadspaceInput": {"transforms"},
		"HeadspaceStage": {"transforms", "stage"},
	},
	encode: func(o HeadspaceOutcome) []*benchfmt.Result {
		var out []*benchfmt.Result
		for _, a := range o.Analyses {
			out = append(out, HeadspaceRecords(a.Transforms, a.Report)...)
		}
		return out
	},
	decode: decodeHeadspace,
}

// decodeHeadspace reads the analyses back from their records, in the
// order their transforms first appear, each step's phase the one its
// place gives (headspacePhase).
func decodeHeadspace(recs []Record) (HeadspaceOutcome, error) {
	var out HeadspaceOutcome
	at := map[string]int{}
	inputs := map[string]int{}
	for _, rec := range recs {
		impl := rec.Keys["transforms"]
		i, ok := at[impl]
		if !ok {
			i = len(out.Analyses)
			at[impl] = i
			out.Analyses = append(out.Analyses, HeadspaceAnalysis{Transforms: impl, Report: analysis.Report{Switch: -1}})
		}
		rep := &out.Analyses[i].Report
		switch rec.Benchmark {
		case "Headspace":
			v, err := rec.Value("ns/op")
			if err != nil {
				return out, err
			}
			phase := rec.Keys["phase"]
			if phase == "switch" {
				if rep.Switch >= 0 {
					return out, fmt.Errorf("%s: a second switch", fullName(rec.Result))
				}
				rep.Switch = len(rep.StepTimes)
			}
			rep.StepTimes = append(rep.StepTimes, time.Duration(v))
			if want := headspacePhase(len(rep.StepTimes)-1, rep.Switch); phase != want {
				return out, fmt.Errorf("%s: step %d of the %s analysis in phase %s, want %s", fullName(rec.Result), len(rep.StepTimes)-1, impl, phase, want)
			}
		case "HeadspaceInput":
			v, err := rec.valuesIn("input-wait-ns", "wall-ns")
			if err != nil {
				return out, err
			}
			inputs[impl]++
			rep.Verdict.Wait, rep.Verdict.Wall = time.Duration(v[0]), time.Duration(v[1])
		case "HeadspaceStage":
			st, q, err := headspaceStage(rec)
			if err != nil {
				return out, err
			}
			rep.Stats.Stages, rep.Stats.Queues = append(rep.Stats.Stages, st), append(rep.Stats.Queues, q)
		}
	}
	for i := range out.Analyses {
		a := &out.Analyses[i]
		if n := inputs[a.Transforms]; n != 1 {
			return out, fmt.Errorf("the %s analysis has %d input records, want one", a.Transforms, n)
		}
		if a.Report.Switch < 0 {
			a.Report.Switch = len(a.Report.StepTimes) // no step of the switch: every step was fed by the loader
		}
	}
	return out, nil
}

// report is the analysis's whole report from what its records hold and
// its file's settings, as analysis.Run made it: the estimates before
// and after the switch (the first step of each, the pipeline's fill,
// left out), the verdict judged again, the steps and the device.
func (a HeadspaceAnalysis) report(settings []resultfile.Config) (analysis.Report, error) {
	rep := a.Report
	c := &rep.Config
	for key, p := range map[string]*int{"num-caches": &c.NumCaches, "return-caches-after": &c.ReturnCachesAfter, "steps-after": &c.StepsAfter, "total-steps": &c.TotalSteps} {
		n, err := strconv.Atoi(setting(settings, key))
		if err != nil {
			return rep, fmt.Errorf("the %s analysis: its file's %s %q is not a count", a.Transforms, key, setting(settings, key))
		}
		*p = n
	}
	c.Skip = 1
	if rep.Switch < 2 || rep.Switch+1 >= len(rep.StepTimes) {
		return rep, fmt.Errorf("the %s analysis lacks the steps of a phase", a.Transforms)
	}
	rep.Device = setting(settings, "device")
	rep.Before = analysis.RoundEstimate(rep.StepTimes[c.Skip:rep.Switch], 1)
	rep.After = analysis.RoundEstimate(rep.StepTimes[rep.Switch+c.Skip:], 1)
	rep.Verdict = analysis.Judge(rep.Stats, rep.Verdict.Wait, rep.Verdict.Wall)
	return rep, nil
}

// headspaceStage is a stage's statistics and its output queue's (named
// as the stage) from its HeadspaceStage record: tasks, workers, total-ns,
// average-ns and occupancy, and the rest where the record holds them
// (records before issue 53 do not).
func headspaceStage(rec Record) (pipeline.StageStats, pipeline.QueueStats, error) {
	v, err := rec.valuesIn("tasks", "workers", "total-ns", "average-ns", "occupancy")
	if err != nil {
		return pipeline.StageStats{}, pipeline.QueueStats{}, err
	}
	name := rec.Keys["stage"]
	x := func(unit string) float64 { v, _ := resultfile.Value(rec.Result, unit); return v }
	d := func(unit string) time.Duration { return time.Duration(math.Round(x(unit))) }
	return pipeline.StageStats{Name: name, Tasks: int64(v[0]), Workers: int(v[1]), Total: time.Duration(v[2]), Average: time.Duration(v[3]),
			Failures: int64(x("failures")), CPU: d("cpu-ns"), P50: d("p50-ns"), P90: d("p90-ns"), P99: d("p99-ns")},
		pipeline.QueueStats{Name: name, Occupancy: v[4], Capacity: int(x("capacity")), Items: int64(x("items")),
			Elapsed: d("elapsed-ns"), AvgPutWait: d("put-wait-ns"), AvgGetWait: d("get-wait-ns")}, nil
}

// headspacePhase is the phase of step i of an analysis whose switch is
// step sw (-1 while it is not known): fill for the first, loader before
// the switch, switch, cached after it.
func headspacePhase(i, sw int) string {
	switch {
	case i == 0:
		return "fill"
	case sw < 0 || i < sw:
		return "loader"
	case i == sw:
		return "switch"
	}
	return "cached"
}

// HeadspaceRecords is one analysis's records: every step in order
// (Headspace/transforms=…/phase=…, headspacePhase), the input wait over
// the steps of phase loader (HeadspaceInput/transforms=…), and each
// stage's statistics at the switch (HeadspaceStage/transforms=…/stage=…,
// with its output queue's: all of pipeline.StageStats and QueueStats),
// from which the verdict is judged again (analysis.Judge) and the
// stages' lines and --stats-json of headspace analyze are written.
func HeadspaceRecords(impl string, rep analysis.Report) []*benchfmt.Result {
	var out []*benchfmt.Result
	for i, d := range rep.StepTimes {
		phase := headspacePhase(i, rep.Switch)
		out = append(out, newRecord("Headspace/transforms="+impl+"/phase="+phase, 1, 1, benchfmt.Value{Value: float64(d), Unit: "ns/op"}))
	}
	out = append(out, newRecord("HeadspaceInput/transforms="+impl, 1, 1,
		benchfmt.Value{Value: float64(rep.Verdict.Wait), Unit: "input-wait-ns"}, benchfmt.Value{Value: float64(rep.Verdict.Wall), Unit: "wall-ns"}))
	for i, st := range rep.Stats.Stages {
		var q pipeline.QueueStats
		if i < len(rep.Stats.Queues) {
			q = rep.Stats.Queues[i]
		}
		out = append(out, newRecord("HeadspaceStage/transforms="+impl+"/stage="+st.Name, 1, 1,
			benchfmt.Value{Value: float64(st.Tasks), Unit: "tasks"}, benchfmt.Value{Value: float64(st.Workers), Unit: "workers"},
			benchfmt.Value{Value: float64(st.Total), Unit: "total-ns"}, benchfmt.Value{Value: float64(st.Average), Unit: "average-ns"},
			benchfmt.Value{Value: q.Occupancy, Unit: "occupancy"},
			benchfmt.Value{Value: float64(st.Failures), Unit: "failures"}, benchfmt.Value{Value: float64(st.CPU), Unit: "cpu-ns"},
			benchfmt.Value{Value: float64(st.P50), Unit: "p50-ns"}, benchfmt.Value{Value: float64(st.P90), Unit: "p90-ns"},
			benchfmt.Value{Value: float64(st.P99), Unit: "p99-ns"}, benchfmt.Value{Value: float64(q.Capacity), Unit: "capacity"},
			benchfmt.Value{Value: float64(q.Items), Unit: "items"}, benchfmt.Value{Value: float64(q.Elapsed), Unit: "elapsed-ns"},
			benchfmt.Value{Value: float64(q.AvgPutWait), Unit: "put-wait-ns"}, benchfmt.Value{Value: float64(q.AvgGetWait), Unit: "get-wait-ns"}))
	}
	return out
}

// newRecord is the record name (without "Benchmark") at GOMAXPROCS
// procs, of iters iterations, with values.
func newRecord(name string, procs, iters int, values ...benchfmt.Value) *benchfmt.Result {
	return &benchfmt.Result{Name: benchfmt.Name(resultfile.BenchName(name, procs)), Iters: iters, Values: values}
}

// Settings is the configuration block of the analysis's result file.
func (h Headspace) Settings() []resultfile.Config {
	a := h.Analysis
	return append(a.Pipeline.Settings(),
		resultfile.Config{Key: "workers", Value: fmt.Sprint(a.Pipeline.Workers)},
		resultfile.Config{Key: "transforms", Value: strings.Join(h.Transforms, ",")},
		resultfile.Config{Key: "num-caches", Value: fmt.Sprint(a.NumCaches)},
		resultfile.Config{Key: "return-caches-after", Value: fmt.Sprint(a.ReturnCachesAfter)},
		resultfile.Config{Key: "steps-after", Value: fmt.Sprint(a.StepsAfter)},
		resultfile.Config{Key: "total-steps", Value: fmt.Sprint(a.TotalSteps)},
	)
}
