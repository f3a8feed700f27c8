package realpeer

import (
	"errors"

	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/report"
)

// Plot writes base.png and base.svg: the median samples/s after the first
// batch against workers, one line for ours and one for each peer, so that
// ours is beside each (report.SaveBoth, atomically). It returns the paths.
func (r Report) Plot(base string) ([]string, error) {
	var pts []loadbench.WorkerPoint
	for _, row := range r.Rows {
		if row.Runs > 0 {
			pts = append(pts, loadbench.WorkerPoint{Series: row.Peer, Workers: row.Workers, Y: row.SamplesPerSec})
		}
	}
	if len(pts) == 0 {
		return nil, errors.New("peers' plot: no run measured, nothing to plot")
	}
	p, err := loadbench.PlotWorkers("ours beside the real peers", "samples/s after the first batch (median)", pts)
	if err != nil {
		return nil, err
	}
	// The lines sit high (the y axis starts at 0): the legend goes below them.
	p.Legend.Top, p.Legend.Left = false, false
	if err := report.SaveBoth(p, base, 7*vg.Inch, 4.5*vg.Inch); err != nil {
		return nil, err
	}
	return []string{base + ".png", base + ".svg"}, nil
}
