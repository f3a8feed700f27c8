package transforms

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// DeviceName is the name of the third implementation, whose transform runs
// on a CUDA GPU (cuda/kernels' transform kernels). It is not in Names and
// New does not make it: the host half is a DeviceApplier, and only a CUDA
// device finishes the transform.
const DeviceName = "device"

// DeviceHeader is the bytes before each device sample's pixels: the state
// of the sample's random source after the crop's draws (prng.Source.State,
// uint64 little-endian), then the crop's top and left (uint32
// little-endian each), then four zero bytes.
const DeviceHeader = 16

// DeviceApplier is the host half of the device transform: it makes the
// random draws of the fast transform, in the same order, and ships what the
// device needs to finish it: a DeviceHeader (where the mask's draws start,
// and the crop's origin) and the pixels. With deviceCrop false the pixels
// are the unmasked crop, interleaved RGB (Crop×Crop×3 bytes); with true they
// are the whole raw image (W×H×3 bytes) and the device crops it too.
//
// The mask is not drawn on the host: the k-th draw of the mask is
// prng.At(state, k), which the device computes for every pixel pair in
// parallel, so the device's masked crop is fast's ApplyUint8 bit for bit.
// ApplyDevice leaves rng where fast's Apply leaves it.
type DeviceApplier struct {
	cfg        Config
	deviceCrop bool
}

// NewDeviceApplier returns the host half of the device transform.
func NewDeviceApplier(cfg Config, deviceCrop bool) (*DeviceApplier, error) {
	if err := cfg.Validate(0, 0); err != nil {
		return nil, err
	}
	return &DeviceApplier{cfg: cfg, deviceCrop: deviceCrop}, nil
}

// DeviceSampleLen is the bytes of one device sample for raw images of w×h:
// DeviceHeader then the crop's or the whole image's RGB bytes.
func DeviceSampleLen(cfg Config, w, h int, deviceCrop bool) int {
	if deviceCrop {
		return DeviceHeader + 3*w*h
	}
	return DeviceHeader + 3*cfg.Crop*cfg.Crop
}

// Name is DeviceName.
func (*DeviceApplier) Name() string { return DeviceName }

// DeviceCrop reports whether the device crops (whole raw images shipped).
func (d *DeviceApplier) DeviceCrop() bool { return d.deviceCrop }

// SampleLen is DeviceSampleLen for raw images of w×h.
func (d *DeviceApplier) SampleLen(w, h int) int { return DeviceSampleLen(d.cfg, w, h, d.deviceCrop) }

// ApplyDevice writes the device sample of src into dst (len SampleLen(src's
// size)), drawing from rng exactly what fast's Apply draws. It only reads
// src and allocates nothing.
func (d *DeviceApplier) ApplyDevice(dst []uint8, src *datasets.Image, rng *prng.Source) error {
	if src == nil || rng == nil {
		return errors.New("transforms: device: nil image or random source")
	}
	if err := d.cfg.Validate(src.Width, src.Height); err != nil {
		return err
	}
	if len(src.Pix) != src.Width*src.Height*3 {
		return fmt.Errorf("transforms: image %dx%d has %d bytes, want %d", src.Width, src.Height, len(src.Pix), src.Width*src.Height*3)
	}
	if want := d.SampleLen(src.Width, src.Height); len(dst) != want {
		return fmt.Errorf("transforms: device: sample has %d bytes, want %d", len(dst), want)
	}
	c := d.cfg.Crop
	top, left := d.header(dst, src.Width, src.Height, rng)
	pix := dst[DeviceHeader:]
	if d.deviceCrop {
		copy(pix, src.Pix)
		return nil
	}
	row := 3 * c
	for y := range c {
		off := ((top+y)*src.Width + left) * 3
		copy(pix[y*row:(y+1)*row], src.Pix[off:off+row])
	}
	return nil
}

// Header writes the DeviceHeader of a w×h image into dst[:DeviceHeader],
// drawing from rng what ApplyDevice draws, and leaves the pixels to the
// caller: with --decoder nvjpeg the device decodes the image after the
// header (device crop only, since the host never sees the pixels to crop
// them). It allocates nothing.
func (d *DeviceApplier) Header(dst []uint8, w, h int, rng *prng.Source) error {
	switch {
	case rng == nil:
		return errors.New("transforms: device: nil random source")
	case !d.deviceCrop:
		return errors.New("transforms: device: a header alone needs the device crop (the host crops otherwise)")
	case len(dst) < DeviceHeader:
		return fmt.Errorf("transforms: device: %d bytes hold no %d-byte header", len(dst), DeviceHeader)
	}
	if err := d.cfg.Validate(w, h); err != nil {
		return err
	}
	d.header(dst, w, h, rng)
	return nil
}

// header draws the crop's origin and writes the header; the mask's draws
// are skipped, made on the device.
func (d *DeviceApplier) header(dst []uint8, w, h int, rng *prng.Source) (top, left int) {
	c := d.cfg.Crop
	top, left = CropOrigin(c, w, h, rng)
	binary.LittleEndian.PutUint64(dst[0:8], rng.State())
	binary.LittleEndian.PutUint32(dst[8:12], uint32(top))
	binary.LittleEndian.PutUint32(dst[12:16], uint32(left))
	clear(dst[16:DeviceHeader])
	rng.Skip(uint64(c * c / 2)) // the mask's draws, made on the device
	return top, left
}

// ParseDeviceHeader reads a device sample's header: the mask's random
// state and the crop's origin.
func ParseDeviceHeader(sample []byte) (state uint64, top, left int, err error) {
	if len(sample) < DeviceHeader {
		return 0, 0, 0, fmt.Errorf("transforms: device sample of %d bytes is shorter than its %d-byte header", len(sample), DeviceHeader)
	}
	return binary.LittleEndian.Uint64(sample), int(binary.LittleEndian.Uint32(sample[8:])), int(binary.LittleEndian.Uint32(sample[12:])), nil
}
