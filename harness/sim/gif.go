package sim

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"io"
	"sort"
	"strconv"
	"time"

	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/headspace-bench/headspace/harness/timeline"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// GIFOptions configures WriteGIF. The zero value gives the defaults.
type GIFOptions struct {
	// Width and Height are the image size in pixels; default 480×200.
	Width, Height int
	// Tick is the simulated time between frames; default 100ms, the
	// temporal resolution of the animations in the original post.
	Tick time.Duration
	// Delay is the display time of each frame in hundredths of a second;
	// default Tick in hundredths (10 for 100ms, i.e. real time), at least 1.
	Delay int
	// MaxFrames bounds the number of frames; default 6000. WriteGIF fails
	// rather than write more: raise Tick for long simulations.
	MaxFrames int
}

func (o GIFOptions) withDefaults() (GIFOptions, error) {
	if o.Width == 0 && o.Height == 0 {
		o.Width, o.Height = 480, 200
	}
	if o.Tick == 0 {
		o.Tick = 100 * time.Millisecond
	}
	if o.Delay == 0 {
		o.Delay = max(int((o.Tick+5*time.Millisecond)/(10*time.Millisecond)), 1)
	}
	if o.MaxFrames == 0 {
		o.MaxFrames = 6000
	}
	switch {
	case o.Width < 160 || o.Height < 100 || o.Width > 4096 || o.Height > 4096:
		return o, fmt.Errorf("sim: GIF size %dx%d outside 160x100 … 4096x4096", o.Width, o.Height)
	case o.Tick < 0 || o.Delay < 0 || o.MaxFrames < 0:
		return o, errors.New("sim: negative GIF option")
	}
	return o, nil
}

// Frames returns the number of frames WriteGIF draws for a simulation of
// length d: one per tick at 0, Tick, 2·Tick, … up to and including d, that
// is d/Tick + 1 (integer division), showing the state after all events at
// that instant.
func (o GIFOptions) Frames(d time.Duration) int {
	o, _ = o.withDefaults()
	if o.Tick <= 0 {
		return 0
	}
	return int(d/o.Tick) + 1
}

// Palette layout: fixed colours, then tints of every timeline colour.
const (
	ixWhite = iota
	ixBlack
	ixEmpty  // an idle cell
	ixBorder // cell outlines
	ixClear  // transparent: "unchanged since the previous frame"
	ixTints  // first tint
)

// tints is the number of lightness levels per loader colour: a load's
// progress is shown in steps of 1/tints; the last level is the full colour.
const tints = 3

// gifPalette returns the animation's palette: white, black, two greys, a
// transparent entry and tints levels of each of the timeline's NumColors
// colours (32 entries, so 5-bit codes).
func gifPalette() color.Palette {
	p := color.Palette{
		color.White,
		color.Black,
		color.RGBA{0xe6, 0xe6, 0xe6, 0xff},
		color.RGBA{0x99, 0x99, 0x99, 0xff},
		color.RGBA{},
	}
	for c := range timeline.NumColors {
		base := timeline.Color(c)
		for l := 1; l <= tints; l++ {
			mix := func(v uint8) uint8 { return uint8(255 - (255-int(v))*l/tints) }
			p = append(p, color.RGBA{mix(base.R), mix(base.G), mix(base.B), 0xff})
		}
	}
	return p
}

// tint returns the palette index of loader colour c at level l (1…tints).
func tint(c, l int) uint8 {
	return uint8(ixTints + (c%timeline.NumColors)*tints + min(max(l, 1), tints) - 1)
}

// frameState is the pipeline state at one instant, rebuilt from the event
// log.
type frameState struct {
	loading   []Event      // per loader: its LoadStart in progress, or Batch -1
	ready     map[int]bool // loaded, not consumed
	step      Event        // StepStart in progress, or Batch -1
	completed int
}

// WriteGIF writes an animation of the simulation to path with image/gif,
// atomically (temporary file, then rename). Each frame shows, at one tick:
// a row of loader cells, each tinted in its loader's colour by the fraction
// of its current batch loaded (in thirds, with the fraction written
// as a number when the cell is wide enough); the queue of ready batches in
// index order, each in the colour of the loader that made it; and the model
// cell, in the colour of the batch it is stepping on or grey when idle.
// There are opt.Frames(Duration) frames; after the first, each frame stores
// only the rectangle that changed, with unchanged pixels in it transparent
// (disposal "none" keeps the previous frame under them): the post's three
// 30 s animations at 480×200 take 0.3–1.2 MB (the busier the queue, the
// larger).
func (r *Result) WriteGIF(path string, opt GIFOptions) error {
	opt, err := opt.withDefaults()
	if err != nil {
		return err
	}
	n := opt.Frames(r.Config.Duration)
	if n > opt.MaxFrames {
		return fmt.Errorf("sim: %d frames exceed MaxFrames %d; raise GIFOptions.Tick", n, opt.MaxFrames)
	}
	// Draw inside the callback, after the temporary file exists, so an
	// unwritable path fails before any drawing.
	return atomicfile.WriteKind(path, atomicfile.Animation, func(w io.Writer) error { return gif.EncodeAll(w, r.animate(opt, n)) })
}

