package reproduce

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/analysis"
	reports "github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
	"github.com/headspace-bench/headspace/workloads"
)

// HeadspaceRun is one measured headspace analysis of document 000.
type HeadspaceRun struct {
	Name    string // "naive"
	Setup   string // the pipeline, in words
	Command string // the equivalent `headspace analyze` command
	// NumCaches, ReturnCachesAfter and StepsAfter are SPDL's settings.
	NumCaches, ReturnCachesAfter, StepsAfter int
	TotalSteps                               int
	Before, After                            analysis.Estimate
	Class, Stage, Reason                     string  // the verdict
	Share                                    float64 // input wait over wall time, before the switch
	Busiest                                  string
	Busy                                     float64
	Stages                                   []StageRow
	Plot                                     string // the step-time plot's link (PNG; an SVG beside it)
}

// StageRow is one pipeline stage's statistics at the switch.
type StageRow struct {
	Name      string
	Workers   int
	Tasks     int64
	Average   time.Duration
	Occupancy float64 // of the stage's output queue
}

// Headspace is the step time that free data loading would save.
func (r HeadspaceRun) Headspace() time.Duration { return r.Before.Median - r.After.Median }

// Percent is the headspace as a share of the step time before the switch.
func (r HeadspaceRun) Percent() float64 {
	if r.Before.Median <= 0 {
		return 0
	}
	return 100 * float64(r.Headspace()) / float64(r.Before.Median)
}

// HoursSaved is the headspace over TotalSteps, in hours.
func (r HeadspaceRun) HoursSaved() float64 {
	return (r.Headspace() * time.Duration(r.TotalSteps)).Hours()
}

// Significant says whether the two phases' confidence intervals are apart;
// false when either phase has too few steps for an interval.
func (r HeadspaceRun) Significant() bool {
	if !ciKnown(r.Before) || !ciKnown(r.After) {
		return false
	}
	return r.Before.Hi < r.After.Lo || r.After.Hi < r.Before.Lo
}

// ciKnown says whether e has a confidence interval: benchmath gives none
// (infinite bounds) for samples too small to reach 95%.
func ciKnown(e analysis.Estimate) bool {
	return e.Lo > 0 && e.Lo <= e.Median && e.Median <= e.Hi
}

// ciText is e's interval, or why there is none.
func ciText(e analysis.Estimate) string {
	if !ciKnown(e) {
		return "– (too few steps)"
	}
	return reports.Ms(e.Lo, 1) + " – " + reports.Ms(e.Hi, 1)
}

// Result000 is document 000's measured values.
type Result000 struct {
	Header Header
	Runs   []HeadspaceRun
}

// impls000 says what each transform implementation analysed is.
var impls000 = map[string]string{
	"naive": "the document 003's toy pipeline, step by step and allocating",
	"fast":  "the same transforms fused and in place",
}

// The report of document 000: its experiment, measured by measure000 and
// rendered by render000.
func init() {
	report(Doc{ID: "000", Name: "headspace", Title: "SPDL: Headspace Analysis", Summary: "SPDL's headspace analysis (its source, 001, is the same chapter)", Source: "000 and its source 001 (`000_b26ccd1800a65d07.txt`, `001_bfd1d3776b60ebdb.txt`)", Experiment: workloads.Headspace{}, measure: measure000, render: render000})
}

func measure000(ctx context.Context, s *settings, t *tracker) (measurement, error) {
	h := workloads.Sized[workloads.Headspace](s.size())
	h.Analysis.Pipeline.Workers = s.Workers
	t.begin(len(h.Transforms))
	return s.measure(ctx, h, t, resultfile.Config{Key: "step", Value: s.Step.String()})
}

