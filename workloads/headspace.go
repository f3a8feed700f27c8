package workloads

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/analysis"
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

// Run runs the analysis once per transform implementation on one device
// of env and returns each one's records (HeadspaceRecords). Each
// analysis's whole analysis.Report (the plot, the stage statistics, the
// verdict) goes to env.Details after its records.
func (h Headspace) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	var out []*benchfmt.Result
	keep := env.collect(&out)
	dev, err := env.device().Open(true)
	if err != nil {
		return nil, fmt.Errorf("opening the device: %w", err)
	}
	defer dev.Close()
	for _, impl := range h.Transforms {
		env.start("analyze " + impl)
		cfg := h.Analysis
		cfg.Pipeline.Impl = impl
		rep, err := analysis.Run(ctx, cfg, dev)
		if err != nil {
			return out, fmt.Errorf("analysis with %s transforms: %w", impl, err)
		}
		for _, r := range HeadspaceRecords(impl, rep) {
			if err := keep(r); err != nil {
				return out, err
			}
		}
		send(env.Details.Analysis, rep)
	}
	return out, nil
}

// HeadspaceRecords is one analysis's records: every step in order
// (Headspace/transforms=…/phase=…: phase=fill for the first step, the
// pipeline's fill; loader before the switch; switch for the step of the
// switch itself; cached after it), the input wait over the steps of
// phase loader (HeadspaceInput/transforms=…: input-wait-ns, wall-ns),
// and each stage's statistics at the switch
// (HeadspaceStage/transforms=…/stage=…: tasks, workers, total-ns,
// average-ns, and occupancy, of its output queue), from which the
// verdict is judged again (analysis.Judge).
func HeadspaceRecords(impl string, rep analysis.Report) []*benchfmt.Result {
	prefix := "BenchmarkHeadspace/transforms=" + impl + "/phase="
	var out []*benchfmt.Result
	for i, d := range rep.StepTimes {
		phase := "loader"
		switch {
		case i == 0:
			phase = "fill"
		case i == rep.Switch:
			phase = "switch"
		case i > rep.Switch:
			phase = "cached"
		}
		out = append(out, &benchfmt.Result{Name: benchfmt.Name(prefix + phase), Iters: 1,
			Values: []benchfmt.Value{{Value: float64(d), Unit: "ns/op"}}})
	}
	out = append(out, &benchfmt.Result{Name: benchfmt.Name("BenchmarkHeadspaceInput/transforms=" + impl), Iters: 1,
		Values: []benchfmt.Value{{Value: float64(rep.Verdict.Wait), Unit: "input-wait-ns"}, {Value: float64(rep.Verdict.Wall), Unit: "wall-ns"}}})
	for i, st := range rep.Stats.Stages {
		occ := 0.0
		if i < len(rep.Stats.Queues) {
			occ = rep.Stats.Queues[i].Occupancy
		}
		out = append(out, &benchfmt.Result{Name: benchfmt.Name("BenchmarkHeadspaceStage/transforms=" + impl + "/stage=" + st.Name), Iters: 1,
			Values: []benchfmt.Value{{Value: float64(st.Tasks), Unit: "tasks"}, {Value: float64(st.Workers), Unit: "workers"},
				{Value: float64(st.Total), Unit: "total-ns"}, {Value: float64(st.Average), Unit: "average-ns"}, {Value: occ, Unit: "occupancy"}}})
	}
	return out
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
