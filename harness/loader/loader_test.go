package loader

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// small is a pipeline small enough for -race: 32×24 raw, crop 8, batch 4.
func small(impl string, workers int) Config {
	return Config{
		Dataset:    datasets.Synthetic{Width: 32, Height: 24, Classes: 10, N: 50, Seed: 3},
		Transforms: transforms.Config{Crop: 8, MaskRatio: 0.25},
		Impl:       impl,
		Batch:      4,
		Workers:    workers,
		Prefetch:   2,
	}
}

// expected computes sample position pos as the pipeline must: dataset
// sample pos mod N, transformed with the stream of pos.
func expected(t *testing.T, cfg Config, rawIndex, pos int) ([]float32, int) {
	t.Helper()
	s := datasets.NewSample(cfg.Dataset.Width, cfg.Dataset.Height)
	if err := cfg.Dataset.Fill(rawIndex, s); err != nil {
		t.Fatal(err)
	}
	tr, err := transforms.New(cfg.Impl, cfg.Transforms)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, cfg.Transforms.OutLen())
	rng := prng.New(cfg.Dataset.Seed^transformSalt, uint64(pos))
	if err := tr.Apply(out, &s.Image, &rng); err != nil {
		t.Fatal(err)
	}
	return out, s.Label
}

// TestLoaderBatches checks the content of every batch at each loader level,
// for several worker counts: in order, complete, and equal to computing each
// sample directly (so the result does not depend on the worker count).
func TestLoaderBatches(t *testing.T) {
	for _, lv := range []level.Level{level.None, level.Raw, level.Sample} {
		for _, workers := range []int{1, 3} {
			for _, impl := range transforms.Names {
				cfg := small(impl, workers)
				const n = 15 // batches: 60 samples, more than the dataset's 50
				l, err := New(context.Background(), lv, cfg, n)
				if err != nil {
					t.Fatal(err)
				}
				for k := 0; ; k++ {
					b, err := l.Next(context.Background())
					if err == io.EOF {
						if k != n {
							t.Errorf("%d/%d/%s: %d batches, want %d", lv, workers, impl, k, n)
						}
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if b.Index != k {
						t.Fatalf("%d: batch %d arrived as %d", lv, k, b.Index)
					}
					for j := 0; j < b.Size; j++ {
						pos := k*cfg.Batch + j
						var want []float32
						var label int
						switch lv {
						case level.None:
							want, label = expected(t, cfg, pos%cfg.Dataset.N, pos)
						case level.Raw:
							want, label = expected(t, cfg, 0, pos)
						case level.Sample:
							want, label = expected(t, cfg, 0, 0)
						}
						got := b.Sample(j)
						for x := range want {
							if got[x] != want[x] {
								t.Fatalf("%d/%d/%s: batch %d sample %d value %d = %v, want %v", lv, workers, impl, k, j, x, got[x], want[x])
							}
						}
						if int(b.Labels[j]) != label {
							t.Fatalf("%d: batch %d sample %d label %d, want %d", lv, k, j, b.Labels[j], label)
						}
					}
					l.Release(b)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				st := l.Stats()
				if len(st.Stages) != 5 || st.Stages[2].Name != "transform" || st.Stages[2].Tasks != n*4 || st.Stages[3].Tasks != n*4 || st.Stages[4].Name != "batch" {
					t.Errorf("%d: stage stats %+v", lv, st.Stages)
				}
				if a := l.Allocated(); a > n {
					t.Errorf("%d: %d batch buffers for %d batches: the pool does not recycle", lv, a, n)
				}
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	good := small("fast", 1)
	for _, tc := range []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"zero workers", func(c *Config) { c.Workers = 0 }, "workers 0"},
		{"negative workers", func(c *Config) { c.Workers = -2 }, "workers -2"},
		{"zero batch", func(c *Config) { c.Batch = 0 }, "batch size 0"},
		{"crop too big", func(c *Config) { c.Transforms.Crop = 64 }, "larger than"},
		{"zero raw size", func(c *Config) { c.Dataset.Width = 0 }, "raw size"},
		{"negative crop", func(c *Config) { c.Transforms.Crop = -8 }, "crop -8"},
		{"unknown transform", func(c *Config) { c.Impl = "slow" }, "unknown implementation"},
		{"unknown placement", func(c *Config) { c.Placement = 7 }, "unknown placement 7"},
	} {
		cfg := good
		tc.mut(&cfg)
		_, err := New(context.Background(), level.None, cfg, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(context.Background(), level.None, good, 0); err == nil {
		t.Error("zero batches accepted")
	}
	if _, err := New(context.Background(), level.Level(9), good, 1); err == nil {
		t.Error("unknown cache accepted")
	}
	if _, err := ParsePlacement("gpu"); err == nil || !strings.Contains(err.Error(), `unknown placement "gpu"`) {
		t.Errorf("ParsePlacement: %v", err)
	}
	if p, err := ParsePlacement("device"); err != nil || p != Device || p.DType().String() != "uint8" || p.String() != "device" {
		t.Errorf("ParsePlacement(device) = %v, %v", p, err)
	}
}
