package node

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Row is one accelerator count of a node file, medians over its runs:
// the pipeline's (level none) AU, smallest rank AU, samples/s, cores
// used, CPU per sample, input wait per step, run-queue delay and the
// other processes' cores and runnable threads, and the bound's (level
// host) AU. A value not measured is NaN.
type Row struct {
	Accelerators                      int
	AU, AUMin, SamplesPerSec, Cores   float64
	CPUPerSample, InputWait, RunDelay float64
	OtherCores, OtherThreads          float64
	BytesPerSec, Requests             float64
	HostAU                            float64
	Runs                              int
	Partial                           bool
	// Stall is the longest step of a run of the count (either level)
	// that stalled for less than the barrier's timeout, 0 where none did:
	// its time went to the barrier, not to the loader.
	Stall time.Duration
}

// Figures are one node record's figures as Rows reads them: its point,
// whether its run was partial, and the values a finished run's node
// record holds, NaN where it holds none (workloads.NodeCodec decodes
// them from a result file or a run's records).
type Figures struct {
	Point                                         Point
	Partial                                       bool
	AU, AUMin, SamplesPerSec, Cores, CPUPerSample float64
	InputWait, RunDelay, OtherCores, OtherThreads float64
	BytesPerSec, Requests                         float64
	// Stall is the longest step where the run stalled, 0 where it did
	// not (Outcome.Stall).
	Stall time.Duration
}

// Rows are the node records' figures (of one kind: ours or the peer's),
// in the order the runs made them, as one Row per accelerator count, in
// increasing order: medians over the finished runs.
func Rows(records []Figures) []Row {
	type key struct {
		n  int
		lv level.Level
	}
	vals := map[key][]Figures{}
	runs := map[int]int{}
	partial := map[int]bool{}
	stalled := map[int]time.Duration{}
	var ns []int
	for _, f := range records {
		p := f.Point
		if !slices.Contains(ns, p.Accelerators) {
			ns = append(ns, p.Accelerators)
		}
		stalled[p.Accelerators] = max(stalled[p.Accelerators], f.Stall)
		if f.Partial {
			partial[p.Accelerators] = true
			continue
		}
		if p.Level == level.None {
			runs[p.Accelerators]++
		}
		vals[key{p.Accelerators, p.Level}] = append(vals[key{p.Accelerators, p.Level}], f)
	}
	slices.Sort(ns)
	med := func(n int, lv level.Level, get func(Figures) float64) float64 {
		var v []float64
		for _, f := range vals[key{n, lv}] {
			if x := get(f); !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			return math.NaN()
		}
		return summary.Median(v)
	}
	out := make([]Row, 0, len(ns))
	for _, n := range ns {
		none := func(get func(Figures) float64) float64 { return med(n, level.None, get) }
		out = append(out, Row{
			Accelerators: n,
			AU:           none(func(f Figures) float64 { return f.AU }), AUMin: none(func(f Figures) float64 { return f.AUMin }),
			SamplesPerSec: none(func(f Figures) float64 { return f.SamplesPerSec }), Cores: none(func(f Figures) float64 { return f.Cores }),
			CPUPerSample: none(func(f Figures) float64 { return f.CPUPerSample }), InputWait: none(func(f Figures) float64 { return f.InputWait }),
			RunDelay: none(func(f Figures) float64 { return f.RunDelay }), OtherCores: none(func(f Figures) float64 { return f.OtherCores }),
			OtherThreads: none(func(f Figures) float64 { return f.OtherThreads }),
			BytesPerSec:  none(func(f Figures) float64 { return f.BytesPerSec }), Requests: none(func(f Figures) float64 { return f.Requests }),
			HostAU: med(n, level.Host, func(f Figures) float64 { return f.AU }), Runs: runs[n], Partial: partial[n],
			Stall: stalled[n],
		})
	}
	return out
}

