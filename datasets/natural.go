package datasets

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/headspace-bench/headspace/datasets/prng"
)

// The contents of Synthetic's images.
const (
	// ContentNoise is the document's FakeDataset: uniform random bytes,
	// incompressible, the default.
	ContentNoise = "noise"
	// ContentNatural is the dead-leaves model (see fillNatural): images
	// with the statistics of natural images, which compress like photos.
	ContentNatural = "natural"
)

// Contents lists the image contents Synthetic.Content accepts.
var Contents = []string{ContentNoise, ContentNatural}

// ParseContent checks a content name ("" is ContentNoise).
func ParseContent(s string) (string, error) {
	switch s {
	case "", ContentNoise:
		return ContentNoise, nil
	case ContentNatural:
		return ContentNatural, nil
	}
	return "", fmt.Errorf("content %q: want noise or natural", s)
}

// Dead-leaves parameters. Leaf radii follow the scale-invariant density
// r⁻³ between rmin and rmax, both proportional to the image's short side,
// so a 256² and a 1024² image have the same statistics up to resolution.
const (
	leafMinFrac = 1.0 / 64 // rmin: short side / 64, at least 1 pixel
	leafMaxFrac = 1.0 / 4  // rmax: short side / 4
	// leafCover is the total leaf area drawn, in image areas; the pixels
	// no leaf covers (e^-4 ≈ 2% of the image, in small holes) show the
	// background, the deepest leaf.
	leafCover = 4
	// Every byte gets sensor grain of -1, 0 or +1 level (probabilities
	// ¼, ½, ¼): flat leaves alone would be cleaner than any photograph.
)

// leaf is one disc of the dead-leaves model.
type leaf struct {
	cx, cy, r2 float64 // centre and squared radius
	y0, y1     int     // rows it covers, clipped to the image
	c          [3]uint8
}

// scratch is fillNatural's working memory, one per concurrent Fill, kept
// between calls.
type scratch struct {
	leaves []leaf
	head   []int32  // head[y]: the first leaf whose top row is y, or -1
	link   []int32  // link[k]: the next leaf with leaf k's top row, or -1
	active []uint64 // bit k: leaf k crosses the current row
}

// scratches is a free list of scratches. It is not a sync.Pool, which
// drops its items at every GC (and at random under the race detector):
// a Fill must allocate nothing, always. It holds as many scratches as
// Fills ever ran at once.
var scratches struct {
	sync.Mutex
	free []*scratch
}

func getScratch() *scratch {
	scratches.Lock()
	defer scratches.Unlock()
	if n := len(scratches.free); n > 0 {
		sc := scratches.free[n-1]
		scratches.free = scratches.free[:n-1]
		return sc
	}
	return new(scratch)
}

func putScratch(sc *scratch) {
	scratches.Lock()
	scratches.free = append(scratches.free, sc)
	scratches.Unlock()
}

