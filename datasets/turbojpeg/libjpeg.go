package turbojpeg

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/headspace-bench/headspace/internal/nativelib"
)

// The libjpeg API of libjpeg-turbo (Debian's libjpeg62-turbo,
// libjpeg.so.62, the same 2.1.5 sources as libturbojpeg0), for what
// TurboJPEG 2 cannot do: decode part of an image. jpeg_crop_scanline
// limits the decode to the crop's columns (rounded out to iMCU columns),
// jpeg_skip_scanlines passes over the rows above the crop without their
// inverse DCT, upsampling or colour conversion, and the decode stops
// after the crop's last row, so the rows below are not even
// entropy-decoded: TensorFlow's decode_and_crop_jpeg does the same.
//
// libjpeg reports a fatal error by calling its error manager's
// error_exit, which must not return (C programs longjmp out of it; Go
// cannot). Two things keep that safe here:
//
//  1. A JPEG reaches libjpeg only once TurboJPEG (which guards every call
//     with setjmp) has read the same header, with a subsampling it can
//     name and a YCbCr, grey or RGB colour space, and once libjpeg's own
//     header says one Huffman-coded sequential scan holds every component.
//     Past that, libjpeg meets corrupt data with warnings (it fills what
//     is missing and goes on), which are counted and make the decode an
//     error.
//  2. Whatever error_exit is still reached (a Huffman table that cannot
//     be built, memory) is caught by a Go callback on a goroutine of the
//     decoder's own: it reports the error to the caller and parks that
//     goroutine for the process's life, never returning into libjpeg; the
//     caller gets the error, drops that libjpeg object and goes on. At
//     most maxParked goroutines are ever parked; past that, cropped
//     decoding falls back to a full decode.

// LibjpegPackage is the Debian package of the libjpeg API.
const LibjpegPackage = "libjpeg62-turbo"

// LibjpegNames are the library file names the libjpeg API is loaded
// from, in order.
var LibjpegNames = []string{"libjpeg.so.62"}

// The libjpeg 6.2 ABI on 64-bit Linux (jpeglib.h of libjpeg62-turbo
// 2.1.5): the sizes of jpeg_decompress_struct and jpeg_error_mgr and the
// offsets of the fields used, as offsetof gives them. jpeg_CreateDecompress
// checks the size and the version (62) itself, through error_exit.
const (
	jpegLibVersion    = 62
	cinfoSize         = 632
	errMgrSize        = 168
	offErr            = 0
	offNumComponents  = 56
	offOutColorSpace  = 64
	offDCTMethod      = 96
	offOutputWidth    = 136
	offOutputScanline = 168
	offProgressive    = 312
	offArithCode      = 316
	offCompsInScan    = 432
	offErrorExit      = 0   // jpeg_error_mgr.error_exit
	offOutputMessage  = 16  // jpeg_error_mgr.output_message
	offFormatMessage  = 24  // jpeg_error_mgr.format_message
	offNumWarnings    = 128 // jpeg_error_mgr.num_warnings (long)
	jcsExtRGB         = 6   // JCS_EXT_RGB, what TurboJPEG's TJPF_RGB decodes to
	jdctIslow         = 0   // JDCT_ISLOW
	jdctIfast         = 1   // JDCT_IFAST
	jpegHeaderOK      = 1   // JPEG_HEADER_OK
	jmsgLengthMax     = 200
)

// maxParked bounds the goroutines parked by error_exit (see above).
const maxParked = 16

var parked atomic.Int32

// libjpeg is the loaded libjpeg API and the two callbacks its error
// managers point at.
type libjpeg struct {
	stdError, createDecompress, destroyDecompress, abortDecompress uintptr
	memSrc, readHeader, startDecompress                            uintptr
	cropScanline, skipScanlines, readScanlines                     uintptr
	errorExit, outputMessage                                       uintptr // callbacks
}

var (
	jpegOnce sync.Once
	jpegLib  *libjpeg
	jpegErr  error
	// states maps a jpeg_decompress_struct's address to its state, for
	// the callbacks, which libjpeg hands only that address.
	states sync.Map // uintptr → *jstate
)

// loadLibjpeg opens the libjpeg API once.
func loadLibjpeg() (*libjpeg, error) {
	jpegOnce.Do(func() {
		if unsafe.Sizeof(uintptr(0)) != 8 {
			jpegErr = errors.New("turbojpeg: the libjpeg API's structures are laid out here for 64-bit machines only")
			return
		}
		l := &libjpeg{}
		_, err := nativelib.OpenFirst(LibjpegNames, []nativelib.Symbol{
			{Name: "jpeg_std_error", Addr: &l.stdError},
			{Name: "jpeg_CreateDecompress", Addr: &l.createDecompress},
			{Name: "jpeg_destroy_decompress", Addr: &l.destroyDecompress},
			{Name: "jpeg_abort_decompress", Addr: &l.abortDecompress},
			{Name: "jpeg_mem_src", Addr: &l.memSrc},
			{Name: "jpeg_read_header", Addr: &l.readHeader},
			{Name: "jpeg_start_decompress", Addr: &l.startDecompress},
			{Name: "jpeg_crop_scanline", Addr: &l.cropScanline},
			{Name: "jpeg_skip_scanlines", Addr: &l.skipScanlines},
			{Name: "jpeg_read_scanlines", Addr: &l.readScanlines},
		})
		if err != nil {
			jpegErr = fmt.Errorf("turbojpeg: the libjpeg API for cropped decoding: install Debian's %s (%v)", LibjpegPackage, err)
			return
		}
		l.errorExit = nativelib.NewCallback(errorExit)
		l.outputMessage = nativelib.NewCallback(outputMessage)
		jpegLib = l
	})
	return jpegLib, jpegErr
}

