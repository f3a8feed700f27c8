package loader

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
)

// cropData is a JPEG dataset of 96x80 natural images and the fast
// transforms' configuration reading it with TurboJPEG: a crop of 40 and
// a mask (whose draws follow the crop's).
func cropData(t *testing.T, layout string, workers int) Config {
	t.Helper()
	cfg := small("fast", workers)
	cfg.Dataset = datasets.Synthetic{Width: 96, Height: 80, Classes: 4, N: 12, Seed: 7, Content: datasets.ContentNatural}
	cfg.Transforms = transforms.Config{Crop: 40, MaskRatio: 0.25}
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := ondisk.Write(context.Background(), dir, cfg.Dataset, ondisk.WriteOptions{Format: "jpeg", Layout: layout, ShardSize: 5, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	cfg.Data, cfg.Decoder = dir, ondisk.DecoderTurbo
	return cfg
}

// TestLoaderDecodeCrop: with DecodeCrop on, every batch equals the one
// a full decode gives, bit for bit, at the levels that decode (none) and
// that keep a decoded sample (raw: the transform takes the whole cached
// image), in both layouts and with one and three workers; the setting is
// recorded only when on.
func TestLoaderDecodeCrop(t *testing.T) {
	for _, layout := range []string{"files", "shards"} {
		for _, workers := range []int{1, 3} {
			cfg := cropData(t, layout, workers)
			for _, cache := range []level.Level{level.None, level.Raw} {
				const n = 6
				want, wantLabels, _, err := drain(t, cache, cfg, n)
				if err != nil {
					t.Fatal(err)
				}
				on := cfg
				on.DecodeCrop = DecodeCropOn
				got, gotLabels, _, err := drain(t, cache, on, n)
				if err != nil {
					t.Fatalf("%s %s: %v", layout, cache, err)
				}
				for k := range want {
					if !slices.Equal(got[k], want[k]) || !slices.Equal(gotLabels[k], wantLabels[k]) {
						t.Fatalf("%s, %d workers, %s: batch %d differs from the full decode's", layout, workers, cache, k)
					}
				}
			}
		}
	}
	cfg := cropData(t, "files", 1)
	cfg.DecodeCrop = DecodeCropOn
	found := false
	for _, s := range cfg.Settings() {
		if s.Key == "decode-crop" {
			found = s.Value == DecodeCropSetting
		}
	}
	if !found {
		t.Errorf("decode crop on: settings do not record decode-crop: %s", DecodeCropSetting)
	}
	cfg.DecodeCrop = DecodeCropOff
	for _, s := range cfg.Settings() {
		if s.Key == "decode-crop" {
			t.Errorf("decode crop off: settings record %s: %s, want nothing (the files of earlier runs)", s.Key, s.Value)
		}
	}
	if _, err := cfg.NewBatchFiller(); err != nil {
		t.Errorf("decode crop off: NewBatchFiller: %v", err)
	}
}

// TestDecodeCropConfig: the combinations DecodeCrop refuses, in one line
// each.
func TestDecodeCropConfig(t *testing.T) {
	jpeg := cropData(t, "files", 1)
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown", func(c *Config) { c.DecodeCrop = "yes" }, `--decode-crop "yes": want off or on`},
		{"go decoder", func(c *Config) { c.DecodeCrop, c.Decoder = DecodeCropOn, ondisk.DecoderGo }, "needs --decoder turbojpeg"},
		{"no data", func(c *Config) { *c = small("fast", 1); c.DecodeCrop = DecodeCropOn }, "needs a dataset on disk"},
		{"scaled", func(c *Config) { c.DecodeCrop, c.DecodeScale = DecodeCropOn, ondisk.DecodeScaleAuto }, "not with --decode-scale auto"},
		{"naive", func(c *Config) { c.DecodeCrop, c.Impl = DecodeCropOn, transforms.Naive }, "fast transforms on the host"},
		{"device placement", func(c *Config) { c.DecodeCrop, c.Placement = DecodeCropOn, Device }, "fast transforms on the host"},
	} {
		c := jpeg
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
	c := jpeg
	c.DecodeCrop = DecodeCropOn
	if _, err := c.NewBatchFiller(); err == nil || !strings.Contains(err.Error(), "batch filler decodes whole images") {
		t.Errorf("batch filler with decode crop on: %v", err)
	}
}
