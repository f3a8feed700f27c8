package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"github.com/headspace-bench/headspace/internal/nativelib"
)

// NvjpegEnv names a libnvjpeg to load instead of searching for one.
const NvjpegEnv = "HEADSPACE_NVJPEG"

// NvjpegCandidates lists where OpenNvjpeg looks for libnvjpeg, in order:
// $HEADSPACE_NVJPEG; the sonames the dynamic loader finds (a CUDA install
// on the library path); a CUDA install under /usr/local/cuda*; and the
// NVIDIA libraries that ship with the PyTorch wheel (nvidia-nvjpeg-cu*, in
// nvidia/nvjpeg/lib/ of a site-packages or dist-packages: $VIRTUAL_ENV's,
// the user's, the system's).
func NvjpegCandidates() []string {
	var globs []string
	for _, cuda := range []string{"/usr/local/cuda", "/usr/local/cuda-*"} {
		globs = append(globs, cuda+"/lib64/libnvjpeg.so*", cuda+"/targets/*/lib/libnvjpeg.so*")
	}
	globs = append(globs, pythonLibGlobs("nvjpeg", "libnvjpeg.so*")...)
	return nativelib.Candidates(NvjpegEnv, []string{"libnvjpeg.so.12", "libnvjpeg.so.11", "libnvjpeg.so"}, globs)
}

// nvjpegLib is an opened libnvjpeg: the entry points the decoder calls.
type nvjpegLib struct {
	path                                           string
	create, destroy, stateCreate, stateDestroy     uintptr
	getImageInfo, decodeBatchedInit, decodeBatched uintptr
	getProperty                                    uintptr
	createEx                                       uintptr // nvjpegCreateEx, to ask for a backend; 0 if absent
}

// OpenNvjpeg opens the first of paths (NvjpegCandidates when empty) that
// loads and has nvJPEG's batched decode API. Without one the error is one
// line: "no nvJPEG library found (libnvjpeg): …", naming what was tried.
func openNvjpeg(paths []string) (*nvjpegLib, error) {
	if len(paths) == 0 {
		paths = NvjpegCandidates()
	}
	l := &nvjpegLib{}
	lib, err := nativelib.OpenFirst(paths, []nativelib.Symbol{
		{Name: "nvjpegCreateSimple", Addr: &l.create},
		{Name: "nvjpegDestroy", Addr: &l.destroy},
		{Name: "nvjpegJpegStateCreate", Addr: &l.stateCreate},
		{Name: "nvjpegJpegStateDestroy", Addr: &l.stateDestroy},
		{Name: "nvjpegGetImageInfo", Addr: &l.getImageInfo},
		{Name: "nvjpegDecodeBatchedInitialize", Addr: &l.decodeBatchedInit},
		{Name: "nvjpegDecodeBatched", Addr: &l.decodeBatched},
		{Name: "nvjpegGetProperty", Addr: &l.getProperty},
	})
	if err != nil {
		return nil, fmt.Errorf("no nvJPEG library found (libnvjpeg; set %s, install CUDA's libnvjpeg or PyTorch's nvidia-nvjpeg-cu12): %w",
			NvjpegEnv, err)
	}
	l.path = lib.Name
	l.createEx = lib.Lookup("nvjpegCreateEx")
	return l, nil
}

// The backends a JPEGDecoder decodes with (JPEGDecoder.Backend).
const (
	// NvjpegHardware is NVJPEG_BACKEND_HARDWARE: the card's JPEG
	// decoding engines (A100, H100 and later), baseline JPEGs only.
	NvjpegHardware = "hardware"
	// NvjpegDefault is nvjpegCreateSimple's backend: hybrid CPU/GPU
	// decoding on the SMs, for every card and every JPEG.
	NvjpegDefault = "default"
)

// NvjpegBackendEnv chooses the backend: "hardware", "default", or unset
// (or "auto") for the hardware decoder where the card has one, else the
// default.
const NvjpegBackendEnv = "HEADSPACE_NVJPEG_BACKEND"

