package transforms

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// Uint8Applier runs a transform up to, but not including, ConvertColor and
// Scale: RandomCrop and RandomMask only, with the masked pixels set to 0. It
// is the host half of the document's "postpone int8 to float32 datatype
// conversions to the GPU" optimisation: the host ships one byte per value
// instead of four, and the device finishes the transform with ConvertScale.
//
// Both implementations of New implement it (assert a Transform to it).
type Uint8Applier interface {
	// ApplyUint8 writes the masked crop of src into dst (len
	// Config.OutLen()) as a channel-major 3×Crop×Crop uint8 tensor of R, G
	// and B planes. It draws exactly what Apply draws, in the same order,
	// so ConvertScale of its output equals Apply's to float32 rounding.
	// Like Apply, it only reads src and is used by one goroutine at a time.
	ApplyUint8(dst []uint8, src *datasets.Image, rng *prng.Source) error
}

var (
	_ Uint8Applier = (*naive)(nil)
	_ Uint8Applier = (*fast)(nil)
)

// ApplyUint8 implements Uint8Applier with the naive pipeline's steps up to
// RandomMask, each allocating as in Apply; the masked tensor is copied into
// dst.
func (n *naive) ApplyUint8(dst []uint8, src *datasets.Image, rng *prng.Source) error {
	return n.ApplyUint8Context(context.Background(), dst, src, rng)
}

// ApplyUint8Context implements Interruptible: ApplyUint8 that stops once
// ctx ends.
func (n *naive) ApplyUint8Context(ctx context.Context, dst []uint8, src *datasets.Image, rng *prng.Source) error {
	if err := check(Naive, n.cfg, len(dst), src, rng); err != nil {
		return err
	}
	m, err := n.masked(ctx, src, rng)
	if err != nil {
		return err
	}
	copy(dst, m)
	return nil
}

// ApplyUint8 implements Uint8Applier with the fused pass of Apply minus the
// colour table: the mask is drawn into bit rows and dilated with shifts and
// ORs, and one pass over the crop splits the raw RGB bytes into the three
// planes of dst with the masked pixels zeroed. It allocates nothing.
func (f *fast) ApplyUint8(dst []uint8, src *datasets.Image, rng *prng.Source) error {
	if err := check(Fast, f.cfg, len(dst), src, rng); err != nil {
		return err
	}
	top, left := f.draw(src, rng)
	c := f.cfg.Crop
	words := f.words
	plane := c * c
	rPlane, gPlane, bPlane := dst[:plane], dst[plane:2*plane], dst[2*plane:3*plane]
	for y := 0; y < c; y++ {
		off := ((top+y)*src.Width + left) * 3
		pix := src.Pix[off : off+3*c]
		dil := f.dil[y*words : y*words+words]
		or, og, ob := rPlane[y*c:y*c+c], gPlane[y*c:y*c+c], bPlane[y*c:y*c+c]
		for i, masked := range dil {
			x0 := 64 * i
			n := min(64, c-x0)
			maskRun(or[x0:x0+n], og[x0:x0+n], ob[x0:x0+n], pix[3*x0:3*x0+3*n], masked)
		}
	}
	return nil
}

// keptBits returns the bits of the pixels of a run of n (at most 64) that
// masked leaves kept, and whether they are most of the run. The run
// writers (maskRun, convertRun) decide by it: mostly kept, one pass over
// every pixel, a masked one written as zero; mostly masked, the masked
// value written everywhere, then only the kept pixels visited.
func keptBits(masked uint64, n int) (kept uint64, most bool) {
	kept = ^masked
	if n < 64 {
		kept &= 1<<uint(n) - 1
	}
	return kept, 2*bits.OnesCount64(kept) > n
}

// maskRun splits up to 64 RGB pixels of a row into the planes rs, gs and bs,
// writing 0 for the pixels whose bit is set in masked (bit j for pixel j).
// It is kept out of line so that its loops have the registers to themselves.
//
//go:noinline
func maskRun(rs, gs, bs, pix []uint8, masked uint64) {
	n := len(rs)
	gs, bs, pix = gs[:n], bs[:n], pix[:3*n]
	kept, most := keptBits(masked, n)
	if most {
		// Mostly kept: copy every pixel, a masked one as (0, 0, 0).
		for j := range rs {
			keep := uint8(masked&1) - 1 // 0 where masked, 0xff where kept
			masked >>= 1
			px := pix[3*j : 3*j+3 : 3*j+3]
			rs[j], gs[j], bs[j] = px[0]&keep, px[1]&keep, px[2]&keep
		}
		return
	}
	// Mostly masked, as at the document's ratio: zero the run, then copy
	// the kept pixels only.
	clear(rs)
	clear(gs)
	clear(bs)
	for ; kept != 0; kept &= kept - 1 {
		j := bits.TrailingZeros64(kept)
		px := pix[3*j : 3*j+3 : 3*j+3]
		rs[j], gs[j], bs[j] = px[0], px[1], px[2]
	}
}

// convertA and convertB are ColorMatrix/ScaleDivisor and
// ColorOffset/ScaleDivisor in float32: ConvertColor and Scale folded into one
// affine map per channel.
var convertA, convertB = colorMatrix32(ScaleDivisor)

// ConvertScale is the device half of the uint8 transfer: ConvertColor then
// Scale of a channel-major 3×crop×crop uint8 tensor of R, G and B planes (an
// ApplyUint8 output) into a float32 tensor of Y, Cb and Cr planes, one
// elementwise pass as a device kernel makes it. ConvertScale(dst, src) after
// ApplyUint8(src, img, rng) equals Apply(dst, img, rng) to float32 rounding.
// It allocates nothing; a length that is not 3×crop×crop is an error.
func ConvertScale(dst []float32, src []uint8, crop int) error {
	if crop <= 0 {
		return fmt.Errorf("transforms: convert: crop %d must be positive", crop)
	}
	plane := crop * crop
	if len(src) != 3*plane || len(dst) != 3*plane {
		return fmt.Errorf("transforms: convert: %d uint8 values into %d float32 values, want 3x%dx%d = %d of each", len(src), len(dst), crop, crop, 3*plane)
	}
	r, g, b := src[:plane], src[plane:2*plane], src[2*plane:]
	for i := range 3 {
		out := dst[i*plane : (i+1)*plane]
		a0, a1, a2, o := convertA[i][0], convertA[i][1], convertA[i][2], convertB[i]
		for p := range out {
			out[p] = a0*float32(r[p]) + a1*float32(g[p]) + a2*float32(b[p]) + o
		}
	}
	return nil
}
