package kernels

import (
	"fmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
)

// transformSignatures is each device-transform kernel's parameter list, as
// transforms.cu declares it: p a pointer (a Buf), i an int (int32), u an
// unsigned long long value (uint64).
var transformSignatures = map[string]string{
	"transform_mask": "pipiiu",
	"transform_crop": "piiippiii",
}

// DeviceTransform is the device half of --transforms device: the batch
// the host uploads holds transforms.DeviceApplier samples (a header with
// the random state and the crop's origin, then the unmasked crop or, with
// DeviceCrop, the whole raw image), and its launches draw the mask, dilate
// it and crop into the uint8 planes that convert_scale turns into the
// Net's input, exactly as the Go fast transform does.
type DeviceTransform struct {
	Config        transforms.Config // the crop and the mask ratio
	Width, Height int               // the raw images' size
	DeviceCrop    bool              // the samples carry whole raw images
}

// SampleBytes is the bytes of one uploaded sample.
func (t DeviceTransform) SampleBytes() int {
	return transforms.DeviceSampleLen(t.Config, t.Width, t.Height, t.DeviceCrop)
}

// Validate reports a configuration the kernels cannot run.
func (t DeviceTransform) Validate() error {
	if err := t.Config.Validate(t.Width, t.Height); err != nil {
		return fmt.Errorf("kernels: device transform: %w", err)
	}
	return nil
}

// Launches are the device transform of n samples in buffer raw into the
// masked crops in u8 (n×3×Crop×Crop uint8, R, G and B planes: what
// transforms' fast ApplyUint8 writes), through mask (n×Crop×Crop bytes):
// transform_mask, one thread per pair of mask pixels (the fast transform
// draws two per 64-bit number), then transform_crop, one thread per output
// pixel.
func (t DeviceTransform) Launches(raw, mask, u8 string, n int) []Launch {
	c := t.Config.Crop
	w, h, devCrop := c, c, int32(0)
	if t.DeviceCrop {
		w, h, devCrop = t.Width, t.Height, 1
	}
	plane := int64(n) * int64(c) * int64(c)
	thresh := transforms.MaskThreshold(t.Config.MaskRatio)
	sb := int32(t.SampleBytes())
	mk := launch1D("transform_mask", plane/2, Buf{Name: raw}, sb, Buf{Name: mask}, int32(n), int32(c), thresh)
	cr := launch1D("transform_crop", plane, Buf{Name: raw}, sb, int32(w), int32(h), Buf{Name: mask}, Buf{Name: u8}, int32(n), int32(c), devCrop)
	mk.Module, cr.Module = TransformsModule, TransformsModule
	return []Launch{mk, cr}
}

// Buffer names of a device-transform plan: the uploaded samples and the
// mask before dilation.
const (
	bufInputRaw = "input.raw"
	bufMask     = "transform.mask"
)

// NetPlanDevice is NetPlan for batches of device-transform samples: its
// InputU8 is the uploaded batch of t's samples, and its Convert launches run
// the device transform into the uint8 crops, then ConvertColor and Scale
// into the Net's input.
func NetPlanDevice(batch int, t DeviceTransform, seed uint64) (Plan, error) {
	if err := t.Validate(); err != nil {
		return Plan{}, err
	}
	if int64(batch)*int64(t.SampleBytes()) >= 1<<31 {
		return Plan{}, fmt.Errorf("kernels: device transform: a batch of %d samples of %d bytes; the kernels index with int32 offsets per sample and need it under 2 GiB", batch, t.SampleBytes())
	}
	p, err := NetPlan(batch, t.Config.Crop, seed)
	if err != nil {
		return Plan{}, err
	}
	c := int64(t.Config.Crop)
	p.Buffers = append(p.Buffers,
		Buffer{Name: bufInputRaw, Bytes: int64(batch) * int64(t.SampleBytes())},
		Buffer{Name: bufMask, Bytes: int64(batch) * c * c})
	p.Convert = append(t.Launches(bufInputRaw, bufMask, p.InputU8, batch), p.Convert...)
	p.InputU8 = bufInputRaw
	return p, nil
}

// DeviceTransformTolerance is the largest difference accepted between the
// device transform's float32 output (ConvertScale's arithmetic: a float32
// coefficient times each channel, three additions and the offset, each
// rounded to nearest) and the fast transform's Apply (three float32 table
// entries, each ColorMatrix·v/255 (+offset) rounded once from float64, then
// two additions). Every value and partial sum lies in (-2, 2), where half
// an ulp is at most 2^-24. The device path's error is at most 3·2^-24
// (the coefficients' rounding, relative 2^-24, times |ColorMatrix·v/255| ≤ 1)
// + 3·2^-25 (the products) + 3·2^-24 (the additions) = 7.5·2^-24; the fast
// path's 3·2^-25 (the entries) + 2·2^-24 (the additions) = 3.5·2^-24. The
// two differ by at most 11·2^-24 ≈ 6.6e-7; 12·2^-24 is the tolerance.
const DeviceTransformTolerance = 12.0 / (1 << 24)