// fillNatural draws the dead-leaves model into img from r: opaque discs
// of random colour and r⁻³-distributed radius fall on the image one after
// the other, and each pixel shows the first disc that covers it. It is the
// model behind the texture charts of ISO 19567-2, and it has what natural
// images have and uniform noise lacks: occlusion edges, flat regions and a
// power-law (≈1/f²) power spectrum.
//
// The leaves are drawn first (about a thousand, whatever the image size:
// rmin and rmax scale with it), then the image is painted row by row, back
// to front: the background, then every leaf that crosses the row, the
// first-drawn last. A leaf joins the active set at its top row and leaves
// it after its bottom row, so a row costs the leaves that cross it. A row
// (3 KB at 1024 wide) stays in the L1 cache while it is overdrawn, and the
// ±1-level grain is added while it is still there. It allocates nothing
// once a scratch has served an image of the size.
func fillNatural(r *prng.Source, img *Image) {
	w, h := img.Width, img.Height
	sc := getScratch()
	defer putScratch(sc)
	leaves := sc.leaves[:0]
	short := float64(min(w, h))
	rmin := max(1, short*leafMinFrac)
	rmax := max(rmin, short*leafMaxFrac)
	a, b := 1/(rmin*rmin), 1/(rmin*rmin)-1/(rmax*rmax)
	for budget := leafCover * float64(w*h); budget > 0; {
		rad := 1 / math.Sqrt(a-r.Float64()*b) // inverse CDF of r⁻³ on [rmin, rmax]
		l := leaf{cx: r.Float64() * float64(w), cy: r.Float64() * float64(h), r2: rad * rad}
		l.c[0], l.c[1], l.c[2] = leafColour(r)
		l.y0, l.y1 = max(0, int(math.Ceil(l.cy-rad))), min(h-1, int(math.Floor(l.cy+rad)))
		budget -= math.Pi * l.r2
		leaves = append(leaves, l)
	}
	sc.leaves = leaves
	sc.head = resize(sc.head, h)
	sc.link = resize(sc.link, len(leaves))
	for y := range sc.head {
		sc.head[y] = -1
	}
	for k := len(leaves) - 1; k >= 0; k-- {
		if y0 := leaves[k].y0; y0 < h {
			sc.link[k], sc.head[y0] = sc.head[y0], int32(k)
		}
	}
	sc.active = resize(sc.active, (len(leaves)+63)/64)
	clear(sc.active)
	var bg [3]uint8
	bg[0], bg[1], bg[2] = leafColour(r) // the deepest leaf
	pix := img.Pix
	for y := range h {
		for k := sc.head[y]; k >= 0; k = sc.link[k] {
			sc.active[k/64] |= 1 << (k % 64)
		}
		row := pix[y*w*3 : (y+1)*w*3]
		span(row, 0, w-1, bg)
		for wi := len(sc.active) - 1; wi >= 0; wi-- {
			for word := sc.active[wi]; word != 0; {
				bit := 63 - bits.LeadingZeros64(word)
				word &^= 1 << bit
				l := &leaves[wi*64+bit]
				if y > l.y1 {
					sc.active[wi] &^= 1 << bit
					continue
				}
				dy := float64(y) - l.cy
				dx := math.Sqrt(max(0, l.r2-dy*dy))
				x0, x1 := max(0, int(math.Ceil(l.cx-dx))), min(w-1, int(math.Floor(l.cx+dx)))
				span(row, x0, x1, l.c)
			}
		}
		addGrain(r, row)
	}
}

// resize returns s with length n, reusing its array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// span paints pixels x0..x1 of an RGB row with c.
func span(row []uint8, x0, x1 int, c [3]uint8) {
	if x0 > x1 {
		return
	}
	s := row[3*x0 : 3*x1+3]
	s[0], s[1], s[2] = c[0], c[1], c[2]
	for n := 3; n < len(s); { // double the painted prefix: memmove speed
		n += copy(s[n:], s[:n])
	}
}

// leafColour draws a leaf's colour: a uniform brightness with a moderate
// random tint, as natural scenes are mostly unsaturated. Channels stay
// within [1, 254] so addGrain never overflows.
func leafColour(r *prng.Source) (uint8, uint8, uint8) {
	v := r.Uint64()
	l := int(v & 0xff)
	tint := func(s uint) uint8 { return uint8(min(254, max(1, l+int((v>>s)&0x3f)-32))) }
	return tint(8), tint(16), tint(24)
}

// lowBits has the lowest bit of every byte of a word set.
const lowBits = 0x0101010101010101

// addGrain adds -1, 0 or +1 to every byte (probabilities ¼, ½, ¼: one
// random bit added, another subtracted), eight bytes per word operation
// and 32 per random draw. Bytes are within [1, 254], so no byte carries
// into or borrows from its neighbour.
func addGrain(r *prng.Source, pix []uint8) {
	i := 0
	for ; i+32 <= len(pix); i += 32 {
		v := r.Uint64()
		for k := range 4 {
			p := pix[i+8*k : i+8*k+8]
			x := binary.LittleEndian.Uint64(p)
			x += v >> (2 * k) & lowBits
			x -= v >> (2*k + 1) & lowBits
			binary.LittleEndian.PutUint64(p, x)
		}
	}
	v := r.Uint64()
	for j := i; j < len(pix); j++ {
		pix[j] = uint8(int(pix[j]) + int(v&1) - int(v>>1&1))
		v >>= 2
	}
}
