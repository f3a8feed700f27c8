package peer

import (
	"errors"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/report"
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
		base := prefix + "-" + PlotNames[i]
		if err := report.SaveBoth(p, base, 6*vg.Inch, 4*vg.Inch); err != nil {
			return paths, err
		}
		paths = append(paths, base+".png", base+".svg")
	}
	return paths, nil
}

func plotOne(rows []Row, title, ylabel string, y func(Row) float64) (*plot.Plot, error) {
	pts := make([]loadbench.WorkerPoint, len(rows))
	for i, r := range rows {
		pts[i] = loadbench.WorkerPoint{Series: r.Impl, Workers: r.Workers, Y: y(r)}
	}
	return loadbench.PlotWorkers(title, ylabel, pts)
}
