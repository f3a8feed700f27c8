package workloads

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/blocks/device"
	"github.com/headspace-bench/headspace/harness/blocks/results"
	"github.com/headspace-bench/headspace/harness/engines/analysis"
)

// Headspace is SPDL's headspace analysis (documents 000 and 001): wrap the
// loader in a cache, as CacheDataLoader does, and compare the step time
// before and after the loop is fed from the cache.
type Headspace struct {
	Analysis analysis.Config
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

// DefaultHeadspace is SPDL's example (10 caches returned after 100
// batches, then 100 cached steps) on the document 003's pipeline.
func DefaultHeadspace() Headspace {
	a := analysis.DefaultConfig()
	a.TotalSteps = HeadspaceDocumentSteps
	return Headspace{Analysis: a}
}

// QuickHeadspace runs every code path in a second or two.
func QuickHeadspace() Headspace {
	h := DefaultHeadspace()
	p := &h.Analysis.Pipeline
	p.Dataset.Width, p.Dataset.Height, p.Transforms.Crop, p.Batch, p.Workers = 96, 96, 32, 8, 2
	h.Analysis.NumCaches, h.Analysis.ReturnCachesAfter, h.Analysis.StepsAfter = 2, 6, 6
	return h
}

// Run runs the analysis on dev and returns its report and its records.
func (h Headspace) Run(ctx context.Context, dev device.Device) (analysis.Report, []*benchfmt.Result, error) {
	rep, err := analysis.Run(ctx, h.Analysis, dev)
	if err != nil {
		return rep, nil, err
	}
	return rep, HeadspaceRecords(rep), nil
}

// HeadspaceRecords is a report's steps in benchmark format, one record a
// step, BenchmarkHeadspace/phase=loader before the switch and
// phase=cached after it, leaving out the first step of each phase (the
// pipeline's fill, and the switch itself).
func HeadspaceRecords(rep analysis.Report) []*benchfmt.Result {
	var rs []*benchfmt.Result
	for i, d := range rep.StepTimes {
		if i == 0 || i == rep.Switch {
			continue
		}
		phase := "loader"
		if i >= rep.Switch {
			phase = "cached"
		}
		rs = append(rs, &benchfmt.Result{Name: benchfmt.Name("BenchmarkHeadspace/phase=" + phase), Iters: 1,
			Values: []benchfmt.Value{{Value: float64(d), Unit: "ns/op"}}})
	}
	return rs
}

// Settings is the configuration block of the analysis's result file.
func (h Headspace) Settings() []results.Config {
	a := h.Analysis
	return append(PipelineSettings(a.Pipeline),
		results.Config{Key: "workers", Value: fmt.Sprint(a.Pipeline.Workers)},
		results.Config{Key: "transforms", Value: a.Pipeline.Impl},
		results.Config{Key: "num-caches", Value: fmt.Sprint(a.NumCaches)},
		results.Config{Key: "return-caches-after", Value: fmt.Sprint(a.ReturnCachesAfter)},
		results.Config{Key: "steps-after", Value: fmt.Sprint(a.StepsAfter)},
	)
}
