package ladder

import (
	"bytes"
	"context"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/batching"
	"github.com/headspace-bench/headspace/harness/device"
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
	for _, level := range []Level{None, Raw, Sample} {
		for _, impl := range transforms.Names {
			cfg := small(impl, 2)
			cfg.Transfer = "uint8"
			const n = 14 // 56 samples, more than the dataset's 50
			l, err := NewLoader(context.Background(), level, cfg, n)
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
					t.Fatalf("%s/%s: batch %d arrived as %d, %v, %d float32 and %d uint8 values", level, impl, k, b.Index, b.DType, len(b.Data), len(b.Pix))
				}
				for j := 0; j < b.Size; j++ {
					pos := k*cfg.Batch + j
					rawIndex, stream := 0, pos
					switch level {
					case None:
						rawIndex = pos % cfg.Dataset.N
					case Sample:
						stream = 0
					}
					want, label := expectedUint8(t, cfg, rawIndex, stream)
					if !bytes.Equal(b.SamplePix(j), want) || int(b.Labels[j]) != label {
						t.Fatalf("%s/%s: batch %d sample %d differs from ApplyUint8 (label %d, want %d)", level, impl, k, j, b.Labels[j], label)
					}
					f32 := cfg
					f32.Transfer = ""
					wantF, _ := expected(t, f32, rawIndex, stream)
					if err := transforms.ConvertScale(conv, b.SamplePix(j), cfg.Transforms.Crop); err != nil {
						t.Fatal(err)
					}
					for x := range wantF {
						if d := math.Abs(float64(conv[x] - wantF[x])); d > 1e-5 {
							t.Fatalf("%s/%s: batch %d sample %d value %d converts to %v, float32 transfer has %v", level, impl, k, j, x, conv[x], wantF[x])
						}
					}
				}
				l.Release(b)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if k != n {
				t.Errorf("%s/%s: %d batches, want %d", level, impl, k, n)
			}
			if a := l.Allocated(); a > n {
				t.Errorf("%s/%s: %d batch buffers for %d batches: the pool does not recycle", level, impl, a, n)
			}
		}
	}
}

// TestRunUint8EveryLevel runs every level in both transfers and checks the
// uint8 run completes, uploads a quarter of the float32 run's value bytes
// (labels are int32 in both), and has its conversion counted on the device
// at every step (the device level included) and only there.
func TestRunUint8EveryLevel(t *testing.T) {
	cfg := small("fast", 2)
	values := int64(cfg.Batch * cfg.Transforms.OutLen())
	labels := int64(4 * cfg.Batch)
	const steps = 5
	for _, tc := range []struct {
		level   Level
		uploads int64
	}{
		{None, steps}, {Raw, steps}, {Sample, steps}, {Host, steps}, {Device, 0},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			got := map[string]Result{}
			for _, transfer := range []string{"", "float32", "uint8"} {
				c := cfg
				c.Transfer = transfer
				dev := fastDevice(t)
				res, err := Run(context.Background(), tc.level, c, dev, RunConfig{Steps: steps, Warmup: 1})
				dev.Close()
				if err != nil {
					t.Fatalf("transfer %q: %v", transfer, err)
				}
				if res.Steps != steps || res.DeviceStats.Steps != steps || res.DeviceStats.Uploads != tc.uploads {
					t.Errorf("transfer %q: %d steps, %d device steps, %d uploads; want %d, %d, %d", transfer, res.Steps, res.DeviceStats.Steps, res.DeviceStats.Uploads, steps, steps, tc.uploads)
				}
				if res.Config.Transfer != transfer {
					t.Errorf("result carries transfer %q, want %q", res.Config.Transfer, transfer)
				}
				got[transfer] = res
			}
			f32, u8 := got["float32"], got["uint8"]
			if def := got[""]; def.DeviceStats.UploadBytes != f32.DeviceStats.UploadBytes || def.DeviceStats.ConvertTime != 0 {
				t.Errorf("the default transfer is not float32: %+v", def.DeviceStats)
			}
			if tc.uploads > 0 {
				wantF, wantU := float64(4*values+labels), float64(values+labels)
				if f, u := f32.UploadBytesPerBatch(), u8.UploadBytesPerBatch(); f != wantF || u != wantU || 4*(u-float64(labels)) != f-float64(labels) {
					t.Errorf("upload bytes per batch: float32 %v, uint8 %v; want %v and %v (a quarter of the values' bytes)", f, u, wantF, wantU)
				}
			} else if f32.UploadBytesPerBatch() != 0 || u8.UploadBytesPerBatch() != 0 {
				t.Errorf("level device uploaded in the measured steps")
			}
			conv := device.EmulatedConfig{}.ConvertTime(int(values)) // fastDevice leaves the default bandwidth
			if f32.DeviceStats.ConvertTime != 0 || u8.DeviceStats.ConvertTime != steps*conv {
				t.Errorf("conversion time: float32 %v, uint8 %v; want 0 and %d×%v", f32.DeviceStats.ConvertTime, u8.DeviceStats.ConvertTime, steps, conv)
			}
			b := u8.Benchmark(Point{Level: tc.level, Workers: 2, Impl: "fast", Transfer: "uint8"})
			if !strings.HasPrefix(string(b.Name), "BenchmarkLadder/level="+tc.level.String()+"/workers=2/transforms=fast/transfer=uint8") {
				t.Errorf("benchmark name %s", b.Name)
			}
			if v, ok := b.Value("upload-B/op"); (tc.uploads > 0) != ok || (ok && v != float64(values+labels)) {
				t.Errorf("upload-B/op = %v, %v", v, ok)
			}
		})
	}
}