// jstate is one libjpeg decompression object, owned by one goroutine
// (serve), with what a cropped decode needs.
type jstate struct {
	// cinfo and errm are the C structures, in Go memory that does not
	// move; 8-byte words for their alignment.
	cinfo    [cinfoSize / 8]uint64
	errm     [errMgrSize / 8]uint64
	l        *libjpeg
	args     [4]uintptr
	xoff, xw uint32 // jpeg_crop_scanline's JDIMENSION arguments
	rows     []uintptr
	msg      [jmsgLengthMax]byte
	warning  string // the first warning's message in this decode
	calls    int    // libjpeg calls in the last decode
	jobs     chan cropJob
	done     chan error
	failed   chan error // error_exit's message, then the goroutine parks
}

// cropJob is one cropped decode for the serving goroutine.
type cropJob struct {
	jpeg, dst []byte
	rgb       *[]byte // the window's scratch, grown by serve
	c         Rect
	w         int
	dct       uint64
}

// errNotSequential is serve's answer for a JPEG libjpeg is not handed
// past its header (progressive, arithmetic-coded, or several scans): the
// caller decodes it whole.
var errNotSequential = errors.New("not one sequential Huffman scan")

func (s *jstate) addr() uintptr { return uintptr(unsafe.Pointer(&s.cinfo[0])) }

func (s *jstate) field(off uintptr) *int32 {
	return (*int32)(unsafe.Add(unsafe.Pointer(&s.cinfo[0]), off))
}

func (s *jstate) errField(off uintptr) *uintptr {
	return (*uintptr)(unsafe.Add(unsafe.Pointer(&s.errm[0]), off))
}

// newJstate makes a decompression object and starts its goroutine.
func newJstate(l *libjpeg) (*jstate, error) {
	s := &jstate{l: l, jobs: make(chan cropJob), done: make(chan error), failed: make(chan error, 1)}
	states.Store(s.addr(), s)
	go s.serve()
	s.jobs <- cropJob{} // the zero job creates the object
	select {
	case err := <-s.done:
		return s, err
	case err := <-s.failed:
		return nil, err
	}
}

// serve runs s's jobs on one goroutine: libjpeg's calls, and its
// callbacks, happen here only.
func (s *jstate) serve() {
	first := true
	for j := range s.jobs {
		if first {
			first = false
			s.create()
			s.done <- nil
			continue
		}
		s.done <- s.decode(j)
	}
	s.args[0] = s.addr()
	nativelib.CallArgs(s.l.destroyDecompress, s.args[:1])
	states.Delete(s.addr())
}

// create is jpeg_std_error, the callbacks set, jpeg_CreateDecompress.
func (s *jstate) create() {
	s.args[0] = uintptr(unsafe.Pointer(&s.errm[0]))
	nativelib.CallArgs(s.l.stdError, s.args[:1])
	*s.errField(offErrorExit) = s.l.errorExit
	*s.errField(offOutputMessage) = s.l.outputMessage
	*(*uintptr)(unsafe.Add(unsafe.Pointer(&s.cinfo[0]), offErr)) = uintptr(unsafe.Pointer(&s.errm[0]))
	a := s.args[:3]
	a[0], a[1], a[2] = s.addr(), jpegLibVersion, cinfoSize
	nativelib.CallArgs(s.l.createDecompress, a)
}

// decode is one cropped decode (see DecodeCropRGB): the window of crop
// j.c grown by WindowMargin, rounded out to iMCU columns by
// jpeg_crop_scanline, its rows above skipped, the rows down to the
// crop's last read, the crop copied into j.dst.
func (s *jstate) decode(j cropJob) error {
	defer func() {
		s.args[0] = s.addr()
		s.call(s.l.abortDecompress, s.args[:1])
	}()
	defer keepAlive(j.jpeg) // libjpeg reads it until the decode ends
	if err := s.start(j); err != nil {
		return err
	}
	y0, ww, err := s.seekWindow(j)
	if err != nil {
		return err
	}
	wh := j.c.Y + j.c.H - y0 // the rows to read: the margin above, the crop
	rgb, err := s.readRows(j.rgb, y0, ww, wh)
	if err != nil {
		return err
	}
	if *s.errField(offNumWarnings) > 0 {
		return fmt.Errorf("turbojpeg: crop: %s", s.warning)
	}
	cropRows(j.dst, rgb, Rect{X: int(s.xoff), Y: y0, W: ww, H: wh}, j.c)
	return nil
}

