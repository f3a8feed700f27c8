// Package turbojpeg decodes JPEG with libjpeg-turbo's TurboJPEG API, the
// decoder behind PIL, torchvision, SPDL and DALI's CPU path, loaded at run
// time with purego: no cgo, headspace stays one static binary, and a
// machine without the library runs everything else.
//
// Load opens Debian's libturbojpeg0 (libturbojpeg.so.0) once. A Decoder is
// one TurboJPEG handle with its argument and result slots, used by one
// goroutine at a time; DecodeRGB writes interleaved RGB into the caller's
// buffer, so a worker that keeps its Decoder and its buffer decodes with
// no allocation per image (BenchmarkDecode proves it with -benchmem).
//
// It uses the TurboJPEG 2 functions (tjInitDecompress, tjDecompressHeader3,
// tjDecompress2), which libjpeg-turbo 2.x and 3.x both export. The library
// has no version call; Version reads the "libjpeg-turbo version X.Y.Z"
// string the library file carries, for result files.
package turbojpeg

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
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
	tjGetErrorStr2, tjDestroy                            uintptr
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
	var h uintptr
	var errs []error
	var name string
	for _, n := range Names {
		var err error
		if h, err = dlopen(n); err == nil {
			name = n
			break
		}
		errs = append(errs, err)
	}
	if h == 0 {
		return nil, fmt.Errorf("turbojpeg: %w: install Debian's %s (apt-get install %s) or use --decoder go (%v)", ErrUnavailable, Package, Package, errors.Join(errs...))
	}
	l := &Library{}
	for _, s := range []struct {
		name string
		addr *uintptr
	}{
		{"tjInitDecompress", &l.tjInitDecompress},
		{"tjDecompressHeader3", &l.tjDecompressHeader3},
		{"tjDecompress2", &l.tjDecompress2},
		{"tjGetErrorStr2", &l.tjGetErrorStr2},
		{"tjDestroy", &l.tjDestroy},
	} {
		a, err := dlsym(h, s.name)
		if err != nil {
			return nil, fmt.Errorf("turbojpeg: %s has no %s: %w: install Debian's %s", name, s.name, ErrUnavailable, Package)
		}
		*s.addr = a
	}
	l.path = loadedPath(name)
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
	hdr  [4]int32
	args [9]uintptr
}

// NewDecoder returns a decoder with its own handle.
func (l *Library) NewDecoder() (*Decoder, error) {
	h := ccall(l.tjInitDecompress)
	if h == 0 {
		return nil, errors.New("turbojpeg: tjInitDecompress failed")
	}
	return &Decoder{l: l, handle: h}, nil
}

// Close destroys the handle.
func (d *Decoder) Close() error {
	if d.handle != 0 {
		d.args[0] = d.handle
		callArgs(d.l.tjDestroy, d.args[:1])
		d.handle = 0
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
	r := int32(callArgs(d.l.tjDecompressHeader3, a))
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
	a := d.args[:9]
	a[0], a[1], a[2] = d.handle, bytesAddr(jpeg), uintptr(len(jpeg))
	a[3], a[4], a[5], a[6] = bytesAddr(dst), uintptr(w), uintptr(3*w), uintptr(h)
	a[7], a[8] = pixelRGB, 0 // accurate integer DCT, as PIL decodes by default
	r := int32(callArgs(d.l.tjDecompress2, a))
	keepAlive(jpeg)
	keepAlive(dst)
	if r != 0 {
		return d.err("decode")
	}
	return nil
}

// err is the handle's last error message.
func (d *Decoder) err(what string) error {
	d.args[0] = d.handle
	p := callArgs(d.l.tjGetErrorStr2, d.args[:1])
	return fmt.Errorf("turbojpeg: %s: %s", what, cString(p))
}