// nvjpegBackendHardware is nvjpegBackend_t's NVJPEG_BACKEND_HARDWARE.
const nvjpegBackendHardware = 3

// nvjpegStatusNames are nvjpegStatus_t's names.
var nvjpegStatusNames = map[int]string{
	1: "NVJPEG_STATUS_NOT_INITIALIZED", 2: "NVJPEG_STATUS_INVALID_PARAMETER", 3: "NVJPEG_STATUS_BAD_JPEG",
	4: "NVJPEG_STATUS_JPEG_NOT_SUPPORTED", 5: "NVJPEG_STATUS_ALLOCATOR_FAILURE", 6: "NVJPEG_STATUS_EXECUTION_FAILED",
	7: "NVJPEG_STATUS_ARCH_MISMATCH", 8: "NVJPEG_STATUS_INTERNAL_ERROR", 9: "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
}

// nvjpegCheck turns an nvjpegStatus_t into nil or an *Error naming call.
func nvjpegCheck(call string, r uintptr) error {
	code := int(uint32(r))
	if code == 0 {
		return nil
	}
	name, ok := nvjpegStatusNames[code]
	if !ok {
		name = fmt.Sprintf("nvjpegStatus_t %d", code)
	}
	return &Error{Call: call, Code: code, Name: name}
}

// nvjpegOutputRGB is NVJPEG_OUTPUT_RGB: three planes, R, G and B, the
// layout of a uint8 batch's samples (batching.Batch.Pix).
const nvjpegOutputRGB = 3

// nvjpegOutputRGBI is NVJPEG_OUTPUT_RGBI: interleaved RGB in channel 0, the
// layout of a raw image in a --device-crop sample of the device transform
// (transforms.DeviceApplier), which transform_crop reads.
const nvjpegOutputRGBI = 5

// nvjpegImage is nvjpegImage_t: four channel pointers and their pitches.
type nvjpegImage struct {
	channel [4]uint64
	pitch   [4]uint64
}

// JPEGDecoder decodes batches of JPEG files on the GPU with nvJPEG's
// batched API (nvjpegDecodeBatched, hybrid CPU/GPU decoding), into device
// memory as planar RGB: the uint8 batch layout, 3 planes of w×h a sample,
// which the Net's convert_scale reads. Calls run on the context's driver
// thread, where its context is current. A JPEGDecoder is used by one
// goroutine at a time.
type JPEGDecoder struct {
	c             *Context
	lib           *nvjpegLib
	handle, state uintptr
	stream        uintptr
	batch         int
	threads       int
	format        int    // nvjpegOutputRGB (Decode) or nvjpegOutputRGBI (DecodeSamples)
	backend       string // NvjpegHardware or NvjpegDefault
	inited        int    // the batch size nvjpegDecodeBatchedInitialize was last given
	images        []nvjpegImage
	data, lengths []uintptr
	pin           runtime.Pinner
}

// NewJPEGDecoder opens libnvjpeg (paths as OpenNvjpeg's; empty searches
// NvjpegCandidates) and prepares batched decoding of up to batch images,
// with maxThreads CPU threads for nvJPEG's host stage.
func NewJPEGDecoder(c *Context, paths []string, batch, maxThreads int) (*JPEGDecoder, error) {
	return newJPEGDecoder(c, paths, batch, maxThreads, nvjpegOutputRGB)
}

// NewJPEGSampleDecoder is NewJPEGDecoder for DecodeSamples: its output is
// interleaved RGB (NVJPEG_OUTPUT_RGBI), the raw image of a device
// transform's --device-crop sample.
func NewJPEGSampleDecoder(c *Context, paths []string, batch, maxThreads int) (*JPEGDecoder, error) {
	return newJPEGDecoder(c, paths, batch, maxThreads, nvjpegOutputRGBI)
}