func render000(f *resultFile, p *page) ([]byte, error) {
	res := Result000{Header: f.header()}
	raw, crop, batch, workers := f.str("raw-size"), f.integer("crop"), f.integer("batch"), f.integer("workers")
	numCaches, after, stepsAfter, total := f.integer("num-caches"), f.integer("return-caches-after"), f.integer("steps-after"), f.integer("total-steps")
	step := f.str("step")
	impls := strings.Split(f.str("transforms"), ",")
	if err := f.check(); err != nil {
		return nil, err
	}
	out, err := decoded(f, workloads.Headspace{}.Codec())
	if err != nil {
		return nil, err
	}
	for _, impl := range impls {
		i := slices.IndexFunc(out.Analyses, func(a workloads.HeadspaceAnalysis) bool { return a.Transforms == impl })
		if i < 0 {
			return nil, &FileError{Path: f.path, Err: fmt.Errorf("the %s analysis lacks the steps of a phase", impl)}
		}
		rep, err := steps000(f, out.Analyses[i])
		if err != nil {
			return nil, err
		}
		stats := rep.Stats
		v := analysis.Judge(stats, rep.Verdict.Wait, rep.Verdict.Wall)
		png, link := p.figure("000", impl+".png")
		svg, _ := p.figure("000", impl+".svg")
		for _, path := range []string{png, svg} {
			if err := rep.Save(path); err != nil {
				return nil, fmt.Errorf("analysis with %s transforms: %w", impl, err)
			}
		}
		run := HeadspaceRun{
			Name:  impl,
			Setup: fmt.Sprintf("%s transforms (%s), raw %s, crop %d, batch %d, %d workers", impl, why000(impl), strings.Replace(raw, "x", "×", 1), crop, batch, workers),
			Command: fmt.Sprintf("headspace analyze --transforms %s --workers %d --raw-size %s --crop %d --batch %d --step %s --num-caches %d --return-caches-after %d --steps-after %d --total-steps %d",
				impl, workers, raw, crop, batch, step, numCaches, after, stepsAfter, total),
			NumCaches: numCaches, ReturnCachesAfter: after, StepsAfter: stepsAfter, TotalSteps: total,
			Before: rep.Before, After: rep.After,
			Class: string(v.Class), Stage: v.Stage, Reason: v.Reason, Share: v.Share,
			Busiest: v.Busiest, Busy: v.Busy,
			Plot: link,
		}
		for i, st := range stats.Stages {
			run.Stages = append(run.Stages, StageRow{Name: st.Name, Workers: st.Workers, Tasks: st.Tasks, Average: st.Average, Occupancy: stats.Queues[i].Occupancy})
		}
		res.Runs = append(res.Runs, run)
	}
	return markdown(res)
}

// steps000 is one transform's analysis read back, with each phase's
// estimate: its step times before the switch (but the first, the
// pipeline's fill) and after it.
func steps000(f *resultFile, a workloads.HeadspaceAnalysis) (analysis.Report, error) {
	rep := a.Report
	var before, cached []float64
	for i, d := range rep.StepTimes {
		switch {
		case i > 0 && i < rep.Switch:
			before = append(before, float64(d))
		case i > rep.Switch:
			cached = append(cached, float64(d))
		}
	}
	if rep.Switch >= len(rep.StepTimes) || len(before) == 0 || len(cached) == 0 {
		return rep, &FileError{Path: f.path, Err: fmt.Errorf("the %s analysis lacks the steps of a phase", a.Transforms)}
	}
	rep.Before, rep.After = estimate000(before), estimate000(cached)
	return rep, nil
}

// why000 says what a transform implementation is.
func why000(impl string) string {
	if why, ok := impls000[impl]; ok {
		return why
	}
	return "unknown"
}

// estimate000 is the median step time and its 95% confidence interval
// (package summary, as analysis computes them); Lo and Hi are 0 where the
// sample is too small for an interval.
func estimate000(ns []float64) analysis.Estimate {
	s := summary.Of(ns)
	e := analysis.Estimate{Median: time.Duration(s.Median), N: s.N}
	if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) {
		e.Lo, e.Hi = time.Duration(s.Lo), time.Duration(s.Hi)
	}
	return e
}

// WriteMarkdown writes document 000's report.
func (r Result000) WriteMarkdown(w io.Writer) error {
	m := &md{w: w}
	writeHeader(m, r.Header)
	m.para("SPDL's headspace analysis wraps the training loop's data loader in `CacheDataLoader`: after `return_caches_after` batches from the real loader it replays `num_caches` cached ones, so the step time before and after the switch says how much faster training would go if data loading were free. `headspace analyze` does the same with `harness/cacheloader` (`NewLoader` is `CacheDataLoader`, `Iterator` is `cache_iterator`) around the document 003's toy pipeline, on the device above, once with each transform implementation.")
	m.para("## The estimate, the document's and ours")
	r.writeEstimate(m)
	for _, x := range r.Runs {
		writeHeadspaceRun(m, x)
	}
	r.writeDifferences(m)
	return m.err
}

