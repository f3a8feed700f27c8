package turbojpeg

import (
	"errors"
	"fmt"

	"github.com/headspace-bench/headspace/internal/nativelib"
)

// # Cropped decoding
//
// DecodeCropRGB decodes only the part of a JPEG a crop needs, with the
// TurboJPEG 2 functions libjpeg-turbo 2.1 has: tjTransform with
// TJXOPT_CROP cuts the crop's window out of the JPEG losslessly, in the
// DCT domain (the whole image is entropy-decoded, the window's blocks
// entropy-coded again: no inverse DCT, upsampling or colour conversion
// outside it), then tjDecompress2 decodes the window alone and the crop
// is copied out of it. The window starts on an MCU boundary (TurboJPEG
// requires it) and reaches WindowMargin pixels past the crop on every
// side that is not the image's edge, so that the chroma upsampling at the
// window's edges (which replicates what lies outside it) never touches a
// crop pixel: the crop's pixels equal those of a full decode with the
// same IDCT, bit for bit (TestDecodeCropEqualsFullDecode, over
// subsamplings, sizes and crop positions on and off the MCU grid).

// WindowMargin is how many pixels the decoded window reaches past the
// crop where the image goes on: libjpeg-turbo's fancy upsampling blends
// each chroma sample with its neighbour, one chroma sample (two pixels at
// 2× subsampling) on each side.
const WindowMargin = 2

// Rect is a region of an image: X, Y its top-left corner, W×H its size.
type Rect struct{ X, Y, W, H int }

// mcuSize is TurboJPEG's MCU width and height per subsampling (TJSAMP_444,
// 422, 420, GRAY, 440, 411: tjMCUWidth and tjMCUHeight).
var mcuSize = [...][2]int{{8, 8}, {16, 8}, {16, 16}, {8, 8}, {8, 16}, {32, 8}}

// Window is the region DecodeCropRGB decodes for crop c of a w×h image
// whose MCUs are mcuW×mcuH: c grown by WindowMargin on each side (within
// the image), its top-left corner then moved up and left to the MCU grid.
func Window(w, h, mcuW, mcuH int, c Rect) Rect {
	x0 := max(c.X-WindowMargin, 0) / mcuW * mcuW
	y0 := max(c.Y-WindowMargin, 0) / mcuH * mcuH
	x1 := min(c.X+c.W+WindowMargin, w)
	y1 := min(c.Y+c.H+WindowMargin, h)
	return Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0}
}

// The IDCTs a Decoder can run: IDCTAccurate, libjpeg-turbo's default
// when decoding (PIL's and torchvision's), and IDCTFast
// (TJFLAG_FASTDCT), TensorFlow's default, which changes pixels by a level
// or two; an explicit, recorded setting.
const (
	IDCTAccurate = "accurate"
	IDCTFast     = "fast"
)

// IDCTs lists the values SetIDCT accepts.
var IDCTs = []string{IDCTAccurate, IDCTFast}

// TurboJPEG's flags and transform options (turbojpeg.h, 2.x).
const (
	flagNoRealloc = 1024 // TJFLAG_NOREALLOC
	flagFastDCT   = 2048 // TJFLAG_FASTDCT
	xoptCrop      = 4    // TJXOPT_CROP
	xoptCopyNone  = 64   // TJXOPT_COPYNONE
)

// SetIDCT sets the inverse DCT of every later decode: IDCTAccurate (the
// default) or IDCTFast.
func (d *Decoder) SetIDCT(idct string) error {
	switch idct {
	case IDCTAccurate, "":
		d.flags &^= flagFastDCT
	case IDCTFast:
		d.flags |= flagFastDCT
	default:
		return fmt.Errorf("turbojpeg: IDCT %q: want %s or %s", idct, IDCTAccurate, IDCTFast)
	}
	return nil
}

// tjtransform is TurboJPEG's struct tjtransform: the region (tjregion's
// four C ints), the operation, its options, and two pointers.
type tjtransform struct {
	x, y, w, h   int32
	op, options  int32
	data, filter uintptr
}

// cropState is a Decoder's cropped-decoding state, made on its first
// cropped decode and grown, never shrunk: the transformer handle, the
// window's JPEG and its RGB pixels, and the call slots.
type cropState struct {
	handle uintptr // tjInitTransform's
	jpeg   []byte  // the window's JPEG, tjBufSize of the window
	rgb    []byte  // the window decoded, interleaved RGB
	xf     tjtransform
	bufs   [1]uintptr // dstBufs: jpeg's address
	sizes  [1]uint64  // dstSizes (unsigned long)
}