func newJPEGDecoder(c *Context, paths []string, batch, maxThreads, format int) (*JPEGDecoder, error) {
	if batch <= 0 || maxThreads <= 0 {
		return nil, fmt.Errorf("nvjpeg: batch %d and threads %d must be positive", batch, maxThreads)
	}
	lib, err := openNvjpeg(paths)
	if err != nil {
		return nil, err
	}
	want := os.Getenv(NvjpegBackendEnv)
	switch want {
	case "", "auto", NvjpegHardware, NvjpegDefault:
	default:
		return nil, fmt.Errorf("nvjpeg: %s=%q: want hardware, default or auto", NvjpegBackendEnv, want)
	}
	d := &JPEGDecoder{c: c, lib: lib, batch: batch, threads: maxThreads, format: format, inited: batch, images: make([]nvjpegImage, batch),
		data: make([]uintptr, batch), lengths: make([]uintptr, batch)}
	err = c.run(func() error {
		// The card's decoding engines first, where asked or left to us;
		// a card without them (or a library without nvjpegCreateEx)
		// refuses, and the default backend takes over unless hardware
		// was asked for.
		var hwErr error
		if want != NvjpegDefault {
			if lib.createEx == 0 {
				hwErr = fmt.Errorf("%s has no nvjpegCreateEx", lib.path)
			} else if hwErr = d.open(true); hwErr == nil {
				d.backend = NvjpegHardware
			} else {
				d.release()
			}
			if hwErr != nil && want == NvjpegHardware {
				return fmt.Errorf("the hardware backend (%s=hardware): %w", NvjpegBackendEnv, hwErr)
			}
		}
		if d.backend == "" {
			if err := d.open(false); err != nil {
				return err
			}
			d.backend = NvjpegDefault
		}
		var err error
		d.stream, err = c.streamCreate()
		return err
	})
	if err != nil {
		return nil, errors.Join(err, d.Close())
	}
	return d, nil
}

// open creates the handle (with the hardware backend, or
// nvjpegCreateSimple's), the state and the batched decoder, on the driver
// thread.
func (d *JPEGDecoder) open(hardware bool) error {
	lib := d.lib
	if hardware {
		if err := nvjpegCheck("nvjpegCreateEx", nativelib.Call(lib.createEx, nvjpegBackendHardware, 0, 0, 0, uintptr(unsafe.Pointer(&d.handle)))); err != nil {
			return err
		}
	} else if err := nvjpegCheck("nvjpegCreateSimple", nativelib.Call(lib.create, uintptr(unsafe.Pointer(&d.handle)))); err != nil {
		return err
	}
	if err := nvjpegCheck("nvjpegJpegStateCreate", nativelib.Call(lib.stateCreate, d.handle, uintptr(unsafe.Pointer(&d.state)))); err != nil {
		return err
	}
	return d.initBatch(d.batch)
}

// initBatch readies the batched decoder for batches of n images, on the
// driver thread.
func (d *JPEGDecoder) initBatch(n int) error {
	return nvjpegCheck("nvjpegDecodeBatchedInitialize", nativelib.Call(d.lib.decodeBatchedInit, d.handle, d.state,
		uintptr(n), uintptr(d.threads), uintptr(d.format)))
}

// release destroys the state and the handle, on the driver thread.
func (d *JPEGDecoder) release() error {
	var errs []error
	if d.state != 0 {
		errs = append(errs, nvjpegCheck("nvjpegJpegStateDestroy", nativelib.Call(d.lib.stateDestroy, d.state)))
		d.state = 0
	}
	if d.handle != 0 {
		errs = append(errs, nvjpegCheck("nvjpegDestroy", nativelib.Call(d.lib.destroy, d.handle)))
		d.handle = 0
	}
	return errors.Join(errs...)
}

// Backend is the backend the decoder decodes with: NvjpegHardware, the
// card's JPEG engines, or NvjpegDefault. What a result file records beside
// the library's version.
func (d *JPEGDecoder) Backend() string { return d.backend }