// animate draws the frames.
func (r *Result) animate(opt GIFOptions, frames int) *gif.GIF {
	pal := gifPalette()
	bounds := image.Rect(0, 0, opt.Width, opt.Height)
	cur := image.NewPaletted(bounds, pal)
	prev := image.NewPaletted(bounds, pal)
	g := &gif.GIF{Config: image.Config{ColorModel: pal, Width: opt.Width, Height: opt.Height}}
	st := frameState{loading: make([]Event, r.Config.Loaders), ready: map[int]bool{}, step: Event{Batch: -1}}
	for i := range st.loading {
		st.loading[i].Batch = -1
	}
	ev := r.Events
	for k := range frames {
		now := time.Duration(k) * opt.Tick
		for len(ev) > 0 && ev[0].At <= now {
			st.apply(ev[0])
			ev = ev[1:]
		}
		r.drawFrame(cur, &st, now)
		rect := bounds
		if k > 0 {
			rect = diff(cur, prev)
		}
		out := image.NewPaletted(rect, pal)
		for y := rect.Min.Y; y < rect.Max.Y; y++ {
			o := out.Pix[out.PixOffset(rect.Min.X, y):out.PixOffset(rect.Max.X, y)]
			c := cur.Pix[cur.PixOffset(rect.Min.X, y):cur.PixOffset(rect.Max.X, y)]
			p := prev.Pix[prev.PixOffset(rect.Min.X, y):prev.PixOffset(rect.Max.X, y)]
			for x := range o {
				if k > 0 && c[x] == p[x] {
					o[x] = ixClear
				} else {
					o[x] = c[x]
				}
			}
		}
		g.Image = append(g.Image, out)
		g.Delay = append(g.Delay, opt.Delay)
		g.Disposal = append(g.Disposal, gif.DisposalNone)
		cur, prev = prev, cur
	}
	return g
}

func (st *frameState) apply(e Event) {
	switch e.Kind {
	case LoadStart:
		st.loading[e.Loader] = e
	case LoadEnd:
		st.loading[e.Loader].Batch = -1
		st.ready[e.Batch] = true
	case StepStart:
		delete(st.ready, e.Batch)
		st.step = e
	case StepEnd:
		st.step.Batch = -1
		st.completed++
	}
}

// diff returns the smallest rectangle outside which a and b are equal, or a
// 1×1 rectangle at the origin if they are identical.
func diff(a, b *image.Paletted) image.Rectangle {
	r := image.Rectangle{}
	w, h := a.Rect.Dx(), a.Rect.Dy()
	for y := range h {
		ra, rb := a.Pix[y*a.Stride:y*a.Stride+w], b.Pix[y*b.Stride:y*b.Stride+w]
		for x := range w {
			if ra[x] != rb[x] {
				r = r.Union(image.Rect(x, y, x+1, y+1))
				// Skip to the last difference on this row.
				for x2 := w - 1; x2 > x; x2-- {
					if ra[x2] != rb[x2] {
						r = r.Union(image.Rect(x2, y, x2+1, y+1))
						break
					}
				}
				break
			}
		}
	}
	if r.Empty() {
		return image.Rect(0, 0, 1, 1)
	}
	return r
}

// layout constants, in pixels.
const (
	margin   = 6
	labelW   = 56 // "loaders" is 7 characters of 7 px
	gap      = 3
	glyphW   = 7
	ascent   = 11
	headerH  = 16
	maxCellW = 64
)

func (r *Result) drawFrame(img *image.Paletted, st *frameState, now time.Duration) {
	fill(img, img.Rect, ixWhite)
	W, H := img.Rect.Dx(), img.Rect.Dy()
	text(img, margin, margin, ixBlack, fmt.Sprintf("t=%5.1fs  batches done %d", now.Seconds(), st.completed))
	g := frameGeom{rowH: (H - headerH - 2*margin - 2*gap) / 3, x0: margin + labelW}
	g.avail = W - g.x0 - margin
	for i := range g.rows {
		g.rows[i] = margin + headerH + i*(g.rowH+gap)
	}
	nl := r.Config.Loaders
	cw := min(maxCellW, (g.avail+gap)/nl-gap)
	drawLoaders(img, st, now, g, nl, cw)
	drawQueue(img, st, g, nl, cw)
	drawModel(img, st, g)
}

// frameGeom is a frame's layout: three rows (loaders, queue, model) of
// height rowH at rows, drawn from x0 over avail pixels.
type frameGeom struct {
	x0, avail, rowH int
	rows            [3]int
}

