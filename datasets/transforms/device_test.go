package transforms

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// TestDeviceMatchesFast checks the device transform's contract on the
// host: the device sample's header and pixels, finished one pixel at a time
// as the kernels do (DeviceMaskReference), give fast's ApplyUint8 bit for
// bit, and the random source ends where fast's does, for both crop modes,
// crops that are and are not a multiple of 64, and the edge mask ratios.
func TestDeviceMatchesFast(t *testing.T) {
	for _, tc := range []struct {
		w, h, crop int
		ratio      float64
	}{{40, 30, 6, 0.25}, {96, 80, 70, 0.25}, {64, 64, 64, 0}, {20, 24, 8, 1}, {33, 17, 16, 0.5}} {
		cfg := Config{Crop: tc.crop, MaskRatio: tc.ratio}
		img := &datasets.Image{Width: tc.w, Height: tc.h, Pix: make([]uint8, 3*tc.w*tc.h)}
		src := prng.New(1, uint64(tc.w))
		src.Fill(img.Pix)
		f, _ := New("fast", cfg)
		for _, devCrop := range []bool{false, true} {
			d, err := NewDeviceApplier(cfg, devCrop)
			if err != nil {
				t.Fatal(err)
			}
			for s := range uint64(4) {
				r1, r2 := prng.New(7, s), prng.New(7, s)
				want := make([]uint8, cfg.OutLen())
				if err := f.(Uint8Applier).ApplyUint8(want, img, &r1); err != nil {
					t.Fatal(err)
				}
				sample := make([]uint8, d.SampleLen(tc.w, tc.h))
				if err := d.ApplyDevice(sample, img, &r2); err != nil {
					t.Fatal(err)
				}
				if r1.Uint64() != r2.Uint64() {
					t.Fatalf("%+v deviceCrop=%v: the random source ends elsewhere than fast's", tc, devCrop)
				}
				got := make([]uint8, cfg.OutLen())
				if err := d.DeviceMaskReference(got, sample, tc.w, tc.h); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%+v deviceCrop=%v sample %d: the device reference differs from fast's ApplyUint8", tc, devCrop, s)
				}
			}
		}
	}
}

// TestDeviceHeader: Header writes what ApplyDevice's device-crop sample
// starts with and leaves the random source where ApplyDevice does; it
// refuses the host crop, a short slot and a crop larger than the image.
func TestDeviceHeader(t *testing.T) {
	cfg := Config{Crop: 8, MaskRatio: 0.25}
	d, _ := NewDeviceApplier(cfg, true)
	img := &datasets.Image{Width: 20, Height: 12, Pix: make([]uint8, 3*20*12)}
	for s := range uint64(5) {
		r1, r2 := prng.New(3, s), prng.New(3, s)
		want := make([]uint8, d.SampleLen(20, 12))
		if err := d.ApplyDevice(want, img, &r1); err != nil {
			t.Fatal(err)
		}
		got := make([]uint8, DeviceHeader)
		if err := d.Header(got, 20, 12, &r2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[:DeviceHeader]) || r1.Uint64() != r2.Uint64() {
			t.Fatalf("stream %d: Header %v and its source differ from ApplyDevice's %v", s, got, want[:DeviceHeader])
		}
	}
	rng := prng.New(1, 1)
	host, _ := NewDeviceApplier(cfg, false)
	for name, err := range map[string]error{
		"host crop":   host.Header(make([]uint8, DeviceHeader), 20, 12, &rng),
		"short slot":  d.Header(make([]uint8, DeviceHeader-1), 20, 12, &rng),
		"small image": d.Header(make([]uint8, DeviceHeader), 4, 4, &rng),
		"nil source":  d.Header(make([]uint8, DeviceHeader), 20, 12, nil),
	} {
		if err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestDeviceErrors(t *testing.T) {
	if _, err := NewDeviceApplier(Config{Crop: 3, MaskRatio: 0.25}, false); err == nil {
		t.Error("odd crop accepted")
	}
	d, _ := NewDeviceApplier(Config{Crop: 8, MaskRatio: 0.25}, false)
	img := &datasets.Image{Width: 8, Height: 8, Pix: make([]uint8, 3*64)}
	rng := prng.New(1, 1)
	if err := d.ApplyDevice(make([]uint8, 10), img, &rng); err == nil {
		t.Error("short sample accepted")
	}
	if err := d.ApplyDevice(make([]uint8, d.SampleLen(8, 8)), &datasets.Image{Width: 4, Height: 4, Pix: make([]uint8, 48)}, &rng); err == nil {
		t.Error("crop larger than the image accepted")
	}
	if _, _, _, err := ParseDeviceHeader(make([]byte, 3)); err == nil {
		t.Error("short header accepted")
	}
}

func BenchmarkApplyDevice(b *testing.B) {
	cfg := DefaultConfig()
	img := &datasets.Image{Width: 1024, Height: 1024, Pix: make([]uint8, 3*1024*1024)}
	for _, devCrop := range []bool{false, true} {
		d, _ := NewDeviceApplier(cfg, devCrop)
		dst := make([]uint8, d.SampleLen(1024, 1024))
		name := "hostcrop"
		if devCrop {
			name = "devicecrop"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(dst)))
			for i := range b.N {
				rng := prng.New(1, uint64(i))
				if err := d.ApplyDevice(dst, img, &rng); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// DeviceMaskReference is what the device computes from a device sample, in
// Go, one pixel at a time as the kernels do (no bit rows): the masked crop
// as 3×Crop×Crop uint8 planes, written into dst. w and h are the raw
// image's size when the sample carries the whole image, ignored otherwise.
// Tests compare it, and the kernels, with fast's ApplyUint8.
func (d *DeviceApplier) DeviceMaskReference(dst, sample []uint8, w, h int) error {
	c := d.cfg.Crop
	if !d.deviceCrop {
		w, h = c, c
	}
	if len(sample) != DeviceHeader+3*w*h || len(dst) != 3*c*c {
		return fmt.Errorf("transforms: device reference: %d sample bytes into %d, want %d into %d", len(sample), len(dst), DeviceHeader+3*w*h, 3*c*c)
	}
	state, top, left, _ := ParseDeviceHeader(sample)
	if !d.deviceCrop {
		top, left = 0, 0
	}
	if top+c > h || left+c > w {
		return fmt.Errorf("transforms: device reference: crop at (%d, %d) past the %dx%d image", top, left, w, h)
	}
	thresh := MaskThreshold(d.cfg.MaskRatio)
	mask := func(y, x int) bool {
		if y < 0 || x < 0 || y >= c || x >= c {
			return false
		}
		p := y*c + x
		u := prng.At(state, uint64(p/2))
		if p%2 == 1 {
			u >>= 32
		}
		return uint64(uint32(u)) < thresh
	}
	pix := sample[DeviceHeader:]
	for y := range c {
		for x := range c {
			masked := mask(y, x) || mask(y-1, x) || mask(y+1, x) || mask(y, x-1) || mask(y, x+1)
			p := y*c + x
			src := pix[((top+y)*w+left+x)*3:]
			for ch := range 3 {
				v := src[ch]
				if masked {
					v = 0
				}
				dst[ch*c*c+p] = v
			}
		}
	}
	return nil
}