// Library is the path of the libnvjpeg the decoder uses.
func (d *JPEGDecoder) Library() string { return d.lib.path }

// Version is the library's version, major.minor.patch, from
// nvjpegGetProperty: what a result file records beside decoder nvjpeg.
func (d *JPEGDecoder) Version() (string, error) { return d.lib.version() }

func (l *nvjpegLib) version() (string, error) {
	var v [3]int32
	for k := range v {
		// libraryPropertyType: MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2.
		if err := nvjpegCheck("nvjpegGetProperty", nativelib.Call(l.getProperty, uintptr(k), uintptr(unsafe.Pointer(&v[k])))); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]), nil
}

// ImageInfo returns a JPEG's components, width and height (of its first
// component, the image's size), read by nvjpegGetImageInfo.
func (d *JPEGDecoder) ImageInfo(jpeg []byte) (components, w, h int, err error) {
	if len(jpeg) == 0 {
		return 0, 0, 0, errors.New("nvjpeg: an empty file")
	}
	err = d.c.run(func() error {
		var n, sub int32
		var ws, hs [4]int32
		err := nvjpegCheck("nvjpegGetImageInfo", nativelib.Call(d.lib.getImageInfo, d.handle, uintptr(unsafe.Pointer(&jpeg[0])), uintptr(len(jpeg)),
			uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&sub)), uintptr(unsafe.Pointer(&ws[0])), uintptr(unsafe.Pointer(&hs[0]))))
		components, w, h = int(n), int(ws[0]), int(hs[0])
		return err
	})
	return components, w, h, err
}

// Decode decodes jpegs (at most the decoder's batch, each w×h) into the
// device memory at dst, image i as R, G and B planes of w×h bytes from
// dst + i·3·w·h, and waits for the GPU. It checks every image's size
// first (nvjpegGetImageInfo): a file of another size is an error naming
// it. It returns the time the batched decode took, host stage included.
func (d *JPEGDecoder) Decode(jpegs [][]byte, dst uint64, w, h int) (time.Duration, error) {
	if d.format != nvjpegOutputRGB {
		return 0, errors.New("nvjpeg: Decode needs a decoder from NewJPEGDecoder (planar RGB)")
	}
	if err := d.check(jpegs, w, h); err != nil {
		return 0, err
	}
	plane := uint64(w) * uint64(h)
	for i := range jpegs {
		base := dst + uint64(i)*3*plane
		d.images[i] = nvjpegImage{channel: [4]uint64{base, base + plane, base + 2*plane}, pitch: [4]uint64{uint64(w), uint64(w), uint64(w)}}
	}
	return d.decode(jpegs, nil)
}

// DecodeSamples decodes jpegs into device-transform samples of
// sampleBytes each at dst (a decoder from NewJPEGSampleDecoder): sample i,
// at dst + i·sampleBytes, gets headers[i] (transforms.DeviceHeader bytes,
// the host's random draws), copied on the decoder's stream, then image i
// as w×h interleaved RGB, so the device holds what --device-crop uploads
// for those raw images and the device transform's kernels run on it
// unchanged. The checks and errors are Decode's; it waits for the GPU and
// returns the time the copies and the batched decode took.
func (d *JPEGDecoder) DecodeSamples(headers, jpegs [][]byte, dst uint64, sampleBytes int64, w, h int) (time.Duration, error) {
	if d.format != nvjpegOutputRGBI {
		return 0, errors.New("nvjpeg: DecodeSamples needs a decoder from NewJPEGSampleDecoder (interleaved RGB)")
	}
	if len(headers) != len(jpegs) {
		return 0, fmt.Errorf("nvjpeg: %d headers for %d images", len(headers), len(jpegs))
	}
	if err := d.check(jpegs, w, h); err != nil {
		return 0, err
	}
	for i, hd := range headers {
		if len(hd) == 0 || int64(len(hd))+3*int64(w)*int64(h) > sampleBytes {
			return 0, fmt.Errorf("nvjpeg: image %d: a header of %d bytes and %dx%d RGB do not fit a sample of %d bytes", i, len(hd), w, h, sampleBytes)
		}
		base := dst + uint64(i)*uint64(sampleBytes) + uint64(len(hd))
		d.images[i] = nvjpegImage{channel: [4]uint64{base}, pitch: [4]uint64{3 * uint64(w)}}
	}
	return d.decode(jpegs, func() error {
		for i, hd := range headers {
			if err := d.c.htod(dst+uint64(i)*uint64(sampleBytes), unsafe.Pointer(&hd[0]), int64(len(hd)), d.stream); err != nil {
				return err
			}
		}
		return nil
	})
}

