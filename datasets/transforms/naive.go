package transforms

import (
	"errors"
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

func (*naive) Name() string { return "naive" }

func (n *naive) Apply(dst []float32, src *datasets.Image, rng *prng.Source) error {
	if src == nil || rng == nil {
		return errors.New("transforms: naive: nil image or random source")
	}
	if err := check(n.cfg, dst, src); err != nil {
		return err
	}
	c := n.cfg.Crop
	w, h := src.Width, src.Height

	// Image.fromarray: the raw H×W×3 bytes become an image.
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i, j := 0, 0; i < len(src.Pix); i, j = i+3, j+4 {
		img.Pix[j] = src.Pix[i]
		img.Pix[j+1] = src.Pix[i+1]
		img.Pix[j+2] = src.Pix[i+2]
		img.Pix[j+3] = 0xff
	}

	// RandomCrop: torchvision draws top, then left.
	top := rng.IntN(h - c + 1)
	left := rng.IntN(w - c + 1)
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

	// RandomMask: draw the mask, dilate it, zero the masked pixels.
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

	// ConvertColor: to the default float dtype, A·img, + b.
	a, b := colorMatrix32(1)
	asFloat := make([]float32, len(masked))
	for i, v := range masked {
		asFloat[i] = float32(v)
	}
	product := make([]float32, len(asFloat))
	for p := 0; p < plane; p++ {
		px := [3]float32{asFloat[p], asFloat[plane+p], asFloat[2*plane+p]}
		for i := 0; i < 3; i++ {
			var s float32
			for k := 0; k < 3; k++ {
				s += a[i][k] * px[k]
			}
			product[i*plane+p] = s
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

// drawMaskFloat draws a c×c mask as np.random.uniform(...) < ratio would make
// it, with the package's draw rule (two pixels per 64-bit draw, row-major),
// as 0/1 float64 values.
func drawMaskFloat(rng *prng.Source, c int, thresh uint64) []float64 {
	mask := make([]float64, c*c)
	for p := 0; p < len(mask); p += 2 {
		u := rng.Uint64()
		if uint64(uint32(u)) < thresh {
			mask[p] = 1
		}
		if u>>32 < thresh {
			mask[p+1] = 1
		}
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
// convolve2d(mask, crossKernel, mode='same').astype(bool): a full 3×3
// convolution with zero padding at the border into a new array, then the
// nonzero test.
func dilateConv(mask []float64, w, h int) []bool {
	conv := make([]float64, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var s float64
			for ky := 0; ky < 3; ky++ {
				for kx := 0; kx < 3; kx++ {
					// Convolution flips the kernel: out[y][x] = Σ in[y+1-ky][x+1-kx]·k[ky][kx].
					sy, sx := y+1-ky, x+1-kx
					if sy < 0 || sy >= h || sx < 0 || sx >= w {
						continue // zero padding
					}
					s += mask[sy*w+sx] * crossKernel[ky][kx]
				}
			}
			conv[y*w+x] = s
		}
	}
	out := make([]bool, len(conv))
	for i, v := range conv {
		out[i] = v != 0
	}
	return out
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
