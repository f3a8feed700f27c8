package reproduce

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/harness/timeline"
)

// series is one set of bars of a grouped bar chart; NaN is a missing bar.
type series struct {
	name   string
	values []float64
}

// barChart draws groups of bars side by side, one colour per series, with a
// value label over each bar.
func barChart(title, ylabel string, groups []string, ss []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	width := vg.Points(22)
	ymax := 0.0
	for i, s := range ss {
		var vals plotter.Values
		var pos []int
		for j, v := range s.values {
			if j < len(groups) && !math.IsNaN(v) {
				vals = append(vals, v)
				pos = append(pos, j)
				ymax = max(ymax, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		offset := width * vg.Length(float64(i)-float64(len(ss)-1)/2)
		// One chart per bar keeps a missing bar from shifting the others.
		for k, v := range vals {
			b, err := plotter.NewBarChart(plotter.Values{v}, width)
			if err != nil {
				return nil, fmt.Errorf("bar chart %q: %w", title, err)
			}
			b.XMin = float64(pos[k])
			b.Offset = offset
			b.Color = plotutil.Color(i)
			b.LineStyle.Width = 0
			p.Add(b)
			if k == 0 {
				p.Legend.Add(s.name, b)
			}
			labels, err := plotter.NewLabels(plotter.XYLabels{
				XYs:    []plotter.XY{{X: float64(pos[k]), Y: v}},
				Labels: []string{fmt.Sprintf("%.2f", v)},
			})
			if err != nil {
				return nil, err
			}
			for li := range labels.TextStyle {
				labels.TextStyle[li].XAlign = -0.5
				labels.TextStyle[li].YAlign = 0
			}
			labels.Offset = vg.Point{X: offset, Y: vg.Points(1)}
			p.Add(labels)
		}
	}
	p.NominalX(groups...)
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	p.Y.Min = 0
	p.Y.Max = 1.35 * max(ymax, 1) // room for the legend above the bars
	p.Legend.Top = true
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	return p, nil
}

// saveTimeline draws tl as base.png and base.svg, sized to its tracks.
func saveTimeline(tl *timeline.Timeline, base string) error {
	tracks := len(tl.DisplayTracks())
	if err := tl.WritePNG(base+".png", 1200, 60+28*tracks); err != nil {
		return err
	}
	return tl.WriteSVG(base+".svg", 900, 45+21*tracks)
}
