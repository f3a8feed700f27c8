// Package turbojpeg decodes JPEG with libjpeg-turbo's TurboJPEG API, the
// decoder behind PIL, torchvision, SPDL and DALI's CPU path, loaded at run
// time with purego through internal/nativelib: no cgo, headspace stays one
// static binary, and a machine without the library runs everything else.
//
// Load opens Debian's libturbojpeg0 (libturbojpeg.so.0) once. A Decoder is
// one TurboJPEG handle with its argument and result slots, used by one
// goroutine at a time; DecodeRGB writes interleaved RGB into the caller's
// buffer, so a worker that keeps its Decoder and its buffer decodes with
// no allocation per image (BenchmarkDecode proves it with -benchmem).
//
// It uses the TurboJPEG 2 functions (tjInitDecompress, tjDecompressHeader3,
// tjDecompress2, tjGetScalingFactors), which libjpeg-turbo 2.x and 3.x
// both export.
//
// # Scaled decoding
//
// DecodeRGBScaled decodes at one of the library's scaling factors (M/8,
// ScalingFactors lists them), inside the inverse DCT: a 1/2 or 1/4 decode
// skips most of the IDCT, upsampling and colour conversion work. It is
// not a resize of the full image: libjpeg-turbo computes the reduced
// image from the DCT coefficients (a box-like low-pass), so its pixels
// are close to, not equal to, a resize's. Fit is the one rule that
// picks the factor for a minimum size. The library has no version call;
// Version reads the "libjpeg-turbo version X.Y.Z" string the library
// file carries, for result files.
//
// # Cropped decoding
//
// DecodeCropRGB decodes only a crop: its pixels are those of a full
// decode's crop, bit for bit, at a fraction of the work (the rows below
// the crop are not read, those above not inverse-transformed, the columns
// outside it neither). TurboJPEG 3 has tj3SetCroppingRegion for it;
// Debian 12's libjpeg-turbo 2.1.5 has TurboJPEG 2 only, whose one way to
// crop, tjTransform's lossless crop, entropy-decodes the whole image and
// re-encodes the window, and saves nothing (BenchmarkDecodeCrop). So
// DecodeCropRGB goes through the libjpeg API of the same libjpeg-turbo
// (Debian's libjpeg62-turbo), as TensorFlow's decode_and_crop_jpeg does;
// libjpeg.go says how its longjmp error handling is kept out of Go.
// SetIDCT chooses the inverse DCT (TJFLAG_FASTDCT, TensorFlow's default,
// changes pixels): an explicit setting, the accurate one by default.
package turbojpeg

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sync"

	"github.com/headspace-bench/headspace/internal/nativelib"
)

// Package is the Debian package that provides the library.
const Package = "libturbojpeg0"

// Names are the library file names Load tries, in order.
var Names = []string{"libturbojpeg.so.0", "libturbojpeg.so"}

// ErrUnavailable is wrapped by Load's error when the library cannot be
// loaded: not installed, or not Linux.
var ErrUnavailable = errors.New("libturbojpeg not available")

// Library is the loaded TurboJPEG library.
type Library struct {
	path, version string

	tjInitDecompress, tjDecompressHeader3, tjDecompress2 uintptr
	tjGetScalingFactors                                  uintptr
	tjGetErrorStr2, tjDestroy                            uintptr

	factors []Factor // tjGetScalingFactors, largest first
}

var (
	loadOnce sync.Once
	lib      *Library
	loadErr  error
)

// Load opens the library once and returns it; later calls return the same
// library or error. The error is one line naming the Debian package.
func Load() (*Library, error) {
	loadOnce.Do(func() { lib, loadErr = load() })
	return lib, loadErr
}

