package transforms

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// fast is the fused pipeline: the mask is drawn into bit rows, dilated with
// shifts and ORs, and one pass over the crop reads the raw bytes in place,
// zeroes the masked pixels and writes ConvertColor∘Scale straight into dst.
// Its scratch space is allocated once, in newFast, so Apply allocates
// nothing.
type fast struct {
	cfg    Config
	thresh uint64
	words  int      // 64-bit words per mask row, ceil(Crop/64)
	mask   []uint64 // Crop rows of words: the drawn mask
	dil    []uint64 // Crop rows of words: the dilated mask
	draws  []byte   // one row of mask draws, 4·Crop bytes
	// lut[k][v][i] is ColorMatrix[i][k]·v/255, plus ColorOffset[i]/255
	// for k = 0: ConvertColor∘Scale of a pixel is the sum of three entries.
	lut *[3][256][4]float32
}

func newFast(cfg Config) Transform {
	words := (cfg.Crop + 63) / 64
	lut := new([3][256][4]float32)
	for k := range lut {
		for v := range lut[k] {
			for i := range ColorMatrix {
				e := ColorMatrix[i][k] * float64(v)
				if k == 0 {
					e += ColorOffset[i]
				}
				lut[k][v][i] = float32(e / ScaleDivisor)
			}
		}
	}
	return &fast{
		cfg:    cfg,
		thresh: MaskThreshold(cfg.MaskRatio),
		words:  words,
		mask:   make([]uint64, words*cfg.Crop),
		dil:    make([]uint64, words*cfg.Crop),
		draws:  make([]byte, 4*cfg.Crop),
		lut:    lut,
	}
}

func (*fast) Name() string { return Fast }

func (f *fast) Apply(dst []float32, src *datasets.Image, rng *prng.Source) error {
	if err := check(Fast, f.cfg, len(dst), src, rng); err != nil {
		return err
	}
	top, left := f.draw(src, rng)
	f.convert(dst, src, top, left)
	return nil
}

// ApplyPrecropped implements Precropped.
func (f *fast) ApplyPrecropped(dst []float32, crop *datasets.Image, w, h int, rng *prng.Source) error {
	c := f.cfg.Crop
	if err := check(Fast, f.cfg, len(dst), crop, rng); err != nil {
		return err
	}
	if crop.Width != c || crop.Height != c || w < c || h < c {
		return fmt.Errorf("transforms: %s: a precropped image of %dx%d from %dx%d, want the %dx%d crop of an image at least that large", Fast, crop.Width, crop.Height, w, h, c, c)
	}
	f.drawFor(w, h, rng) // the same draws as Apply on the whole image; the crop is cut already
	f.convert(dst, crop, 0, 0)
	return nil
}

// draw makes the random draws of one sample in the package's order: the
// crop's top and left, then the mask, which it dilates into f.dil.
func (f *fast) draw(src *datasets.Image, rng *prng.Source) (top, left int) {
	return f.drawFor(src.Width, src.Height, rng)
}

// drawFor is draw for an image of w×h.
func (f *fast) drawFor(w, h int, rng *prng.Source) (top, left int) {
	c := f.cfg.Crop
	top, left = CropOrigin(c, w, h, rng)
	drawMaskBits(f.mask, c, f.words, f.thresh, rng, f.draws)
	dilateBits(f.dil, f.mask, c, c)
	return top, left
}

// drawMaskBits draws the c×c mask into rows of words 64-bit words (bit j of
// word i of a row is column 64i+j), two pixels per 64-bit draw in row-major
// order. c is even, so both pixels of a draw lie in the same word.
//
// The draws of a row are made by one rng.Fill into buf (at least 4c bytes):
// Fill writes successive Uint64 values little-endian, so this is the same
// sequence as c/2 calls of rng.Uint64, but with the generator's state kept in
// a register.
func drawMaskBits(mask []uint64, c, words int, thresh uint64, rng *prng.Source, buf []byte) {
	buf = buf[:4*c]
	for y := 0; y < c; y++ {
		rng.Fill(buf)
		row := mask[y*words : y*words+words]
		draws := buf
		for i := range row {
			n := min(len(draws), 256) // 32 draws, 64 pixels
			row[i] = maskWord(draws[:n], thresh)
			draws = draws[n:]
		}
	}
}

// maskWord turns up to 32 little-endian draws into the bits of up to 64 mask
// pixels. It is kept out of line so that its loop has registers to itself.
//
//go:noinline
func maskWord(draws []byte, thresh uint64) uint64 {
	n := len(draws) / 8
	if n == 32 {
		return maskWord32((*[256]byte)(draws), thresh)
	}
	var word uint64
	for len(draws) >= 8 {
		u := binary.LittleEndian.Uint64(draws)
		draws = draws[8:]
		word = word>>2 | maskPair(u, thresh)<<62 // the draws enter at the top
	}
	return word >> uint(64-2*n)
}

// maskWord32 is maskWord for a full word of 32 draws.
func maskWord32(draws *[256]byte, thresh uint64) uint64 {
	var word uint64
	for j := 0; j < len(draws); j += 8 {
		u := binary.LittleEndian.Uint64(draws[j : j+8])
		word = word>>2 | maskPair(u, thresh)<<62
	}
	return word
}