// writeEstimate writes the document's estimate beside each run's.
func (r Result000) writeEstimate(m *md) {
	head := []string{"", "the document"}
	for _, x := range r.Runs {
		head = append(head, "ours: "+x.Name, "÷ document")
	}
	row := func(label, doc string, docV float64, cell func(HeadspaceRun) (string, float64)) []string {
		out := []string{label, doc}
		for _, x := range r.Runs {
			s, v := cell(x)
			out = append(out, s, ratio(v, docV))
		}
		return out
	}
	rows := [][]string{
		row("step time fed by the loader", fmt.Sprintf("about %d ms (the phase is not given)", workloads.HeadspaceDocumentStep.Milliseconds()), float64(workloads.HeadspaceDocumentStep.Milliseconds()), func(x HeadspaceRun) (string, float64) {
			return reports.Ms(x.Before.Median, 1), float64(x.Before.Median) / 1e6
		}),
		row("step time on cached batches", "–", math.NaN(), func(x HeadspaceRun) (string, float64) {
			return reports.Ms(x.After.Median, 1), math.NaN()
		}),
		row("headspace per step", fmt.Sprintf("%d ms", workloads.HeadspaceDocumentHeadspace.Milliseconds()), float64(workloads.HeadspaceDocumentHeadspace.Milliseconds()), func(x HeadspaceRun) (string, float64) {
			return reports.Ms(x.Headspace(), 1), float64(x.Headspace()) / 1e6
		}),
		row("headspace, share of the step time", fmt.Sprintf("%.0f%%", workloads.HeadspaceDocumentPercent), workloads.HeadspaceDocumentPercent, func(x HeadspaceRun) (string, float64) {
			return fmt.Sprintf("%.1f%%", x.Percent()), x.Percent()
		}),
		row(fmt.Sprintf("saved over %s steps", thousands(workloads.HeadspaceDocumentSteps)), fmt.Sprintf("%.1f h", workloads.HeadspaceDocumentHoursSaved), workloads.HeadspaceDocumentHoursSaved, func(x HeadspaceRun) (string, float64) {
			return fmt.Sprintf("%.2f h", x.HoursSaved()), x.HoursSaved()
		}),
		row("the two 95% confidence intervals", "–", math.NaN(), func(x HeadspaceRun) (string, float64) {
			switch {
			case x.Significant():
				return "apart: the headspace is real", math.NaN()
			case !ciKnown(x.Before) || !ciKnown(x.After):
				return "too few steps for an interval", math.NaN()
			}
			return "overlap: no headspace can be claimed", math.NaN()
		}),
		row("verdict", "–", math.NaN(), func(x HeadspaceRun) (string, float64) {
			return fmt.Sprintf("%s (input wait %.0f%% of the time), bounded by %s", x.Class, 100*x.Share, x.Stage), math.NaN()
		}),
	}
	align := "ll"
	for range r.Runs {
		align += "rr"
	}
	m.table(align, head, rows)
	m.para("The document's %.1f h at %d ms a step is about %s steps, the run the time saved is reckoned over here.", workloads.HeadspaceDocumentHoursSaved, workloads.HeadspaceDocumentHeadspace.Milliseconds(), thousands(workloads.HeadspaceDocumentSteps))
}

// writeHeadspaceRun writes one run: its phases' step times, its verdict,
// its stages and its plot.
func writeHeadspaceRun(m *md, x HeadspaceRun) {
	m.para("## %s transforms", x.Name)
	m.para("%s; %d batches from the loader, then %d steps on %d cached batches; the first step of each phase is left out (pipeline fill, the switch).", x.Setup, x.ReturnCachesAfter, x.StepsAfter, x.NumCaches)
	m.code("sh", x.Command)
	m.table("lrrr", []string{"phase", "median step time", "95% CI", "steps"}, [][]string{
		{"fed by the loader", reports.Ms(x.Before.Median, 1), ciText(x.Before), fmt.Sprint(x.Before.N)},
		{"cached batches", reports.Ms(x.After.Median, 1), ciText(x.After), fmt.Sprint(x.After.N)},
	})
	m.para("Verdict: **%s**, bounded by **%s**: %s. Busiest stage: %s (%.0f%% of the pipeline's task time).", x.Class, x.Stage, x.Reason, x.Busiest, 100*x.Busy)
	var st [][]string
	for _, s := range x.Stages {
		st = append(st, []string{s.Name, fmt.Sprint(s.Workers), fmt.Sprint(s.Tasks), durText(s.Average), fmt.Sprintf("%.0f%%", 100*s.Occupancy)})
	}
	m.table("lrrrr", []string{"stage", "workers", "tasks", "mean task time", "output queue ready"}, st)
	m.para("![step time, %s transforms](%s)", x.Name, x.Plot)
}

// writeDifferences writes where ours differs from the document.
func (r Result000) writeDifferences(m *md) {
	m.para("## Where ours differs from the document")
	var shares []string
	for _, x := range r.Runs {
		shares = append(shares, fmt.Sprintf("%.1f%% with `%s` transforms", x.Percent(), x.Name))
	}
	m.p("- **The pipeline.** The document's figure comes from a production pipeline it does not describe; ours is the document 003's toy pipeline, designed to starve the device. Its headspace is %s, against the document's %.0f%%. What is reproduced is the method — the cache wrapper, the estimate with confidence intervals, the hours saved — not the document's pipeline.", strings.Join(shares, ", "), workloads.HeadspaceDocumentPercent)
	m.p("- **The device** is emulated: its step is a timer wait, so the headspace is the input pipeline's alone (a real GPU also shares the host's cores with kernel launches).")
	m.p("- **The machine** has %d cores for loading; the document's does not say.", r.Header.Machine.Cores)
	m.p("")
}

// durText formats a task time in the unit that suits it.
func durText(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f µs", float64(d)/1e3)
}
