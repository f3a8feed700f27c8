package transforms

import (
	"context"
	"encoding/binary"
	"fmt"
	"image"

	"github.com/disintegration/imaging"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// naive is the document's pipeline before optimisation, step by step, with a
// fresh allocation at each step, as the PIL/torch/scipy code makes:
//
//	Image.fromarray → PILToTensor/RandomCrop → RandomMask → ConvertColor → Scale
type naive struct {
	cfg    Config
	thresh uint64
}

func newNaive(cfg Config) Transform {
	return &naive{cfg: cfg, thresh: MaskThreshold(cfg.MaskRatio)}
}

func (*naive) Name() string { return Naive }

func (n *naive) Apply(dst []float32, src *datasets.Image, rng *prng.Source) error {
	return n.ApplyContext(context.Background(), dst, src, rng)
}

// ApplyContext implements Interruptible: Apply, stopping with ctx's error
// within a chunk of rows of the raw image once ctx ends.
func (n *naive) ApplyContext(ctx context.Context, dst []float32, src *datasets.Image, rng *prng.Source) error {
	if err := check(Naive, n.cfg, len(dst), src, rng); err != nil {
		return err
	}
	masked, err := n.masked(ctx, src, rng)
	if err != nil {
		return err
	}
	plane := n.cfg.Crop * n.cfg.Crop

	// ConvertColor: to the default float dtype, A·img, + b.
	a, b := colorMatrix32(1)
	asFloat := make([]float32, len(masked))
	for i, v := range masked {
		asFloat[i] = float32(v)
	}
	product := make([]float32, len(asFloat))
	r, g, bl := asFloat[:plane], asFloat[plane:2*plane], asFloat[2*plane:]
	for i := 0; i < 3; i++ {
		out := product[i*plane : (i+1)*plane]
		a0, a1, a2 := a[i][0], a[i][1], a[i][2]
		for p := range out {
			out[p] = a0*r[p] + a1*g[p] + a2*bl[p]
		}
	}
	ycbcr := make([]float32, len(product))
	for i := 0; i < 3; i++ {
		for p := 0; p < plane; p++ {
			ycbcr[i*plane+p] = product[i*plane+p] + b[i]
		}
	}

	// Scale.
	for i, v := range ycbcr {
		dst[i] = v / ScaleDivisor
	}
	return nil
}

// masked runs the steps before ConvertColor on a valid src, each into a new
// array, and returns the last: the masked channel-major 3×Crop×Crop tensor.
//
//	Image.fromarray → RandomCrop → PILToTensor → RandomMask
func (n *naive) masked(ctx context.Context, src *datasets.Image, rng *prng.Source) ([]uint8, error) {
	c := n.cfg.Crop
	w, h := src.Width, src.Height

	// Image.fromarray: the raw H×W×3 bytes become a new RGBA-layout image
	// (PIL stores RGB in four bytes per pixel), copied as PIL's C unpacker
	// does: a word at a time with the fourth byte set.
	if err := ctx.Err(); err != nil { // before allocating the copy
		return nil, fmt.Errorf("transforms: naive: %w", err)
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	if err := unpackRGBContext(ctx, img.Pix, src.Pix); err != nil {
		return nil, err
	}

	// RandomCrop: torchvision draws top, then left.
	top, left := CropOrigin(c, w, h, rng)
	crop := imaging.Crop(img, image.Rect(left, top, left+c, top+c))

	// PILToTensor: a channel-major 3×c×c uint8 tensor.
	plane := c * c
	tensor := make([]uint8, 3*plane)
	for y := 0; y < c; y++ {
		for x := 0; x < c; x++ {
			o := y*crop.Stride + 4*x
			p := y*c + x
			tensor[p] = crop.Pix[o]
			tensor[plane+p] = crop.Pix[o+1]
			tensor[2*plane+p] = crop.Pix[o+2]
		}
	}

	// RandomMask: draw the mask, dilate it, zero the masked pixels of a copy.
	mask := drawMaskFloat(rng, c, n.thresh)
	dilated := dilateConv(mask, c, c)
	masked := make([]uint8, len(tensor))
	copy(masked, tensor)
	for p, m := range dilated {
		if m {
			masked[p] = 0
			masked[plane+p] = 0
			masked[2*plane+p] = 0
		}
	}
	return masked, nil
}

// drawMaskFloat draws a c×c mask as np.random.uniform(...) < ratio would make
// it, with the package's draw rule (two pixels per 64-bit draw, row-major),
// as 0/1 float64 values. The comparison is computed, not branched on: a set
// pixel is as likely as the ratio, which no branch predictor guesses.
func drawMaskFloat(rng *prng.Source, c int, thresh uint64) []float64 {
	mask := make([]float64, c*c)
	for p := 0; p+1 < len(mask); p += 2 {
		u := rng.Uint64()
		// x < thresh (both ≤ 2^32) exactly when x − thresh wraps below zero.
		mask[p] = float64((uint64(uint32(u)) - thresh) >> 63)
		mask[p+1] = float64((u>>32 - thresh) >> 63)
	}
	return mask
}

// crossKernel is the 4-neighbour dilation kernel of RandomMask.
var crossKernel = [3][3]float64{
	{0, 1, 0},
	{1, 1, 1},
	{0, 1, 0},
}

// dilateConv dilates the w×h row-major mask (values 0 or 1) as
// convolve2d(mask, crossKernel, mode='same').astype(bool) does: the mask is
// copied into a zero-padded (h+2)×(w+2) array, a full 3×3 convolution (all
// nine taps, zero weights included) writes a new array, and the nonzero test
// makes a third.
func dilateConv(mask []float64, w, h int) []bool {
	pw := w + 2
	padded := make([]float64, (h+2)*pw)
	for y := 0; y < h; y++ {
		copy(padded[(y+1)*pw+1:(y+1)*pw+1+w], mask[y*w:(y+1)*w])
	}
	k := crossKernel
	conv := make([]float64, w*h)
	for y := 0; y < h; y++ {
		// Convolution flips the kernel: out[y][x] = Σ in[y+1-ky][x+1-kx]·k[ky][kx],
		// which in padded coordinates is row y+2-ky, column x+2-kx.
		dn := padded[(y+2)*pw : (y+3)*pw]
		md := padded[(y+1)*pw : (y+2)*pw]
		up := padded[y*pw : (y+1)*pw]
		out := conv[y*w : (y+1)*w]
		for x := range out {
			d, m, u := dn[x:x+3:x+3], md[x:x+3:x+3], up[x:x+3:x+3]
			out[x] = k[0][0]*d[2] + k[0][1]*d[1] + k[0][2]*d[0] +
				k[1][0]*m[2] + k[1][1]*m[1] + k[1][2]*m[0] +
				k[2][0]*u[2] + k[2][1]*u[1] + k[2][2]*u[0]
		}
	}
	out := make([]bool, len(conv))
	for i, v := range conv {
		out[i] = v != 0
	}
	return out
}

// unpackChunk is how many source bytes unpackRGBContext converts between
// looks at its context: 3 MiB (a multiple of 12), about a millisecond.
const unpackChunk = 3 << 20

// unpackRGBContext is unpackRGB a chunk at a time, returning ctx's error
// as soon as it sees ctx has ended: a 16384² image takes seconds to
// unpack, and an interrupt must not wait for it. It allocates nothing.
func unpackRGBContext(ctx context.Context, dst, src []byte) error {
	for len(src) > unpackChunk {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("transforms: naive: %w", err)
		}
		unpackRGB(dst[:unpackChunk/3*4], src[:unpackChunk])
		src, dst = src[unpackChunk:], dst[unpackChunk/3*4:]
	}
	unpackRGB(dst, src)
	return ctx.Err()
}

// unpackRGB copies packed RGB pixels from src into the four-byte pixels of
// dst with the fourth byte 0xff, as PIL's C unpacker does for
// Image.fromarray: four pixels (12 bytes in, 16 out) per iteration as
// machine words, then the remaining pixels bytewise.
func unpackRGB(dst, src []byte) {
	for len(src) >= 12 && len(dst) >= 16 {
		lo := binary.LittleEndian.Uint64(src[0:8])
		hi := binary.LittleEndian.Uint32(src[8:12])
		p0 := uint32(lo) | 0xff000000
		p1 := uint32(lo>>24) | 0xff000000
		p2 := uint32(lo>>48) | hi<<16 | 0xff000000
		p3 := hi>>8 | 0xff000000
		binary.LittleEndian.PutUint64(dst[0:8], uint64(p0)|uint64(p1)<<32)
		binary.LittleEndian.PutUint64(dst[8:16], uint64(p2)|uint64(p3)<<32)
		src, dst = src[12:], dst[16:]
	}
	for len(src) >= 3 && len(dst) >= 4 {
		dst[0], dst[1], dst[2], dst[3] = src[0], src[1], src[2], 0xff
		src, dst = src[3:], dst[4:]
	}
}

// colorMatrix32 returns ColorMatrix/div and ColorOffset/div in float32.
func colorMatrix32(div float64) (a [3][3]float32, b [3]float32) {
	for i := range ColorMatrix {
		for k := range ColorMatrix[i] {
			a[i][k] = float32(ColorMatrix[i][k] / div)
		}
		b[i] = float32(ColorOffset[i] / div)
	}
	return a, b
}
