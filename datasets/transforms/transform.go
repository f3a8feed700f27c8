// Package transforms implements the per-sample transforms of the document's
// toy pipeline, in its order:
//
//	RandomCrop(Crop) → RandomMask(MaskRatio, 4-neighbour dilation) → ConvertColor → Scale
//
// and writes a channel-major 3×Crop×Crop float32 tensor.
//
// Two implementations sit behind one interface. "naive" is the straightforward
// pipeline the document starts from: github.com/disintegration/imaging for the
// crop, the dilation as a 3×3 convolution, and a fresh allocation at each
// step. "fast" is the fix of the document series: one fused pass, in place,
// no allocation per sample, and the dilation as ORs of shifted bit rows.
//
// # Random draws
//
// Both implementations consume the random Source passed to Apply in exactly
// the same order, so for the same Source they produce the same tensor (to
// float32 rounding), which the tests check against a float64 reference:
//
//  1. top  = rng.IntN(H - Crop + 1), then left = rng.IntN(W - Crop + 1)
//     (torchvision's RandomCrop order);
//  2. the mask, row-major, two pixels per 64-bit draw: for p = 0, 2, 4, …
//     u := rng.Uint64(); mask[p] = uint32(u) < T; mask[p+1] = uint32(u>>32) < T,
//     where T = MaskThreshold(MaskRatio) (so P(mask) = MaskRatio to 2^-32).
//
// The mask is then dilated with the cross [[0,1,0],[1,1,1],[0,1,0]] as
// scipy.signal.convolve2d(mode='same') does (zero padding at the border), and
// dilated pixels are set to 0 in all three channels before ConvertColor.
package transforms

import (
	"context"
	"fmt"
	"math"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// Config is the parameters shared by every implementation.
type Config struct {
	Crop      int     // side of the square random crop; the document uses 256
	MaskRatio float64 // probability that a mask pixel is set before dilation; 0.25
}

// DefaultConfig is the document's configuration.
func DefaultConfig() Config { return Config{Crop: 256, MaskRatio: 0.25} }

// Validate reports an invalid configuration, or a crop that does not fit an
// image of w×h (pass w, h <= 0 to skip that check).
func (c Config) Validate(w, h int) error {
	switch {
	case c.Crop <= 0:
		return fmt.Errorf("transforms: crop %d must be positive", c.Crop)
	case c.Crop%2 != 0:
		return fmt.Errorf("transforms: crop %d must be even (mask pixels are drawn in pairs)", c.Crop)
	case !(c.MaskRatio >= 0 && c.MaskRatio <= 1):
		return fmt.Errorf("transforms: mask ratio %v must be in [0, 1]", c.MaskRatio)
	case w > 0 && h > 0 && (c.Crop > w || c.Crop > h):
		return fmt.Errorf("transforms: crop %d is larger than the %dx%d raw image", c.Crop, w, h)
	}
	return nil
}

// OutLen is the length of the output tensor, 3×Crop×Crop.
func (c Config) OutLen() int { return 3 * c.Crop * c.Crop }

// MaskThreshold returns T such that uint32(u) < T has probability ratio.
func MaskThreshold(ratio float64) uint64 {
	if ratio >= 1 {
		return 1 << 32
	}
	if ratio <= 0 {
		return 0
	}
	return uint64(math.Round(ratio * (1 << 32)))
}

// ConvertColor's matrix and offset (RGB → YCbCr, as in the document), and
// Scale's divisor.
var (
	ColorMatrix = [3][3]float64{
		{0.299, 0.587, 0.114},
		{-0.16874, -0.33126, 0.5},
		{0.5, -0.41869, -0.08131},
	}
	ColorOffset = [3]float64{0, 128, 128}
)

// ScaleDivisor is what Scale divides by.
const ScaleDivisor = 255.0

// Transform turns one raw image into a 3×Crop×Crop float32 tensor.
type Transform interface {
	// Name is "naive" or "fast".
	Name() string
	// Apply transforms src into dst (len Config.OutLen()), drawing its
	// random numbers from rng in the order the package documents. src is
	// only read, so one cached raw image can feed many workers at once. An
	// implementation may keep per-call scratch space, so a Transform is
	// used by one goroutine at a time: use New once per worker.
	Apply(dst []float32, src *datasets.Image, rng *prng.Source) error
}

// The implementations' names: the one spelling of each, in flags, result
// files and benchmark names.
const (
	Naive = "naive" // step by step, allocating (the document's)
	Fast  = "fast"  // fused and in place (the fix)
)

// CropOrigin draws the random crop's top-left corner in a w×h image from
// rng, the first draws of every implementation (and of a decoder that
// decodes only the crop, which draws them first from the same stream):
// top = rng.IntN(h - crop + 1), then left = rng.IntN(w - crop + 1).
func CropOrigin(crop, w, h int, rng *prng.Source) (top, left int) {
	top = rng.IntN(h - crop + 1)
	left = rng.IntN(w - crop + 1)
	return top, left
}

// Precropped is implemented by transforms that also take their random
// crop already cut out, by a decoder that decoded only the crop
// (turbojpeg.Decoder.DecodeCropRGB, the loader's --decode-crop): fast.
type Precropped interface {
	// ApplyPrecropped is Apply on a w×h image whose Crop×Crop crop, at
	// the origin CropOrigin draws from rng as it stands, is crop: it makes
	// the same draws as Apply on the whole image and writes the same
	// tensor.
	ApplyPrecropped(dst []float32, crop *datasets.Image, w, h int, rng *prng.Source) error
}

var _ Precropped = (*fast)(nil)

// Interruptible is implemented by transforms whose work grows with the
// raw image rather than the crop (naive: it copies the whole image, as
// Image.fromarray does): the Context methods are Apply and ApplyUint8
// that return ctx's error once ctx ends, checking it every few
// milliseconds of work, so an interrupt stops a 16384² image at once.
// The fast implementation touches only the crop and needs no checks.
type Interruptible interface {
	ApplyContext(ctx context.Context, dst []float32, src *datasets.Image, rng *prng.Source) error
	ApplyUint8Context(ctx context.Context, dst []uint8, src *datasets.Image, rng *prng.Source) error
}

var _ Interruptible = (*naive)(nil)

// Names lists the implementations New knows.
var Names = []string{Naive, Fast}

// New returns a fresh implementation by name.
func New(name string, cfg Config) (Transform, error) {
	if err := cfg.Validate(0, 0); err != nil {
		return nil, err
	}
	switch name {
	case Naive:
		return newNaive(cfg), nil
	case Fast:
		return newFast(cfg), nil
	}
	return nil, fmt.Errorf("transforms: unknown implementation %q (want naive or fast)", name)
}

// check validates the arguments of implementation name's Apply or
// ApplyUint8: src and rng present, the configuration against src, src's
// size, and the output's length.
func check(name string, cfg Config, outLen int, src *datasets.Image, rng *prng.Source) error {
	if src == nil || rng == nil {
		return fmt.Errorf("transforms: %s: nil image or random source", name)
	}
	if err := cfg.Validate(src.Width, src.Height); err != nil {
		return err
	}
	if len(src.Pix) != src.Width*src.Height*3 {
		return fmt.Errorf("transforms: image %dx%d has %d bytes, want %d", src.Width, src.Height, len(src.Pix), src.Width*src.Height*3)
	}
	if outLen != cfg.OutLen() {
		return fmt.Errorf("transforms: output has %d values, want 3x%dx%d = %d", outLen, cfg.Crop, cfg.Crop, cfg.OutLen())
	}
	return nil
}
