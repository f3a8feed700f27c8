package loadbench

import (
	"fmt"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/harness/atomicfile"
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
		wt, err := p.WriterTo(6*vg.Inch, 4*vg.Inch, "png")
		if err != nil {
			return paths, err
		}
		if err := atomicfile.WriteTo(path, wt); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func plotOne(ms []Measurement, title, ylabel string, y func(Measurement) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "workers"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	var modes []string
	for _, m := range ms {
		if !slices.Contains(modes, m.Mode) {
			modes = append(modes, m.Mode)
		}
		if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == float64(m.Workers) }) {
			ticks = append(ticks, plot.Tick{Value: float64(m.Workers), Label: strconv.Itoa(m.Workers)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	for i, mode := range modes {
		var pts plotter.XYs
		for _, m := range ms {
			if m.Mode == mode {
				pts = append(pts, plotter.XY{X: float64(m.Workers), Y: y(m)})
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
		p.Legend.Add(mode, line, points)
	}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p, nil
}
