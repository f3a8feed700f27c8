package analysis

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"

	"github.com/headspace-bench/headspace/internal/atomicfile"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot draws step time over iterations with the switch to cached batches
// marked and each phase's median as a line, like the SPDL chapter's figure.
func (r Report) Plot() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Headspace analysis: %.1f ms (%.0f%%) per step", float64(r.Headspace())/1e6, r.HeadspacePercent())
	p.X.Label.Text = "iteration"
	p.Y.Label.Text = "step_time (ms)"
	pts := make(plotter.XYs, len(r.StepTimes))
	for i, d := range r.StepTimes {
		pts[i] = plotter.XY{X: float64(i), Y: float64(d) / 1e6}
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	line.Color = plotutil.Color(0)
	p.Add(line)
	p.Legend.Add("step_time", line)
	ymax := 0.0
	for _, pt := range pts {
		ymax = max(ymax, pt.Y)
	}
	sw, err := plotter.NewLine(plotter.XYs{{X: float64(r.Switch), Y: 0}, {X: float64(r.Switch), Y: ymax}})
	if err != nil {
		return nil, err
	}
	sw.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	sw.Color = plotutil.Color(1)
	p.Add(sw)
	p.Legend.Add("switch to cached batches", sw)
	for _, ph := range []struct {
		from, to int
		e        Estimate
		name     string
	}{{0, r.Switch, r.Before, "median before"}, {r.Switch, len(pts), r.After, "median after"}} {
		m, err := plotter.NewLine(plotter.XYs{{X: float64(ph.from), Y: float64(ph.e.Median) / 1e6}, {X: float64(ph.to), Y: float64(ph.e.Median) / 1e6}})
		if err != nil {
			return nil, err
		}
		m.Color = plotutil.Color(2)
		m.Width = vg.Points(2)
		p.Add(m)
	}
	p.Legend.Top = true
	p.Y.Min = 0
	return p, nil
}

// Save writes the plot to path (.png or .svg) atomically.
func (r Report) Save(path string) error {
	p, err := r.Plot()
	if err != nil {
		return err
	}
	return SavePlot(p, path, 8*vg.Inch, 4*vg.Inch)
}

// SavePlot writes p to path, its format chosen by the extension, through a
// temporary file and a rename, so a killed run leaves no half-written image.
func SavePlot(p *plot.Plot, path string, w, h vg.Length) error {
	ext := filepath.Ext(path)
	wt, err := p.WriterTo(w, h, ext[1:])
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return atomicfile.WriteKindTo(path, atomicfile.Figure, wt)
}
