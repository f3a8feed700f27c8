package analysis

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"

	"github.com/headspace-bench/headspace/harness/report"
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

// Save writes the plot to path (.png or .svg) atomically (report.Save).
func (r Report) Save(path string) error {
	p, err := r.Plot()
	if err != nil {
		return err
	}
	return report.Save(p, path, plotWidth, plotHeight)
}

// SaveBoth writes the plot to base.png and base.svg, saying where on
// stdout.
func (r Report) SaveBoth(stdout io.Writer, base string) error {
	p, err := r.Plot()
	if err != nil {
		return err
	}
	if err := report.SaveBoth(p, base, plotWidth, plotHeight); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nplot: %s.png, %s.svg\n", base, base)
	return nil
}

// The plot's size.
const plotWidth, plotHeight = 8 * vg.Inch, 4 * vg.Inch
