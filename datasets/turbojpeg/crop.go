package turbojpeg

import (
	"errors"
	"fmt"
)

// WindowMargin is how many pixels the decoded window reaches past the
// crop where the image goes on: libjpeg-turbo's fancy upsampling blends
// each chroma sample with its neighbour, and replicates the edge sample at
// a window's edge, so the window must hold one chroma sample (two pixels
// at 2× subsampling) beyond the crop on each side for the crop's pixels to
// be a full decode's (TestDecodeCropEqualsFullDecode fails with 0).
const WindowMargin = 2

// Rect is a region of an image: X, Y its top-left corner, W×H its size.
type Rect struct{ X, Y, W, H int }

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

// TurboJPEG's flags (turbojpeg.h, 2.x).
const (
	flagNoRealloc = 1024 // TJFLAG_NOREALLOC
	flagFastDCT   = 2048 // TJFLAG_FASTDCT
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

// The TurboJPEG colour spaces the libjpeg API is handed (TJCS_RGB,
// TJCS_YCbCr, TJCS_GRAY: the colour conversions to RGB libjpeg has) and
// the subsamplings TurboJPEG names (TJSAMP_444 to TJSAMP_411); another
// JPEG is decoded whole, then cropped.
const (
	tjcsGray     = 2
	tjSubsamples = 6
)

// errWhole is cropDecode's answer for a JPEG it leaves to a full decode.
var errWhole = errors.New("decode whole")

// DecodeCropRGB decodes crop c of jpeg (a w×h image: Header tells it)
// into dst, interleaved 8-bit RGB of c.W×c.H, len(dst) = 3·c.W·c.H: the
// same pixels as DecodeRGB then cropping, with the decoder's IDCT, but
// decoding only the crop's rows and columns (and WindowMargin around
// them) through the libjpeg API (libjpeg.go), which it loads on first
// use (an error naming Debian's libjpeg62-turbo where it is missing). A
// JPEG the libjpeg API is not handed (progressive, arithmetic-coded,
// CMYK, an unusual subsampling) is decoded whole, then cropped. It
// allocates nothing once its buffers have grown to the largest window
// (the first decodes).
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
	if err := d.cropDecode(jpeg, dst, w, c); err != errWhole {
		return err
	}
	n := 3 * w * h
	if cap(d.rgb) < n {
		d.rgb = make([]byte, n)
	}
	if err := d.decompress(jpeg, d.rgb[:n], w, h); err != nil {
		return err
	}
	cropRows(dst, d.rgb[:n], Rect{W: w, H: h}, c)
	return nil
}

// cropDecode hands the cropped decode to the decoder's libjpeg object,
// made on first use, or answers errWhole.
func (d *Decoder) cropDecode(jpeg, dst []byte, w int, c Rect) error {
	sub, cs := d.hdr[2], d.hdr[3]
	if sub < 0 || sub >= tjSubsamples || cs < 0 || cs > tjcsGray || parked.Load() >= maxParked {
		return errWhole
	}
	if d.js == nil {
		l, err := loadLibjpeg()
		if err != nil {
			return err
		}
		if d.js, err = newJstate(l); err != nil {
			return err
		}
	}
	dct := uint64(jdctIslow)
	if d.flags&flagFastDCT != 0 {
		dct = jdctIfast
	}
	d.js.jobs <- cropJob{jpeg: jpeg, dst: dst, rgb: &d.rgb, c: c, w: w, dct: dct}
	select {
	case err := <-d.js.done:
		if err == errNotSequential {
			return errWhole
		}
		return err
	case err := <-d.js.failed:
		d.js = nil // its goroutine is parked inside libjpeg: never used again
		return err
	}
}

// cropRows copies crop c out of rgb, the window win of the image, into dst.
func cropRows(dst, rgb []byte, win, c Rect) {
	row := 3 * c.W
	for y := range c.H {
		src := 3 * ((c.Y-win.Y+y)*win.W + c.X - win.X)
		copy(dst[y*row:(y+1)*row], rgb[src:src+row])
	}
}