// cell formats v, "–" where not measured.
func cell(format string, v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

// WriteTable writes rows as a plain-text table, with the predicted AU
// beside where predicted holds one for the count.
func WriteTable(w io.Writer, rows []Row, predicted map[int]float64) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%12s %7s %7s %8s %11s %9s %11s %13s %11s %8s %8s\n", "accelerators", "au", "au-min", "host-au", "samples/s", "cpu-cores", "other-cores", "other-threads", "input-wait", "delay-%", "pred-au")
	for _, r := range rows {
		pred := byCount(predicted)(r)
		note := ""
		if r.Partial {
			note = "  (a partial run)"
		}
		if r.Stall > 0 {
			note += fmt.Sprintf("  (a stall: one step took %v, at the barrier, not the loader)", r.Stall.Round(time.Millisecond))
		}
		fmt.Fprintf(&b, "%12d %7s %7s %8s %11s %9s %11s %13s %11s %8s %8s%s\n", r.Accelerators,
			cell("%.3f", r.AU), cell("%.3f", r.AUMin), cell("%.3f", r.HostAU), cell("%.1f", r.SamplesPerSec),
			cell("%.2f", r.Cores), cell("%.2f", r.OtherCores), cell("%.2f", r.OtherThreads), cell("%.3gms", r.InputWait/1e6), cell("%.1f", r.RunDelay), cell("%.3f", pred), note)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MaxAccelerators is the largest count of rows whose smallest rank AU is
// at least minAU (0 when none).
func MaxAccelerators(rows []Row, minAU float64) int {
	best := 0
	for _, r := range rows {
		if !math.IsNaN(r.AUMin) && r.AUMin >= minAU {
			best = max(best, r.Accelerators)
		}
	}
	return best
}

// AnswerLine is the answer as the command prints and the report records
// it: "node-max-accelerators: N".
func AnswerLine(n int) string { return fmt.Sprintf("node-max-accelerators: %d", n) }

// WriteBounds writes what runs out first: each resource's bound, first
// the one that binds.
func WriteBounds(w io.Writer, bounds []Bound) error {
	var b strings.Builder
	for i, bd := range bounds {
		at := "never"
		if !math.IsInf(bd.Accelerators, 1) {
			at = fmt.Sprintf("at %.2f accelerators", bd.Accelerators)
		}
		lead := "  "
		if i == 0 {
			lead = "* "
		}
		fmt.Fprintf(&b, "%s%-9s runs out %s: each accelerator asks %s; there is %s\n", lead, bd.Resource, at, bd.Demand, bd.Have)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Plot draws AU against accelerators: the pipeline's smallest rank AU
// and mean AU, the bound's (host), the predicted AU where given, the
// PyTorch DDP peer's smallest rank AU where peer has rows, and the minAU
// line.
func Plot(title string, rows []Row, predicted map[int]float64, peer []Row, minAU float64) (*plot.Plot, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("node plot: no accelerator counts")
	}
	pl := plot.New()
	pl.Title.Text = title
	pl.X.Label.Text = "accelerators (rank processes)"
	pl.Y.Label.Text = "AU (compute time / total time)"
	series := plotSeries(predicted, peer)
	for i, s := range series {
		if err := s.add(pl, i, rows); err != nil {
			return nil, err
		}
	}
	lo, hi := float64(rows[0].Accelerators), float64(rows[len(rows)-1].Accelerators)
	th, err := plotter.NewLine(plotter.XYs{{X: lo, Y: minAU}, {X: hi, Y: minAU}})
	if err != nil {
		return nil, err
	}
	th.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	th.Color = plotutil.Color(len(series))
	pl.Add(th)
	pl.Legend.Add(fmt.Sprintf("AU %.2f (kept busy)", minAU), th)
	pl.Legend.Left = true
	pl.Y.Min, pl.Y.Max = 0, 1.05
	return pl, nil
}

// auSeries is a line of Plot: an AU of each row, NaN where it has none.
type auSeries struct {
	name string
	get  func(Row) float64
}

// plotSeries are Plot's lines: the pipeline's smallest and mean AU, the
// bound's, and the predicted and the peer's where given.
func plotSeries(predicted map[int]float64, peer []Row) []auSeries {
	series := []auSeries{
		{"pipeline (none), smallest rank", func(r Row) float64 { return r.AUMin }},
		{"pipeline (none), mean", func(r Row) float64 { return r.AU }},
		{"bound (host)", func(r Row) float64 { return r.HostAU }},
	}
	if len(predicted) > 0 {
		series = append(series, auSeries{"predicted", byCount(predicted)})
	}
	if len(peer) > 0 {
		peerAU := map[int]float64{}
		for _, r := range peer {
			peerAU[r.Accelerators] = r.AUMin
		}
		series = append(series, auSeries{"PyTorch DDP peer, smallest rank", byCount(peerAU)})
	}
	return series
}

// byCount is the value of m at a row's accelerator count, NaN where m has
// none.
func byCount(m map[int]float64) func(Row) float64 {
	return func(r Row) float64 {
		if v, ok := m[r.Accelerators]; ok {
			return v
		}
		return math.NaN()
	}
}

// add draws s over rows on pl in the i-th color and shape, with its
// legend; nothing where no row has a value.
func (s auSeries) add(pl *plot.Plot, i int, rows []Row) error {
	var pts plotter.XYs
	for _, r := range rows {
		if v := s.get(r); !math.IsNaN(v) {
			pts = append(pts, plotter.XY{X: float64(r.Accelerators), Y: v})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	line, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	line.Color, sc.Color, sc.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
	if s.name == "predicted" {
		line.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	}
	pl.Add(line, sc)
	pl.Legend.Add(s.name, line, sc)
	return nil
}

// SavePlot writes Plot's figure to path (.png or .svg) atomically.
func SavePlot(path, title string, rows []Row, predicted map[int]float64, peer []Row, minAU float64) error {
	pl, err := Plot(title, rows, predicted, peer, minAU)
	if err != nil {
		return err
	}
	if err := report.Save(pl, path, 8*vg.Inch, 5*vg.Inch); err != nil {
		return fmt.Errorf("node %w", err)
	}
	return nil
}

// WriteMarkdown writes the node's report: the command that made it, the
// table, the answer line and what runs out first, and the PyTorch DDP
// peer's table and answer where peer has rows.
func WriteMarkdown(w io.Writer, command string, rows []Row, predicted map[int]float64, peer []Row, minAU float64, bounds []Bound) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# A node of accelerators\n\nMeasured with:\n\n    %s\n\n```\n", command)
	if err := WriteTable(&b, rows, predicted); err != nil {
		return err
	}
	fmt.Fprintf(&b, "```\n\n%s (every rank's AU ≥ %.2f)\n", AnswerLine(MaxAccelerators(rows, minAU)), minAU)
	if len(bounds) > 0 {
		b.WriteString("\nWhat runs out first (from the smallest node's run):\n\n```\n")
		if err := WriteBounds(&b, bounds); err != nil {
			return err
		}
		b.WriteString("```\n")
	}
	if len(peer) > 0 {
		b.WriteString("\nThe PyTorch DDP peer, the same node:\n\n```\n")
		if err := WriteTable(&b, peer, nil); err != nil {
			return err
		}
		fmt.Fprintf(&b, "```\n\npeer %s\n", AnswerLine(MaxAccelerators(peer, minAU)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
