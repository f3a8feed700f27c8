package whatif

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/harness/report"
)

// Plot draws predicted steps/s against cores (1 to maxCores), a line per
// worker count, with the device's ceiling at the step multiplier as a
// dashed line and, where checks are given, the measured points of that
// multiplier as markers.
func Plot(p Profile, workers []int, maxCores int, stepScale float64, checks []Check) (*plot.Plot, error) {
	if maxCores < 1 || len(workers) == 0 {
		return nil, fmt.Errorf("whatif plot: %d cores, %d worker counts", maxCores, len(workers))
	}
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("What it would take: batch %d, step ×%g", p.Batch, stepScale)
	pl.X.Label.Text = "cores (GOMAXPROCS)"
	pl.Y.Label.Text = "predicted steps/s"
	for i, n := range workers {
		pts := make(plotter.XYs, maxCores)
		for c := 1; c <= maxCores; c++ {
			pts[c-1] = plotter.XY{X: float64(c), Y: p.Predict(Scenario{Cores: c, Workers: n, StepScale: stepScale}).StepsPerSec}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		pl.Add(line)
		pl.Legend.Add(fmt.Sprintf("%d workers", n), line)
		var meas plotter.XYs
		for _, c := range checks {
			s := c.Predicted.Scenario
			if s.Workers == n && s.StepScale == stepScale && len(c.Runs) > 0 {
				meas = append(meas, plotter.XY{X: float64(s.Cores), Y: c.Measured()})
			}
		}
		if len(meas) > 0 {
			sc, err := plotter.NewScatter(meas)
			if err != nil {
				return nil, err
			}
			sc.Color = plotutil.Color(i)
			sc.Shape = plotutil.Shape(i)
			pl.Add(sc)
			pl.Legend.Add(fmt.Sprintf("%d workers, measured", n), sc)
		}
	}
	ceil := p.DeviceRate(stepScale)
	if math.IsInf(ceil, 1) {
		pl.Legend.Top, pl.Legend.Left, pl.Y.Min = true, true, 0
		return pl, nil
	}
	dl, err := plotter.NewLine(plotter.XYs{{X: 1, Y: ceil}, {X: float64(maxCores), Y: ceil}})
	if err != nil {
		return nil, err
	}
	dl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	dl.Color = plotutil.Color(len(workers))
	pl.Add(dl)
	pl.Legend.Add("device ceiling", dl)
	pl.Legend.Top = true
	pl.Legend.Left = true
	pl.Y.Min = 0
	pl.Y.Max = math.Max(pl.Y.Max, ceil*1.15)
	return pl, nil
}

// SavePlot writes Plot's figure to path (.png or .svg) atomically.
func SavePlot(path string, p Profile, workers []int, maxCores int, stepScale float64, checks []Check) error {
	pl, err := Plot(p, workers, maxCores, stepScale, checks)
	if err != nil {
		return err
	}
	if err := report.Save(pl, path, 8*vg.Inch, 5*vg.Inch); err != nil {
		return fmt.Errorf("whatif %w", err)
	}
	return nil
}