// start begins the decompression of j.jpeg: its header read, the image
// checked sequential (baseline or extended, Huffman, one scan), its
// output RGB by j's DCT method.
func (s *jstate) start(j cropJob) error {
	s.warning, s.calls = "", 0
	*s.errField(offNumWarnings) = 0
	a := s.args[:3]
	a[0], a[1], a[2] = s.addr(), bytesAddr(j.jpeg), uintptr(len(j.jpeg))
	s.call(s.l.memSrc, a)
	a = s.args[:2]
	a[0], a[1] = s.addr(), 1
	if r := int32(s.call(s.l.readHeader, a)); r != jpegHeaderOK {
		return fmt.Errorf("turbojpeg: crop: jpeg_read_header returned %d", r)
	}
	if *s.field(offProgressive) != 0 || *s.field(offArithCode) != 0 || *s.field(offCompsInScan) != *s.field(offNumComponents) {
		return errNotSequential
	}
	*s.field(offOutColorSpace) = jcsExtRGB
	*s.field(offDCTMethod) = int32(j.dct)
	a = s.args[:1]
	a[0] = s.addr()
	s.call(s.l.startDecompress, a)
	return nil
}

// seekWindow limits the decode to the columns of j's window (s.xoff on,
// as jpeg_crop_scanline rounds them) and skips the rows above it; it
// returns the window's first row and its decoded width.
func (s *jstate) seekWindow(j cropJob) (y0, ww int, err error) {
	c := j.c
	x0, x1 := max(c.X-WindowMargin, 0), min(c.X+c.W+WindowMargin, j.w)
	s.xoff, s.xw = uint32(x0), uint32(x1-x0)
	a := s.args[:3]
	a[0], a[1], a[2] = s.addr(), uintptr(unsafe.Pointer(&s.xoff)), uintptr(unsafe.Pointer(&s.xw))
	s.call(s.l.cropScanline, a)
	ww = int(*s.field(offOutputWidth))
	if int(s.xoff) > x0 || int(s.xoff)+ww < x1 {
		return 0, 0, fmt.Errorf("turbojpeg: crop: jpeg_crop_scanline gave columns %d to %d for %d to %d", s.xoff, int(s.xoff)+ww, x0, x1)
	}
	y0 = max(c.Y-WindowMargin, 0)
	a = s.args[:2]
	a[0], a[1] = s.addr(), uintptr(y0)
	if n := int(s.call(s.l.skipScanlines, a)); n != y0 {
		return 0, 0, fmt.Errorf("turbojpeg: crop: jpeg_skip_scanlines skipped %d rows of %d", n, y0)
	}
	return y0, ww, nil
}

// readRows reads the wh rows of width ww from row y0 on as RGB into
// *buf, grown where it is too small, and returns them.
func (s *jstate) readRows(buf *[]byte, y0, ww, wh int) ([]byte, error) {
	n := 3 * ww * wh
	if cap(*buf) < n {
		*buf = make([]byte, n, n+n/4) // room for the windows of other crops' alignments
	}
	rgb := (*buf)[:n]
	if cap(s.rows) < wh {
		s.rows = make([]uintptr, wh)
	}
	rows := s.rows[:wh]
	for y := range rows {
		rows[y] = bytesAddr(rgb[3*ww*y:])
	}
	for got := 0; got < wh; {
		a := s.args[:3]
		a[0], a[1], a[2] = s.addr(), uintptr(unsafe.Pointer(&rows[got])), uintptr(wh-got)
		k := int(s.call(s.l.readScanlines, a))
		if k <= 0 {
			return nil, fmt.Errorf("turbojpeg: crop: jpeg_read_scanlines read no row at row %d", y0+got)
		}
		got += k
	}
	return rgb, nil
}

// call is nativelib.CallArgs, counted.
func (s *jstate) call(fn uintptr, args []uintptr) uintptr {
	s.calls++
	return nativelib.CallArgs(fn, args)
}

// message is libjpeg's text of the error manager's last message
// (format_message).
func (s *jstate) message() string {
	a := s.args[:2]
	a[0], a[1] = s.addr(), uintptr(unsafe.Pointer(&s.msg[0]))
	nativelib.CallArgs(*s.errField(offFormatMessage), a)
	return nativelib.CString(&s.msg[0], len(s.msg))
}

// outputMessage is the error managers' output_message, which libjpeg's
// emit_message calls for the first warning of a decode (and counts every
// warning in num_warnings; trace messages stay silent at trace level 0):
// it keeps the message, instead of printing it to stderr.
func outputMessage(cinfo uintptr) {
	if v, ok := states.Load(cinfo); ok {
		s := v.(*jstate)
		s.warning = s.message()
	}
}

// errorExit is the error managers' error_exit: it reports the error on
// the object's failed channel and parks its goroutine for good, never
// returning into libjpeg (see the package notes above).
func errorExit(cinfo uintptr) {
	v, ok := states.Load(cinfo)
	if !ok {
		select {} // not ours: nothing to report to, and never return
	}
	s := v.(*jstate)
	states.Delete(cinfo)
	parked.Add(1)
	s.failed <- fmt.Errorf("turbojpeg: crop: libjpeg: %s", s.message())
	select {}
}