// TestBatchFillerUint8 checks that a BatchFiller of a uint8 transfer fills
// the loader's batches, bit for bit, and refuses a float32 buffer.
func TestBatchFillerUint8(t *testing.T) {
	cfg := small("fast", 1)
	cfg.Transfer = "uint8"
	f, err := cfg.NewBatchFiller()
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLoader(context.Background(), None, cfg, 3)
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

func TestPointNameAndTableWithTransfer(t *testing.T) {
	for _, tc := range []struct {
		transfer, want string
	}{
		{"", "Ladder/level=raw/workers=4/transforms=naive"},
		{"float32", "Ladder/level=raw/workers=4/transforms=naive"},
		{"uint8", "Ladder/level=raw/workers=4/transforms=naive/transfer=uint8"},
	} {
		if got := (Point{Level: Raw, Workers: 4, Impl: "naive", Transfer: tc.transfer}).Name(); got != tc.want {
			t.Errorf("transfer %q: name %q, want %q", tc.transfer, got, tc.want)
		}
	}
	ms := []Measurement{
		{Point{Level: Device, Workers: 1, Impl: "fast"}, 3},
		{Point{Level: Device, Workers: 1, Impl: "fast", Transfer: "float32"}, 3},
		{Point{Level: Device, Workers: 1, Impl: "fast", Transfer: "uint8"}, 2},
	}
	var sb strings.Builder
	if err := WriteTable(&sb, ms); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	if strings.Count(out, "transforms=fast workers=1\n") != 1 || strings.Count(out, "transforms=fast workers=1 transfer=uint8\n") != 1 {
		t.Errorf("want one float32 table and one uint8 table:\n%s", out)
	}
}

// TestUint8LoaderStopsCleanly checks a uint8 run that is cancelled returns
// the context's error and leaves no goroutine (goleak in TestMain).
func TestUint8LoaderStopsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := small("naive", 2)
	cfg.Transfer = "uint8"
	dev, _ := device.NewEmulated(device.EmulatedConfig{Step: time.Hour, PinnedBandwidth: 1e12, PageableBandwidth: 1e12})
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := Run(ctx, None, cfg, dev, RunConfig{Steps: 3}); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Run after cancel = %v", err)
	}
}
