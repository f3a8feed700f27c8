package loader

import (
	"bytes"
	"context"
	"testing"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
)

// TestDeviceTransformBatches checks the batches of the device transform:
// uint8, each sample the DeviceApplier sample of dataset sample pos mod N
// on the random stream of pos, with the crop or the whole raw image.
func TestDeviceTransformBatches(t *testing.T) {
	for _, devCrop := range []bool{false, true} {
		cfg := small(transforms.DeviceName, 2)
		cfg.Placement, cfg.DeviceCrop = Device, devCrop
		want := transforms.DeviceSampleLen(cfg.Transforms, 32, 24, devCrop)
		if cfg.SampleLen() != want {
			t.Fatalf("SampleLen %d, want %d", cfg.SampleLen(), want)
		}
		l, err := New(context.Background(), level.None, cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := transforms.NewDeviceApplier(cfg.Transforms, devCrop)
		s := datasets.NewSample(32, 24)
		exp := make([]uint8, want)
		for k := range 3 {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if b.DType != batching.Uint8 || b.SampleLen != want {
				t.Fatalf("batch %d: %v of %d values, want uint8 of %d", k, b.DType, b.SampleLen, want)
			}
			for j := range b.Size {
				pos := k*cfg.Batch + j
				if err := cfg.Dataset.Fill(pos%cfg.Dataset.N, s); err != nil {
					t.Fatal(err)
				}
				rng := prng.New(cfg.Dataset.Seed^transformSalt, uint64(pos))
				if err := d.ApplyDevice(exp, &s.Image, &rng); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b.SamplePix(j), exp) || int(b.Labels[j]) != s.Label {
					t.Fatalf("device-crop=%v batch %d sample %d differs from the DeviceApplier's", devCrop, k, j)
				}
			}
			l.Release(b)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDeviceTransformConfig(t *testing.T) {
	cfg := small(transforms.DeviceName, 1)
	if err := cfg.Validate(); err == nil {
		t.Error("transforms device with placement host accepted")
	}
	cfg = small("fast", 1)
	cfg.Placement, cfg.DeviceCrop = Device, true
	if err := cfg.Validate(); err != nil || cfg.SampleLen() != cfg.Transforms.OutLen() {
		t.Errorf("device crop changes transforms fast: %v, %d values", err, cfg.SampleLen())
	}
	cfg = small(transforms.DeviceName, 1)
	cfg.Placement = Device
	if err := cfg.Validate(); err != nil {
		t.Errorf("transforms device, placement device: %v", err)
	}
	if got, want := cfg.BatchBytes(), int64(4*(transforms.DeviceHeader+3*8*8+4)); got != want {
		t.Errorf("BatchBytes %d, want %d", got, want)
	}
}
