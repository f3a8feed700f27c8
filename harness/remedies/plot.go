package remedies

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/headspace-bench/headspace/harness/report"
)

// SavePlot draws samples/s against requests in flight, a panel per
// dataset (a row per format, a column per layout), a solid line per
// round trip measured and a dashed one predicted, the device's rate
// dotted, to path (.png) atomically.
func SavePlot(path string, r Report) error {
	if filepath.Ext(path) != ".png" {
		return fmt.Errorf("remedies plot %s: want a .png path", path)
	}
	var formats, layouts []string
	for _, d := range r.Datasets {
		if !slices.Contains(formats, d.Format) {
			formats = append(formats, d.Format)
		}
		if !slices.Contains(layouts, d.Layout) {
			layouts = append(layouts, d.Layout)
		}
	}
	if len(formats) == 0 {
		return fmt.Errorf("remedies plot %s: no datasets", path)
	}
	rtts, concs := r.RTTs(), r.Concurrencies()
	plots := make([][]*plot.Plot, len(formats))
	for i, f := range formats {
		plots[i] = make([]*plot.Plot, len(layouts))
		for j, l := range layouts {
			pl, err := r.panel(f, l, rtts, concs, i == 0 && j == 0)
			if err != nil {
				return err
			}
			plots[i][j] = pl
		}
	}
	w, h := vg.Length(len(layouts))*3.6*vg.Inch, vg.Length(len(formats))*3*vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(formats), Cols: len(layouts), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("remedies plot %s: %w", path, err)
	}
	return report.SaveCanvas(path, &buf)
}

// panel is the plot of one format and layout: samples/s against requests
// in flight, a line per round trip (dashed: predicted) and the device's
// rate; the first panel carries the legend.
func (r Report) panel(f, l string, rtts []time.Duration, concs []int, first bool) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = f + ", " + l
	pl.X.Label.Text = "requests in flight"
	pl.Y.Label.Text = "samples/s"
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = plot.ConstantTicks(ticks(concs))
	pl.Y.Min = 0
	d := r.dataset(f, l)
	if d == nil {
		return pl, nil
	}
	for k, rtt := range rtts {
		var meas, pred plotter.XYs
		for _, c := range concs {
			if p := d.point(rtt, c); p != nil {
				meas = append(meas, plotter.XY{X: float64(c), Y: p.Measured})
				if !math.IsInf(p.Predicted.SamplesPerSec, 1) {
					pred = append(pred, plotter.XY{X: float64(c), Y: p.Predicted.SamplesPerSec})
				}
			}
		}
		if len(meas) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(meas)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color, points.Shape = plotutil.Color(k), plotutil.Color(k), plotutil.Shape(k)
		pl.Add(line, points)
		if first {
			pl.Legend.Add("rtt "+rtt.String(), line, points)
		}
		if rtt > 0 && len(pred) > 0 {
			pline, err := plotter.NewLine(pred)
			if err != nil {
				return nil, err
			}
			pline.Color, pline.Dashes = plotutil.Color(k), []vg.Length{vg.Points(4), vg.Points(3)}
			pl.Add(pline)
		}
	}
	dev, err := plotter.NewLine(plotter.XYs{{X: float64(concs[0]), Y: r.Device}, {X: float64(concs[len(concs)-1]), Y: r.Device}})
	if err != nil {
		return nil, err
	}
	dev.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	pl.Add(dev)
	if first {
		pl.Legend.Add("device", dev)
		pl.Legend.Top, pl.Legend.Left = true, true
	}
	return pl, nil
}

func ticks(concs []int) []plot.Tick {
	var out []plot.Tick
	for _, c := range concs {
		out = append(out, plot.Tick{Value: float64(c), Label: fmt.Sprint(c)})
	}
	return out
}
