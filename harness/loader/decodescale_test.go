package loader

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
)

// TestLoaderDecodeScale runs the pipeline with DecodeScale auto: every
// sample is the transform of the scaled decode (32x24 at 1/2 is 16x12,
// the smallest that holds the crop of 8), at levels none and raw and in
// a BatchFiller, and the settings record the factor.
func TestLoaderDecodeScale(t *testing.T) {
	cfg := onDisk(t, "jpeg", "shards", 12, 2)
	cfg.Decoder, cfg.DecodeScale = ondisk.DecoderTurbo, ondisk.DecodeScaleAuto
	d, err := ondisk.OpenWith(cfg.Data, ondisk.Options{Decoder: ondisk.DecoderTurbo, DecodeMinSide: cfg.Transforms.Crop})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	scaled := func(i int) *datasets.Sample {
		s := datasets.NewSample(cfg.Dataset.Width, cfg.Dataset.Height)
		if err := d.Fill(i, s); err != nil {
			t.Fatal(err)
		}
		if s.Image.Width != 16 || s.Image.Height != 12 {
			t.Fatalf("scaled decode of sample %d is %dx%d, want 16x12", i, s.Image.Width, s.Image.Height)
		}
		return s
	}
	for _, cache := range []level.Level{level.None, level.Raw} {
		const n = 4
		data, labels, _, err := drain(t, cache, cfg, n)
		if err != nil {
			t.Fatalf("%s: %v", cache, err)
		}
		for k := range n {
			for j := range cfg.Batch {
				pos := k*cfg.Batch + j
				raw := 0
				if cache == level.None {
					raw = pos % cfg.Dataset.N
				}
				src := scaled(raw)
				want := transformOf(t, cfg, src, pos)
				got := data[k][j*cfg.Transforms.OutLen() : (j+1)*cfg.Transforms.OutLen()]
				if !slices.Equal(got, want) || int(labels[k][j]) != src.Label {
					t.Fatalf("%s: batch %d sample %d is not the transform of the scaled decode", cache, k, j)
				}
			}
		}
	}
	f, err := cfg.NewBatchFiller()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pool, err := batching.NewPoolOf(batching.Float32, cfg.Batch, cfg.SampleLen())
	if err != nil {
		t.Fatal(err)
	}
	b := pool.Get()
	if err := f.Fill(1, b); err != nil {
		t.Fatal(err)
	}
	for j := range cfg.Batch {
		pos := cfg.Batch + j
		want := transformOf(t, cfg, scaled(pos%cfg.Dataset.N), pos)
		if !slices.Equal(b.Sample(j), want) {
			t.Fatalf("BatchFiller: sample %d is not the transform of the scaled decode", j)
		}
	}
	var got string
	for _, s := range cfg.Settings() {
		if s.Key == "decode-scale" {
			got = s.Value
		}
	}
	if want := "auto 1/2 (32x24 to 16x12)"; got != want {
		t.Errorf("settings decode-scale = %q, want %q", got, want)
	}
	cfg.DecodeScale = ondisk.DecodeScaleOff
	for _, s := range cfg.Settings() {
		if s.Key == "decode-scale" {
			t.Errorf("decode scale off: settings record %s: %s, want nothing (the files of earlier runs)", s.Key, s.Value)
		}
	}
}

// TestDecodeScaleConfig: the combinations DecodeScale refuses, in one
// line each.
func TestDecodeScaleConfig(t *testing.T) {
	jpeg := onDisk(t, "jpeg", "files", 4, 1)
	png := onDisk(t, "png", "files", 4, 1)
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown", func(c *Config) { c.Decoder, c.DecodeScale = ondisk.DecoderTurbo, "half" }, `--decode-scale "half": want off or auto`},
		{"go decoder", func(c *Config) { c.DecodeScale = ondisk.DecodeScaleAuto }, "needs --decoder turbojpeg"},
		{"no data", func(c *Config) { *c = small("fast", 1); c.DecodeScale = ondisk.DecodeScaleAuto }, "needs a dataset on disk"},
		{"device crop", func(c *Config) {
			c.Decoder, c.DecodeScale = ondisk.DecoderTurbo, ondisk.DecodeScaleAuto
			c.Impl, c.Placement, c.DeviceCrop = transforms.DeviceName, Device, true
		}, "device-crop"},
	} {
		c := jpeg
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
	c := png
	c.Decoder, c.DecodeScale = ondisk.DecoderTurbo, ondisk.DecodeScaleAuto
	if _, err := New(context.Background(), level.None, c, 1); err == nil || !strings.Contains(err.Error(), "a scaled decode needs JPEGs") {
		t.Errorf("png data: %v", err)
	}
}