func load() (*Library, error) {
	l := &Library{}
	lib, err := nativelib.OpenFirst(Names, []nativelib.Symbol{
		{Name: "tjInitDecompress", Addr: &l.tjInitDecompress},
		{Name: "tjDecompressHeader3", Addr: &l.tjDecompressHeader3},
		{Name: "tjDecompress2", Addr: &l.tjDecompress2},
		{Name: "tjGetErrorStr2", Addr: &l.tjGetErrorStr2},
		{Name: "tjDestroy", Addr: &l.tjDestroy},
		{Name: "tjGetScalingFactors", Addr: &l.tjGetScalingFactors},
	})
	if err != nil {
		return nil, fmt.Errorf("turbojpeg: %w: install Debian's %s (apt-get install %s) or use --decoder go (%v)", ErrUnavailable, Package, Package, err)
	}
	if l.factors, err = scalingFactors(l.tjGetScalingFactors); err != nil {
		return nil, fmt.Errorf("turbojpeg: %s: %w", lib.Name, err)
	}
	l.path = lib.File()
	l.version = fileVersion(l.path)
	return l, nil
}

var versionRE = regexp.MustCompile(`libjpeg-turbo version ([0-9]+\.[0-9]+(\.[0-9]+)?)`)

// fileVersion finds libjpeg-turbo's version string in the library file,
// or returns "unknown".
func fileVersion(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	if m := versionRE.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// scalingFactors asks the library for its scaling factors
// (tjGetScalingFactors: a static array of {num, denom} C int pairs).
func scalingFactors(fn uintptr) ([]Factor, error) {
	var n int32
	args := []uintptr{int32Addr(&n)}
	p := nativelib.CallArgs(fn, args)
	if p == 0 || n <= 0 || n > 64 {
		return nil, fmt.Errorf("tjGetScalingFactors returned %d factors", n)
	}
	v := cInt32s(p, 2*int(n))
	out := make([]Factor, 0, n)
	for i := 0; i < len(v); i += 2 {
		if v[i] <= 0 || v[i+1] <= 0 {
			return nil, fmt.Errorf("tjGetScalingFactors: factor %d/%d", v[i], v[i+1])
		}
		out = append(out, Factor{Num: int(v[i]), Denom: int(v[i+1])})
	}
	slices.SortStableFunc(out, func(a, b Factor) int { return cmp.Compare(b.Num*a.Denom, a.Num*b.Denom) })
	return out, nil
}

// Factor is a TurboJPEG scaling factor, Num/Denom.
type Factor struct{ Num, Denom int }

// Full is the factor 1/1: no scaling.
var Full = Factor{1, 1}

// String writes f as "1/4".
func (f Factor) String() string { return fmt.Sprintf("%d/%d", f.Num, f.Denom) }

// Scaled is a dimension scaled by f, rounded up, as TurboJPEG's TJSCALED
// macro computes the decoded image's width and height.
func (f Factor) Scaled(dim int) int { return (dim*f.Num + f.Denom - 1) / f.Denom }

// less reports whether f is a smaller factor than g.
func (f Factor) less(g Factor) bool { return f.Num*g.Denom < g.Num*f.Denom }

// Fit is the rule for scaled decoding, in one place: of factors (a
// library's ScalingFactors), the smallest that scales a w×h image to at
// least minW×minH, so that a minW×minH crop can still be drawn from the
// decoded image, among 1/1, 1/2, 1/4 and 1/8. It reports false when none
// does (the image itself is smaller than minW×minH).
//
// Factors above 1/1 would upscale. The other M/8 factors are left out
// because they do not pay: libjpeg-turbo has SIMD inverse DCTs for 1/1,
// 1/2, 1/4 and 1/8 only, and reconstructs 4:2:0 chroma at the other
// factors with its generic C IDCTs of up to 14 points. On a 1024²
// natural JPEG, in CPU time per image, 5/8, 3/4 and 7/8 cost 1.6 to 2.3
// times a full decode, 3/8 as much as one, while 1/4 and 1/8 save 30 and
// 39% (BenchmarkDecodeScaled; results/decode-scale-factors.txt).
func Fit(factors []Factor, w, h, minW, minH int) (Factor, bool) {
	best, ok := Factor{}, false
	for _, f := range factors {
		if !simd(f) || f.Scaled(w) < minW || f.Scaled(h) < minH {
			continue
		}
		if !ok || f.less(best) {
			best, ok = f, true
		}
	}
	return best, ok
}

// simd reports whether f is 1/1, 1/2, 1/4 or 1/8, the factors Fit
// chooses from.
func simd(f Factor) bool {
	return f.Num == 1 && (f.Denom == 1 || f.Denom == 2 || f.Denom == 4 || f.Denom == 8)
}

// ScalingFactors are the factors the library decodes at, largest first
// (libjpeg-turbo 2.x: 2/1 down to 1/8 in steps of 1/8). Callers must not
// modify the slice.
func (l *Library) ScalingFactors() []Factor { return l.factors }

// Fit is Fit with the library's factors.
func (l *Library) Fit(w, h, minW, minH int) (Factor, bool) { return Fit(l.factors, w, h, minW, minH) }

// Path is the library file that was loaded (its resolved path where the
// system tells it).
func (l *Library) Path() string { return l.path }

// Version is libjpeg-turbo's version, e.g. "2.1.5", or "unknown".
func (l *Library) Version() string { return l.version }

// String names the decoder for a result file: "libjpeg-turbo 2.1.5".
func (l *Library) String() string { return "libjpeg-turbo " + l.version }

// TurboJPEG's constants (turbojpeg.h).
const (
	pixelRGB = 0 // TJPF_RGB
	// MaxPixels bounds the images DecodeRGB accepts, as the readers
	// bound theirs: 8192×8192.
	MaxPixels = 8192 * 8192
)

// Decoder is a TurboJPEG decompression handle with its call slots. It is
// used by one goroutine at a time; Close it.
type Decoder struct {
	l      *Library
	handle uintptr
	// C int results of tjDecompressHeader3, written by the library:
	// width, height, subsampling, colour space.
	hdr   [4]int32
	args  [9]uintptr
	flags uintptr // TurboJPEG flags of every decode: SetIDCT's
	js    *jstate // DecodeCropRGB's libjpeg object, made on first use
	rgb   []byte  // DecodeCropRGB's window, grown to the largest
}

// NewDecoder returns a decoder with its own handle.
func (l *Library) NewDecoder() (*Decoder, error) {
	h := nativelib.Call(l.tjInitDecompress)
	if h == 0 {
		return nil, errors.New("turbojpeg: tjInitDecompress failed")
	}
	return &Decoder{l: l, handle: h}, nil
}

// Close destroys the handle.
func (d *Decoder) Close() error {
	if d.handle != 0 {
		d.args[0] = d.handle
		nativelib.CallArgs(d.l.tjDestroy, d.args[:1])
		d.handle = 0
	}
	if d.js != nil {
		close(d.js.jobs) // its goroutine destroys the libjpeg object
		d.js = nil
	}
	return nil
}

// Header reads the JPEG's size from its header.
func (d *Decoder) Header(jpeg []byte) (w, h int, err error) {
	if len(jpeg) == 0 {
		return 0, 0, errors.New("turbojpeg: empty input")
	}
	a := d.args[:7]
	a[0], a[1], a[2] = d.handle, bytesAddr(jpeg), uintptr(len(jpeg))
	a[3], a[4], a[5], a[6] = int32Addr(&d.hdr[0]), int32Addr(&d.hdr[1]), int32Addr(&d.hdr[2]), int32Addr(&d.hdr[3])
	r := int32(nativelib.CallArgs(d.l.tjDecompressHeader3, a))
	keepAlive(jpeg)
	if r != 0 {
		return 0, 0, d.err("header")
	}
	return int(d.hdr[0]), int(d.hdr[1]), nil
}

// DecodeRGB decodes jpeg into dst as interleaved 8-bit RGB of w×h, which
// must be the image's size (Header tells it) and len(dst) = 3·w·h. It
// allocates nothing.
func (d *Decoder) DecodeRGB(jpeg, dst []byte, w, h int) error {
	iw, ih, err := d.Header(jpeg)
	if err != nil {
		return err
	}
	switch {
	case iw != w || ih != h:
		return fmt.Errorf("turbojpeg: image is %dx%d, want %dx%d", iw, ih, w, h)
	case w*h > MaxPixels:
		return fmt.Errorf("turbojpeg: image is %dx%d, more than %d pixels", w, h, MaxPixels)
	case len(dst) != 3*w*h:
		return fmt.Errorf("turbojpeg: RGB buffer is %d bytes, image is %dx%d", len(dst), w, h)
	}
	return d.decompress(jpeg, dst, w, h)
}

// DecodeRGBScaled decodes jpeg at factor f (one of the library's
// ScalingFactors; Full decodes at full size) into the start of dst as
// interleaved 8-bit RGB, and returns the decoded size, f.Scaled of the
// image's. w×h must be the image's size (Header tells it), and dst must
// hold at least 3·f.Scaled(w)·f.Scaled(h) bytes; what lies beyond is
// left as it was. It allocates nothing.
func (d *Decoder) DecodeRGBScaled(jpeg, dst []byte, w, h int, f Factor) (sw, sh int, err error) {
	iw, ih, err := d.Header(jpeg)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case !slices.Contains(d.l.factors, f):
		return 0, 0, fmt.Errorf("turbojpeg: scaling factor %s: not one of the library's", f)
	case iw != w || ih != h:
		return 0, 0, fmt.Errorf("turbojpeg: image is %dx%d, want %dx%d", iw, ih, w, h)
	case w*h > MaxPixels:
		return 0, 0, fmt.Errorf("turbojpeg: image is %dx%d, more than %d pixels", w, h, MaxPixels)
	}
	sw, sh = f.Scaled(w), f.Scaled(h)
	if len(dst) < 3*sw*sh {
		return 0, 0, fmt.Errorf("turbojpeg: RGB buffer is %d bytes, image is %dx%d at %s: %dx%d", len(dst), w, h, f, sw, sh)
	}
	if err := d.decompress(jpeg, dst, sw, sh); err != nil {
		return 0, 0, err
	}
	return sw, sh, nil
}

