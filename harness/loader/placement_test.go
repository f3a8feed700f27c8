package loader

import (
	"bytes"
	"context"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
)

// expectedUint8 computes sample position pos of a uint8 transfer as the
// pipeline must: dataset sample rawIndex, ApplyUint8 with the stream of pos.
func expectedUint8(t *testing.T, cfg Config, rawIndex, pos int) ([]uint8, int) {
	t.Helper()
	s := datasets.NewSample(cfg.Dataset.Width, cfg.Dataset.Height)
	if err := cfg.Dataset.Fill(rawIndex, s); err != nil {
		t.Fatal(err)
	}
	tr, err := transforms.New(cfg.Impl, cfg.Transforms)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint8, cfg.Transforms.OutLen())
	rng := prng.New(cfg.Dataset.Seed^transformSalt, uint64(pos))
	if err := tr.(transforms.Uint8Applier).ApplyUint8(out, &s.Image, &rng); err != nil {
		t.Fatal(err)
	}
	return out, s.Label
}

// TestLoaderBatchesUint8 checks every batch of a uint8 transfer at each
// loader level: uint8 batches, in order, each sample equal to ApplyUint8 of
// the sample the level must deliver, and its conversion equal to the
// float32 transfer's sample.
func TestLoaderBatchesUint8(t *testing.T) {
	for _, lv := range []level.Level{level.None, level.Raw, level.Sample} {
		for _, impl := range transforms.Names {
			cfg := small(impl, 2)
			cfg.Placement = Device
			const n = 14 // 56 samples, more than the dataset's 50
			l, err := New(context.Background(), lv, cfg, n)
			if err != nil {
				t.Fatal(err)
			}
			conv := make([]float32, cfg.Transforms.OutLen())
			k := 0
			for ; ; k++ {
				b, err := l.Next(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if b.Index != k || b.DType != batching.Uint8 || b.Data != nil || len(b.Pix) != cfg.Batch*cfg.Transforms.OutLen() {
					t.Fatalf("%s/%s: batch %d arrived as %d, %v, %d float32 and %d uint8 values", lv, impl, k, b.Index, b.DType, len(b.Data), len(b.Pix))
				}
				for j := 0; j < b.Size; j++ {
					pos := k*cfg.Batch + j
					rawIndex, stream := 0, pos
					switch lv {
					case level.None:
						rawIndex = pos % cfg.Dataset.N
					case level.Sample:
						stream = 0
					}
					want, label := expectedUint8(t, cfg, rawIndex, stream)
					if !bytes.Equal(b.SamplePix(j), want) || int(b.Labels[j]) != label {
						t.Fatalf("%s/%s: batch %d sample %d differs from ApplyUint8 (label %d, want %d)", lv, impl, k, j, b.Labels[j], label)
					}
					f32 := cfg
					f32.Placement = Host
					wantF, _ := expected(t, f32, rawIndex, stream)
					if err := transforms.ConvertScale(conv, b.SamplePix(j), cfg.Transforms.Crop); err != nil {
						t.Fatal(err)
					}
					for x := range wantF {
						if d := math.Abs(float64(conv[x] - wantF[x])); d > 1e-5 {
							t.Fatalf("%s/%s: batch %d sample %d value %d converts to %v, float32 transfer has %v", lv, impl, k, j, x, conv[x], wantF[x])
						}
					}
				}
				l.Release(b)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if k != n {
				t.Errorf("%s/%s: %d batches, want %d", lv, impl, k, n)
			}
			if a := l.Allocated(); a > n {
				t.Errorf("%s/%s: %d batch buffers for %d batches: the pool does not recycle", lv, impl, a, n)
			}
		}
	}
}

// TestBatchFillerUint8 checks that a BatchFiller of a uint8 transfer fills
// the loader's batches, bit for bit, and refuses a float32 buffer.
func TestBatchFillerUint8(t *testing.T) {
	cfg := small("fast", 1)
	cfg.Placement = Device
	f, err := cfg.NewBatchFiller()
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(context.Background(), level.None, cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pool, _ := batching.NewPoolOf(batching.Uint8, cfg.Batch, cfg.Transforms.OutLen())
	mine := pool.Get()
	for k := range 3 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Fill(k, mine); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mine.Pix, b.Pix) || mine.Index != k {
			t.Errorf("batch %d: the filler differs from the loader", k)
		}
		l.Release(b)
	}
	floats, _ := batching.NewPool(cfg.Batch, cfg.Transforms.OutLen())
	if err := f.Fill(0, floats.Get()); err == nil || !strings.Contains(err.Error(), "uint8 values") {
		t.Errorf("Fill into a float32 batch: %v", err)
	}
}