// DecodeCropRGB decodes crop c of jpeg (a w×h image: Header tells it)
// into dst, interleaved 8-bit RGB of c.W×c.H, len(dst) = 3·c.W·c.H: the
// same pixels as DecodeRGB then cropping, decoding only the crop's window
// (Window). A JPEG whose subsampling TurboJPEG cannot name is decoded
// whole, then cropped. It allocates nothing once its buffers have grown
// to the largest window (the first decodes of a size).
func (d *Decoder) DecodeCropRGB(jpeg, dst []byte, w, h int, c Rect) error {
	iw, ih, err := d.Header(jpeg)
	if err != nil {
		return err
	}
	switch {
	case iw != w || ih != h:
		return fmt.Errorf("turbojpeg: image is %dx%d, want %dx%d", iw, ih, w, h)
	case w*h > MaxPixels:
		return fmt.Errorf("turbojpeg: image is %dx%d, more than %d pixels", w, h, MaxPixels)
	case c.W <= 0 || c.H <= 0 || c.X < 0 || c.Y < 0 || c.X+c.W > w || c.Y+c.H > h:
		return fmt.Errorf("turbojpeg: crop %dx%d at (%d, %d) is not inside the %dx%d image", c.W, c.H, c.X, c.Y, w, h)
	case len(dst) != 3*c.W*c.H:
		return fmt.Errorf("turbojpeg: RGB buffer is %d bytes, crop is %dx%d", len(dst), c.W, c.H)
	}
	if d.crop.handle == 0 {
		if d.crop.handle = nativelib.Call(d.l.tjInitTransform); d.crop.handle == 0 {
			return errors.New("turbojpeg: tjInitTransform failed")
		}
	}
	sub := int(d.hdr[2])
	if sub < 0 || sub >= len(mcuSize) {
		// No MCU size to align to: decode whole, then crop.
		win := Rect{W: w, H: h}
		rgb := d.growRGB(win)
		if err := d.decompress(jpeg, rgb, w, h); err != nil {
			return err
		}
		cropRows(dst, rgb, win, c)
		return nil
	}
	win := Window(w, h, mcuSize[sub][0], mcuSize[sub][1], c)
	cut, err := d.cut(jpeg, win, sub)
	if err != nil {
		return err
	}
	rgb := d.growRGB(win)
	if err := d.decompressWith(d.crop.handle, cut, rgb, win.W, win.H); err != nil {
		return err
	}
	cropRows(dst, rgb, win, c)
	return nil
}

// growRGB is the window's RGB buffer, grown to hold win.
func (d *Decoder) growRGB(win Rect) []byte {
	n := 3 * win.W * win.H
	if cap(d.crop.rgb) < n {
		d.crop.rgb = make([]byte, n)
	}
	return d.crop.rgb[:n]
}

// cut runs tjTransform: window win of jpeg (subsampling sub), losslessly
// cut, into the decoder's JPEG buffer (grown to tjBufSize of the window),
// which it returns.
func (d *Decoder) cut(jpeg []byte, win Rect, sub int) ([]byte, error) {
	a := d.args[:3]
	a[0], a[1], a[2] = uintptr(win.W), uintptr(win.H), uintptr(sub)
	need := int(nativelib.CallArgs(d.l.tjBufSize, a))
	if need <= 0 {
		return nil, fmt.Errorf("turbojpeg: tjBufSize(%d, %d, %d) failed", win.W, win.H, sub)
	}
	if cap(d.crop.jpeg) < need {
		d.crop.jpeg = make([]byte, need)
	}
	out := d.crop.jpeg[:need]
	cs := &d.crop
	cs.xf = tjtransform{x: int32(win.X), y: int32(win.Y), w: int32(win.W), h: int32(win.H), options: xoptCrop | xoptCopyNone}
	cs.bufs[0], cs.sizes[0] = bytesAddr(out), uint64(len(out))
	a = d.args[:8]
	a[0], a[1], a[2], a[3] = cs.handle, bytesAddr(jpeg), uintptr(len(jpeg)), 1
	a[4], a[5], a[6], a[7] = uintptrOf(&cs.bufs[0]), uint64Addr(&cs.sizes[0]), xformAddr(&cs.xf), flagNoRealloc
	r := int32(nativelib.CallArgs(d.l.tjTransform, a))
	keepAlive(jpeg)
	keepAlive(out)
	if r != 0 {
		return nil, d.errOf(cs.handle, "crop")
	}
	if n := int(cs.sizes[0]); n <= 0 || n > len(out) {
		return nil, fmt.Errorf("turbojpeg: crop: tjTransform wrote %d bytes into %d", n, len(out))
	}
	return out[:cs.sizes[0]], nil
}

// cropRows copies crop c out of rgb, the window win of the image, into dst.
func cropRows(dst, rgb []byte, win, c Rect) {
	row := 3 * c.W
	for y := range c.H {
		src := 3 * ((c.Y-win.Y+y)*win.W + c.X - win.X)
		copy(dst[y*row:(y+1)*row], rgb[src:src+row])
	}
}
