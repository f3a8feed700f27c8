package timeline

import (
	"fmt"
	"image"
	"image/color"

	"gonum.org/v1/plot"

	"github.com/headspace-bench/headspace/harness/report"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// dpi is the resolution of PNG charts: fonts are sized in points, so 96 dpi
// keeps 12 pt labels legible at typical widths.
const dpi = 96

// WritePNG draws the timeline as a Gantt chart of width×height pixels and
// writes it to path as PNG, atomically (temporary file, then rename).
func (t *Timeline) WritePNG(path string, width, height int) error {
	if width <= 0 || height <= 0 {
		return fmt.Errorf("timeline: bad PNG size %dx%d", width, height)
	}
	p, err := t.plot()
	if err != nil {
		return err
	}
	c := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, width, height))), vgimg.UseDPI(dpi))
	p.Draw(draw.New(c))
	return report.SaveCanvas(path, vgimg.PngCanvas{Canvas: c})
}

// WriteSVG draws the timeline as a Gantt chart of width×height points
// (1/72 inch) and writes it to path as SVG, atomically (temporary file,
// then rename).
func (t *Timeline) WriteSVG(path string, width, height int) error {
	if width <= 0 || height <= 0 {
		return fmt.Errorf("timeline: bad SVG size %dx%d", width, height)
	}
	p, err := t.plot()
	if err != nil {
		return err
	}
	c := vgsvg.New(vg.Length(width), vg.Length(height))
	p.Draw(draw.New(c))
	return report.SaveCanvas(path, c)
}

// plot builds the Gantt chart.
func (t *Timeline) plot() (*plot.Plot, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	tracks := t.DisplayTracks()
	p := plot.New()
	p.Title.Text = t.Name
	p.X.Label.Text = "time (s)"
	p.X.Min = 0
	p.X.Max = t.end().Seconds()
	if p.X.Max <= 0 {
		p.X.Max = 1
	}
	n := len(tracks)
	p.Y.Min, p.Y.Max = -0.5, float64(max(n, 1))-0.5
	if n > 0 {
		// NominalY puts name i at y = i, bottom up; the first track goes
		// on top.
		names := make([]string, n)
		for i, tr := range tracks {
			names[n-1-i] = tr
		}
		p.NominalY(names...)
	}
	row := make(map[string]int, n)
	for i, tr := range tracks {
		row[tr] = n - 1 - i
	}
	p.Add(&gantt{spans: t.Spans, row: row, rows: n, xmax: p.X.Max})
	return p, nil
}

// gantt is a plot.Plotter drawing one band per track and one box per span.
type gantt struct {
	spans []Span
	row   map[string]int
	rows  int
	xmax  float64
}

var band = color.RGBA{0xf2, 0xf2, 0xf2, 0xff}

// Plot implements plot.Plotter.
func (g *gantt) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	const half = 0.38 // half the height of a box, in rows
	edge := draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}
	box := func(clr color.Color, x0, x1, y float64, outline bool) {
		l, r := trX(x0), trX(x1)
		if r-l < 0.3 { // keep very short spans visible as hairlines
			r = l + 0.3
		}
		b, t := trY(y-half), trY(y+half)
		c.FillPolygon(clr, []vg.Point{{X: l, Y: b}, {X: r, Y: b}, {X: r, Y: t}, {X: l, Y: t}})
		if outline && r-l > 2 {
			// Separate back-to-back spans of the same colour.
			c.StrokeLines(edge, []vg.Point{{X: l, Y: b}, {X: l, Y: t}}, []vg.Point{{X: r, Y: b}, {X: r, Y: t}})
		}
	}
	for y := range g.rows {
		box(band, 0, g.xmax, float64(y), false)
	}
	for _, s := range g.spans {
		box(Color(s.Color), s.Start.Seconds(), s.End.Seconds(), float64(g.row[s.Track]), true)
	}
}

// DataRange implements plot.DataRanger.
func (g *gantt) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, g.xmax, -0.5, float64(max(g.rows, 1)) - 0.5
}