// check refuses a batch the decoder cannot take or an image that is not
// w×h, naming the image.
func (d *JPEGDecoder) check(jpegs [][]byte, w, h int) error {
	if len(jpegs) == 0 || len(jpegs) > d.batch {
		return fmt.Errorf("nvjpeg: %d images for a decoder of batch %d", len(jpegs), d.batch)
	}
	for i, j := range jpegs {
		if _, iw, ih, err := d.ImageInfo(j); err != nil {
			return fmt.Errorf("nvjpeg: image %d: %w", i, err)
		} else if iw != w || ih != h {
			return fmt.Errorf("nvjpeg: image %d is %dx%d, the batch's are %dx%d", i, iw, ih, w, h)
		}
	}
	return nil
}

// decode runs before (if any: copies on d.stream) and the batched decode
// of jpegs into d.images on the driver thread, and waits for the stream.
func (d *JPEGDecoder) decode(jpegs [][]byte, before func() error) (time.Duration, error) {
	for i, j := range jpegs {
		d.pin.Pin(&j[0])
		d.data[i], d.lengths[i] = uintptr(unsafe.Pointer(&j[0])), uintptr(len(j))
	}
	defer d.pin.Unpin()
	var took time.Duration
	err := d.c.run(func() error {
		if n := len(jpegs); n != d.inited {
			// nvjpegDecodeBatched decodes exactly the initialised count.
			if err := d.initBatch(n); err != nil {
				return err
			}
			d.inited = n
		}
		t0 := time.Now()
		if before != nil {
			if err := before(); err != nil {
				return err
			}
		}
		if err := nvjpegCheck("nvjpegDecodeBatched", nativelib.Call(d.lib.decodeBatched, d.handle, d.state,
			uintptr(unsafe.Pointer(&d.data[0])), uintptr(unsafe.Pointer(&d.lengths[0])), uintptr(unsafe.Pointer(&d.images[0])), d.stream)); err != nil {
			if d.backend == NvjpegHardware {
				return fmt.Errorf("%w (the hardware backend decodes baseline JPEGs only; %s=default decodes any on the SMs)", err, NvjpegBackendEnv)
			}
			return err
		}
		err := d.c.streamSync(d.stream)
		took = time.Since(t0)
		return err
	})
	clear(d.data)
	return took, err
}

// Close releases the decoder's state, handle and stream.
func (d *JPEGDecoder) Close() error {
	if d.c == nil {
		return nil
	}
	c := d.c
	d.c = nil
	return c.run(func() error { return errors.Join(ifNZ(d.stream, c.streamDestroy), d.release()) })
}

// DeviceAlloc allocates n bytes of device memory on c, for a caller
// outside a Device (the decode benchmark's destination), and returns the
// function that frees it.
func DeviceAlloc(c *Context, n int64) (uint64, func() error, error) {
	var p uint64
	if err := c.run(func() (err error) { p, err = c.memAlloc(n); return err }); err != nil {
		return 0, nil, err
	}
	return p, func() error { return c.run(func() error { return c.memFree(p) }) }, nil
}