// maskPair is the two mask bits of one draw u: bit 0 is uint32(u) < thresh,
// bit 1 is u>>32 < thresh.
func maskPair(u, thresh uint64) uint64 {
	// x < thresh ⇔ the top bit of x-thresh is set (x, thresh ≤ 2^32).
	lo := (uint64(uint32(u)) - thresh) >> 63
	hi := ((u >> 32) - thresh) >> 63
	return lo | hi<<1
}

// dilateBits writes into dst the 4-neighbour dilation of the w×h bit mask src
// (rows of ceil(w/64) words, bit j of word i being column 64i+j, bits past
// column w-1 clear): each pixel ORs itself, the rows above and below, and its
// left and right neighbours, the shifts carrying across word boundaries, and
// everything outside the image counting as zero.
func dilateBits(dst, src []uint64, w, h int) {
	words := (w + 63) / 64
	if words == 0 || h == 0 {
		return
	}
	last := ^uint64(0) >> uint((64-w%64)%64) // valid bits of a row's last word
	for y := 0; y < h; y++ {
		row := src[y*words : y*words+words]
		out := dst[y*words : y*words+words]
		var up, down []uint64
		if y > 0 {
			up = src[(y-1)*words : y*words]
		}
		if y+1 < h {
			down = src[(y+1)*words : (y+2)*words]
		}
		var prev uint64 // the word to the left of row[i]
		for i, m := range row {
			var next uint64 // the word to the right of row[i]
			if i+1 < len(row) {
				next = row[i+1]
			}
			d := m | m<<1 | prev>>63 | m>>1 | next<<63
			if up != nil {
				d |= up[i]
			}
			if down != nil {
				d |= down[i]
			}
			out[i] = d
			prev = m
		}
		out[words-1] &= last
	}
}

// convert is the fused pass: for each crop row, the raw RGB bytes are read in
// place from src, pixels of the dilated mask become 0, and the three
// ConvertColor∘Scale planes are written to dst.
func (f *fast) convert(dst []float32, src *datasets.Image, top, left int) {
	c, words := f.cfg.Crop, f.words
	plane := c * c
	lut := f.lut
	yPlane := dst[0*plane : 1*plane]
	cbPlane := dst[1*plane : 2*plane]
	crPlane := dst[2*plane : 3*plane]
	for y := 0; y < c; y++ {
		off := ((top+y)*src.Width + left) * 3
		pix := src.Pix[off : off+3*c]
		dil := f.dil[y*words : y*words+words]
		oy := yPlane[y*c : y*c+c]
		ocb := cbPlane[y*c : y*c+c]
		ocr := crPlane[y*c : y*c+c]
		for i, masked := range dil {
			x0 := 64 * i
			n := min(64, c-x0)
			convertRun(oy[x0:x0+n], ocb[x0:x0+n], ocr[x0:x0+n], pix[3*x0:3*x0+3*n], masked, lut)
		}
	}
}

// convertRun converts up to 64 pixels of a row, whose dilated mask bits are
// masked (bit j for pixel j), with the ConvertColor∘Scale table lut. It is
// kept out of line so that its loops have the registers to themselves.
//
//go:noinline
func convertRun(ys, cbs, crs []float32, pix []uint8, masked uint64, lut *[3][256][4]float32) {
	n := len(ys)
	cbs, crs = cbs[:n], crs[:n]
	lr, lg, lb := &lut[0], &lut[1], &lut[2]
	kept, most := keptBits(masked, n)
	if most {
		// Mostly kept: convert every pixel, a masked one as (0, 0, 0).
		for j := range ys {
			keep := uint8(masked&1) - 1 // 0 where masked, 0xff where kept
			masked >>= 1
			px := pix[3*j : 3*j+3 : 3*j+3]
			tr, tg, tb := &lr[px[0]&keep], &lg[px[1]&keep], &lb[px[2]&keep]
			ys[j] = tr[0] + tg[0] + tb[0]
			cbs[j] = tr[1] + tg[1] + tb[1]
			crs[j] = tr[2] + tg[2] + tb[2]
		}
		return
	}
	// Mostly masked, as at the document's ratio (about 76% of the pixels
	// after dilation): write the value of a masked pixel, ColorOffset/255,
	// everywhere, then convert the kept pixels only.
	m0, m1, m2 := lr[0][0], lr[0][1], lr[0][2]
	for j := range ys {
		ys[j], cbs[j], crs[j] = m0, m1, m2
	}
	for ; kept != 0; kept &= kept - 1 {
		j := bits.TrailingZeros64(kept)
		px := pix[3*j : 3*j+3 : 3*j+3]
		tr, tg, tb := &lr[px[0]], &lg[px[1]], &lb[px[2]]
		ys[j] = tr[0] + tg[0] + tb[0]
		cbs[j] = tr[1] + tg[1] + tb[1]
		crs[j] = tr[2] + tg[2] + tb[2]
	}
}