// decompress runs tjDecompress2 into dst at w×h, which the library
// reaches with the largest scaling factor whose output fits.
func (d *Decoder) decompress(jpeg, dst []byte, w, h int) error {
	return d.decompressWith(d.handle, jpeg, dst, w, h)
}

// decompressWith is decompress on handle h, with the decoder's flags
// (SetIDCT; without them the accurate integer IDCT, as PIL decodes by
// default).
func (d *Decoder) decompressWith(handle uintptr, jpeg, dst []byte, w, h int) error {
	a := d.args[:9]
	a[0], a[1], a[2] = handle, bytesAddr(jpeg), uintptr(len(jpeg))
	a[3], a[4], a[5], a[6] = bytesAddr(dst), uintptr(w), uintptr(3*w), uintptr(h)
	a[7], a[8] = pixelRGB, d.flags
	r := int32(nativelib.CallArgs(d.l.tjDecompress2, a))
	keepAlive(jpeg)
	keepAlive(dst)
	if r != 0 {
		return d.errOf(handle, "decode")
	}
	return nil
}

// err is the handle's last error message.
func (d *Decoder) err(what string) error { return d.errOf(d.handle, what) }

// errOf is handle h's last error message.
func (d *Decoder) errOf(h uintptr, what string) error {
	d.args[0] = h
	p := nativelib.CallArgs(d.l.tjGetErrorStr2, d.args[:1])
	return fmt.Errorf("turbojpeg: %s: %s", what, cString(p))
}
