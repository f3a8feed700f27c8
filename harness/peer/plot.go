package peer

import (
	"errors"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/harness/atomicfile"
)

// PlotNames are the figures Plots draws, as suffixes of its prefix.
var PlotNames = []string{"throughput", "ttfb"}

// Plots writes prefix-throughput (median samples/s against workers) and
// prefix-ttfb (median time to first batch against workers), one line per
// implementation, each as .png and .svg, atomically. It returns the paths,
// PNG before SVG for each figure.
func Plots(rows []Row, prefix, title string) ([]string, error) {
	if len(rows) == 0 {
		return nil, errors.New("peer: nothing to plot")
	}
	figs := []struct {
		ylabel string
		y      func(Row) float64
	}{
		{"samples/s after the first batch (median)", func(r Row) float64 { return r.SamplesPerSec }},
		{"time to first batch (s, median)", func(r Row) float64 { return r.TTFB.Seconds() }},
	}
	var paths []string
	for i, f := range figs {
		p, err := plotOne(rows, title, f.ylabel, f.y)
		if err != nil {
			return paths, err
		}
		for _, format := range []string{"png", "svg"} {
			wt, err := p.WriterTo(6*vg.Inch, 4*vg.Inch, format)
			if err != nil {
				return paths, err
			}
			path := prefix + "-" + PlotNames[i] + "." + format
			if err := atomicfile.WriteTo(path, wt); err != nil {
				return paths, err
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}

func plotOne(rows []Row, title, ylabel string, y func(Row) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "workers"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	var impls []string
	for _, r := range rows {
		if !slices.Contains(impls, r.Impl) {
			impls = append(impls, r.Impl)
		}
		if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == float64(r.Workers) }) {
			ticks = append(ticks, plot.Tick{Value: float64(r.Workers), Label: strconv.Itoa(r.Workers)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if len(ticks) == 1 {
		// One worker count: widen the axis around it so the points show.
		p.X.Min, p.X.Max = ticks[0].Value/2, ticks[0].Value*2
	}
	for i, impl := range impls {
		var pts plotter.XYs
		for _, r := range rows {
			if r.Impl == impl {
				pts = append(pts, plotter.XY{X: float64(r.Workers), Y: y(r)})
			}
		}
		slices.SortFunc(pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(impl, line, points)
	}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p, nil
}