// drawLoaders draws the nl loaders as cells cw wide, each tinted by how
// far its batch has come.
func drawLoaders(img *image.Paletted, st *frameState, now time.Duration, g frameGeom, nl, cw int) {
	x0, rows, rowH := g.x0, g.rows, g.rowH
	text(img, margin, rows[0]+(rowH-ascent)/2, ixBlack, "loaders")
	if cw >= 1 {
		for i := range nl {
			cell := image.Rect(x0+i*(cw+gap), rows[0], x0+i*(cw+gap)+cw, rows[0]+rowH)
			l := st.loading[i]
			if l.Batch < 0 {
				box(img, cell, ixEmpty)
				continue
			}
			f := 1.0
			if d := l.Until - l.At; d > 0 {
				f = min(float64(now-l.At)/float64(d), 1)
			}
			level := int(f*tints + 0.999999)
			box(img, cell, tint(i, level))
			label(img, cell, strconv.FormatFloat(f, 'f', 1, 64), level)
		}
	} else {
		text(img, x0, rows[0]+(rowH-ascent)/2, ixBlack, fmt.Sprintf("%d loaders (too many to draw)", nl))
	}
}

// drawQueue draws the ready batches, in index order, as many as fit.
func drawQueue(img *image.Paletted, st *frameState, g frameGeom, nl, cw int) {
	x0, rows, rowH, avail := g.x0, g.rows, g.rowH, g.avail
	text(img, margin, rows[1]+(rowH-ascent)/2, ixBlack, "queue")
	ready := make([]int, 0, len(st.ready))
	for b := range st.ready {
		ready = append(ready, b)
	}
	sort.Ints(ready)
	qw := min(cw, 32)
	qw = max(qw, 8)
	fit := (avail + gap) / (qw + gap)
	shown := ready
	if len(ready) > fit {
		shown = ready[:max(fit-2, 0)] // leave room for "+k"
	}
	for i, b := range shown {
		cell := image.Rect(x0+i*(qw+gap), rows[1], x0+i*(qw+gap)+qw, rows[1]+rowH)
		box(img, cell, tint(b%nl, tints))
		label(img, cell, strconv.Itoa(b), tints)
	}
	if len(shown) < len(ready) {
		text(img, x0+len(shown)*(qw+gap), rows[1]+(rowH-ascent)/2, ixBlack, fmt.Sprintf("+%d", len(ready)-len(shown)))
	}
	if len(ready) == 0 {
		text(img, x0, rows[1]+(rowH-ascent)/2, ixBorder, "(empty)")
	}
}

// drawModel draws the model's cell: the batch it steps on, or idle.
func drawModel(img *image.Paletted, st *frameState, g frameGeom) {
	x0, rows, rowH, avail := g.x0, g.rows, g.rowH, g.avail
	text(img, margin, rows[2]+(rowH-ascent)/2, ixBlack, "model")
	mw := max(min(maxCellW, avail), 8)
	cell := image.Rect(x0, rows[2], x0+mw, rows[2]+rowH)
	if s := st.step; s.Batch >= 0 {
		box(img, cell, tint(s.Loader, tints))
		label(img, cell, strconv.Itoa(s.Batch), tints)
	} else {
		box(img, cell, ixEmpty)
		label(img, cell, "idle", 1)
	}
}

// fill paints rect with palette index c.
func fill(img *image.Paletted, rect image.Rectangle, c uint8) {
	rect = rect.Intersect(img.Rect)
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		row := img.Pix[img.PixOffset(rect.Min.X, y):img.PixOffset(rect.Max.X, y)]
		for x := range row {
			row[x] = c
		}
	}
}

// box paints a cell with a border.
func box(img *image.Paletted, rect image.Rectangle, c uint8) {
	fill(img, rect, ixBorder)
	if rect.Dx() > 2 && rect.Dy() > 2 {
		fill(img, rect.Inset(1), c)
	}
}

// label centres s in cell if it fits; black on light cells, white on the
// full colour.
func label(img *image.Paletted, cell image.Rectangle, s string, level int) {
	w := len(s) * glyphW
	if w+2 > cell.Dx() || ascent+2 > cell.Dy() {
		return
	}
	c := uint8(ixBlack)
	if level >= tints {
		c = ixWhite
	}
	text(img, cell.Min.X+(cell.Dx()-w)/2, cell.Min.Y+(cell.Dy()-ascent)/2, c, s)
}

var face = basicfont.Face7x13

// text draws s in palette colour c with its top-left corner near (x, y),
// setting the pixels of each glyph's mask directly (basicfont's masks are
// all-or-nothing).
func text(img *image.Paletted, x, y int, c uint8, s string) {
	dot := fixed.P(x, y+ascent)
	for _, ch := range s {
		dr, mask, mp, adv, ok := face.Glyph(dot, ch)
		if ok {
			for py := dr.Min.Y; py < dr.Max.Y; py++ {
				for px := dr.Min.X; px < dr.Max.X; px++ {
					if !(image.Point{px, py}).In(img.Rect) {
						continue
					}
					if _, _, _, a := mask.At(mp.X+px-dr.Min.X, mp.Y+py-dr.Min.Y).RGBA(); a >= 0x8000 {
						img.Pix[img.PixOffset(px, py)] = c
					}
				}
			}
		}
		dot.X += adv
	}
}
