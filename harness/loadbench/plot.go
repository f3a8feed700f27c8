package loadbench

import (
	"fmt"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/harness/report"
)

// Plots writes prefix-ttfb.png (time to first batch against workers) and
// prefix-throughput.png (samples/s against workers), one line per mode, as
// the document's two figures, each atomically. It returns the paths.
func Plots(ms []Measurement, prefix, title string) ([]string, error) {
	if len(ms) == 0 {
		return nil, fmt.Errorf("loadbench: nothing to plot")
	}
	var paths []string
	for _, f := range []struct {
		name, ylabel string
		y            func(Measurement) float64
	}{
		{"ttfb", "time to first batch (s)", func(m Measurement) float64 { return m.TTFB.Seconds() }},
		{"throughput", "samples/s after the first batch", func(m Measurement) float64 { return m.SamplesPerSec }},
	} {
		p, err := plotOne(ms, title, f.ylabel, f.y)
		if err != nil {
			return paths, err
		}
		path := prefix + "-" + f.name + ".png"
		if err := report.Save(p, path, 6*vg.Inch, 4*vg.Inch); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func plotOne(ms []Measurement, title, ylabel string, y func(Measurement) float64) (*plot.Plot, error) {
	pts := make([]WorkerPoint, len(ms))
	for i, m := range ms {
		pts[i] = WorkerPoint{Series: m.Mode, Workers: m.Workers, Y: y(m)}
	}
	return PlotWorkers(title, ylabel, pts)
}

// WorkerPoint is one point of a figure against the worker count.
type WorkerPoint struct {
	Series  string // the line it belongs to, named in the legend
	Workers int
	Y       float64
}

// PlotWorkers draws pts against the worker count on a log axis with a tick
// at each count, one line per series in the order they first appear, the
// y axis from 0. It is the shape of SPDL's loader figures, shared by every
// loader comparison.
func PlotWorkers(title, ylabel string, pts []WorkerPoint) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "workers"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	var series []string
	for _, pt := range pts {
		if pt.Workers <= 0 {
			return nil, fmt.Errorf("loadbench: %s: %d workers cannot be plotted on a log axis", pt.Series, pt.Workers)
		}
		if !slices.Contains(series, pt.Series) {
			series = append(series, pt.Series)
		}
		if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == float64(pt.Workers) }) {
			ticks = append(ticks, plot.Tick{Value: float64(pt.Workers), Label: strconv.Itoa(pt.Workers)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if len(ticks) == 1 {
		// One worker count: widen the axis around it so the points show.
		p.X.Min, p.X.Max = ticks[0].Value/2, ticks[0].Value*2
	}
	for i, name := range series {
		var xys plotter.XYs
		for _, pt := range pts {
			if pt.Series == name {
				xys = append(xys, plotter.XY{X: float64(pt.Workers), Y: pt.Y})
			}
		}
		slices.SortFunc(xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(name, line, points)
	}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p, nil
}
