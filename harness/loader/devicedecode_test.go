package loader

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
)

// nvjpegOnDisk is onDisk's JPEG dataset read for a device that decodes.
func nvjpegOnDisk(t *testing.T, layout string, n int) Config {
	cfg := onDisk(t, "jpeg", layout, n, 2)
	cfg.Impl, cfg.Placement, cfg.DeviceCrop, cfg.Decoder = transforms.DeviceName, Device, true, ondisk.DecoderNvjpeg
	return cfg
}

// TestDeviceDecodeBatches: with decoder nvjpeg, at the levels that run
// the decode stage (none, encoded), each batch carries its samples' files
// as they are on disk (sample pos mod N; sample 0's at encoded) and, in
// each slot, the header the device transform's host half draws on the
// stream of pos, with the label; no decode stage runs on the host. At raw
// the host decodes the sample it keeps and the batch carries pixels, as
// --device-crop's does.
func TestDeviceDecodeBatches(t *testing.T) {
	for _, layout := range []string{"files", "shards"} {
		cfg := nvjpegOnDisk(t, layout, 6)
		d, err := ondisk.Open(cfg.Data)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		dev, _ := transforms.NewDeviceApplier(cfg.Transforms, true)
		for _, lv := range []level.Level{level.None, level.Encoded, level.Raw} {
			const n = 4 // 16 samples of 6: more than an epoch
			l, err := New(context.Background(), lv, cfg, n)
			if err != nil {
				t.Fatalf("%s %s: %v", layout, lv, err)
			}
			for k := range n {
				b, err := l.Next(context.Background())
				if err != nil {
					t.Fatalf("%s %s batch %d: %v", layout, lv, k, err)
				}
				if lv == level.Raw {
					if b.JPEG != nil {
						t.Fatalf("%s: raw's batch carries files", layout)
					}
					l.Release(b)
					continue
				}
				if len(b.JPEG) != b.Size || b.SampleLen != cfg.SampleLen() {
					t.Fatalf("%s %s batch %d: %d files, samples of %d; want %d, %d", layout, lv, k, len(b.JPEG), b.SampleLen, b.Size, cfg.SampleLen())
				}
				for j := range b.Size {
					pos := k*cfg.Batch + j
					i := pos % cfg.Dataset.N
					if lv == level.Encoded {
						i = 0
					}
					file, err := d.Fetch(context.Background(), i, nil)
					if err != nil {
						t.Fatal(err)
					}
					label, err := d.CheckJPEG(i, file)
					if err != nil {
						t.Fatal(err)
					}
					rng := prng.New(cfg.Dataset.Seed^transformSalt, uint64(pos))
					hdr := make([]byte, transforms.DeviceHeader)
					if err := dev.Header(hdr, cfg.Dataset.Width, cfg.Dataset.Height, &rng); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(b.JPEG[j], file) || !bytes.Equal(b.SamplePix(j)[:len(hdr)], hdr) || int(b.Labels[j]) != label {
						t.Fatalf("%s %s batch %d sample %d: not sample %d's file, header and label", layout, lv, k, j, i)
					}
				}
				l.Release(b)
			}
			st := l.Stats()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, s := range st.Stages {
				if s.Name == string(level.Decode) && s.Tasks > 0 && lv != level.Raw {
					t.Errorf("%s %s: the host ran %d decode tasks", layout, lv, s.Tasks)
				}
			}
		}
	}
}

// TestDeviceDecodeFailures: a file of another size or not a JPEG stops the
// run naming the file and the sample, or is skipped within MaxFailures.
func TestDeviceDecodeFailures(t *testing.T) {
	for name, data := range map[string][]byte{
		"not a JPEG":   []byte("not a jpeg at all"),
		"another size": jpegOf(t, 24, 32),
	} {
		cfg := nvjpegOnDisk(t, "files", 12)
		must(t, os.WriteFile(filepath.Join(cfg.Data, "000005.jpg"), data, 0o644))
		l, err := New(context.Background(), level.None, cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			var b any
			if b, err = l.Next(context.Background()); err != nil {
				break
			}
			_ = b
		}
		l.Close()
		if err == nil || !strings.Contains(err.Error(), "000005.jpg") || !strings.Contains(err.Error(), "sample 5") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line naming 000005.jpg and sample 5", name, err)
		}
		cfg.MaxFailures = 1
		_, _, l, err = drain(t, level.None, cfg, 3)
		if err != nil || l.Data().Failures != 1 {
			t.Errorf("%s, MaxFailures 1: %v, %d failures; want 1 skipped", name, err, l.Data().Failures)
		}
	}
}

// jpegOf is a w×h JPEG.
func jpegOf(t *testing.T, w, h int) []byte {
	dir := t.TempDir()
	src := datasets.Synthetic{Width: w, Height: h, Classes: 2, N: 1, Seed: 1}
	if _, err := ondisk.Write(context.Background(), dir, src, ondisk.WriteOptions{Format: "jpeg", Layout: "files"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "000000.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDeviceDecodeConfig: decoder nvjpeg needs the device transform on
// whole images at full size, JPEGs, and the loader's own batches.
func TestDeviceDecodeConfig(t *testing.T) {
	good := nvjpegOnDisk(t, "files", 4)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Impl = "fast" }, "needs transforms device, not fast"},
		{func(c *Config) { c.DeviceCrop = false }, "needs device-crop"},
		{func(c *Config) { c.DecodeScale = ondisk.DecodeScaleAuto }, "not with --decoder nvjpeg"},
		{func(c *Config) { c.Data = "" }, "needs a dataset on disk"},
	} {
		c := good
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
	if _, err := good.NewBatchFiller(); err == nil || !strings.Contains(err.Error(), "goroutine workers") {
		t.Errorf("a batch filler with decoder nvjpeg: %v", err)
	}
	png := onDisk(t, "png", "files", 4, 1)
	png.Impl, png.Placement, png.DeviceCrop, png.Decoder = transforms.DeviceName, Device, true, ondisk.DecoderNvjpeg
	if _, err := New(context.Background(), level.None, png, 1); err == nil || !strings.Contains(err.Error(), "decodes JPEGs") || !strings.Contains(err.Error(), "holds png") {
		t.Errorf("decoder nvjpeg on PNGs: %v", err)
	}
}
