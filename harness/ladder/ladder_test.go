package ladder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/device"
	"github.com/headspace-bench/headspace/harness/pipeline"
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
	for _, level := range []Level{None, Raw, Sample} {
		for _, workers := range []int{1, 3} {
			for _, impl := range transforms.Names {
				cfg := small(impl, workers)
				const n = 15 // batches: 60 samples, more than the dataset's 50
				l, err := NewLoader(context.Background(), level, cfg, n)
				if err != nil {
					t.Fatal(err)
				}
				for k := 0; ; k++ {
					b, err := l.Next(context.Background())
					if err == io.EOF {
						if k != n {
							t.Errorf("%s/%d/%s: %d batches, want %d", level, workers, impl, k, n)
						}
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if b.Index != k {
						t.Fatalf("%s: batch %d arrived as %d", level, k, b.Index)
					}
					for j := 0; j < b.Size; j++ {
						pos := k*cfg.Batch + j
						var want []float32
						var label int
						switch level {
						case None:
							want, label = expected(t, cfg, pos%cfg.Dataset.N, pos)
						case Raw:
							want, label = expected(t, cfg, 0, pos)
						case Sample:
							want, label = expected(t, cfg, 0, 0)
						}
						got := b.Sample(j)
						for x := range want {
							if got[x] != want[x] {
								t.Fatalf("%s/%d/%s: batch %d sample %d value %d = %v, want %v", level, workers, impl, k, j, x, got[x], want[x])
							}
						}
						if int(b.Labels[j]) != label {
							t.Fatalf("%s: batch %d sample %d label %d, want %d", level, k, j, b.Labels[j], label)
						}
					}
					l.Release(b)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				st := l.Stats()
				if len(st.Stages) != 5 || st.Stages[2].Name != "transform" || st.Stages[2].Tasks != n*4 || st.Stages[3].Tasks != n*4 || st.Stages[4].Name != "batch" {
					t.Errorf("%s: stage stats %+v", level, st.Stages)
				}
				if a := l.Allocated(); a > n {
					t.Errorf("%s: %d batch buffers for %d batches: the pool does not recycle", level, a, n)
				}
			}
		}
	}
}

func fastDevice(t *testing.T) *device.Emulated {
	t.Helper()
	d, err := device.NewEmulated(device.EmulatedConfig{Step: time.Millisecond, Pinned: true, PinnedBandwidth: 1e12, PageableBandwidth: 1e12})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRunEveryLevel(t *testing.T) {
	for _, level := range Levels {
		dev := fastDevice(t)
		res, err := Run(context.Background(), level, small("fast", 2), dev, RunConfig{Steps: 5, Warmup: 2})
		if err != nil {
			t.Fatalf("%s: %v", level, err)
		}
		if res.Steps != 5 || len(res.StepTimes) != 5 || res.DeviceStats.Steps != 5 {
			t.Errorf("%s: steps %d, times %d, device steps %d; want 5", level, res.Steps, len(res.StepTimes), res.DeviceStats.Steps)
		}
		wantUploads := int64(5)
		if level == Device {
			wantUploads = 0
		}
		if res.DeviceStats.Uploads != wantUploads {
			t.Errorf("%s: %d uploads in the measured steps, want %d", level, res.DeviceStats.Uploads, wantUploads)
		}
		// Wall time covers at least the device's busy time: AU <= 100%.
		if res.AU() <= 0 || res.AU() > 100.0001 {
			t.Errorf("%s: AU %.1f%% out of (0, 100]", level, res.AU())
		}
		if res.StepsPerSec() <= 0 || res.SamplesPerSec() != res.StepsPerSec()*4 {
			t.Errorf("%s: steps/s %v samples/s %v", level, res.StepsPerSec(), res.SamplesPerSec())
		}
		if level <= Sample && len(res.Pipeline.Stages) != 5 {
			t.Errorf("%s: no pipeline statistics", level)
		}
		b := res.Benchmark(Point{Level: level, Workers: 2, Impl: "fast"})
		wantValues := 5 // with upload-B/op
		if level == Device {
			wantValues = 4
		}
		if !strings.HasPrefix(string(b.Name), "BenchmarkLadder/level="+level.String()+"/workers=2/transforms=fast") || len(b.Values) != wantValues {
			t.Errorf("%s: benchmark record %s %v", level, b.Name, b.Values)
		}
		dev.Close()
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
		{"unknown transfer", func(c *Config) { c.Transfer = "int8" }, `transfer "int8": want float32 or uint8`},
		{"transfer in capitals", func(c *Config) { c.Transfer = "UINT8" }, `transfer "UINT8"`},
	} {
		cfg := good
		tc.mut(&cfg)
		_, err := Run(context.Background(), None, cfg, fastDevice(t), RunConfig{Steps: 1})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Run(context.Background(), None, good, fastDevice(t), RunConfig{Steps: 0}); err == nil {
		t.Error("zero steps accepted")
	}
	if _, err := Run(context.Background(), Level(9), good, fastDevice(t), RunConfig{Steps: 1}); err == nil {
		t.Error("unknown level accepted")
	}
	if _, err := ParseLevels("none,cpu"); err == nil || !strings.Contains(err.Error(), `unknown level "cpu"`) {
		t.Errorf("ParseLevels: %v", err)
	}
	if ls, err := ParseLevels("device, none,none"); err != nil || len(ls) != 2 || ls[0] != Device {
		t.Errorf("ParseLevels = %v, %v", ls, err)
	}
}

// TestRunCancelled checks that cancelling a run returns promptly with the
// context's error and leaves no goroutine behind (goleak in TestMain).
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dev, _ := device.NewEmulated(device.EmulatedConfig{Step: time.Hour, PinnedBandwidth: 1e12, PageableBandwidth: 1e12})
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := Run(ctx, None, small("naive", 2), dev, RunConfig{Steps: 3})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel = %v", err)
	}
}

func TestPointsAndTable(t *testing.T) {
	ps := Points([]Level{None, Device, Raw}, []int{1, 2}, []string{"naive"})
	if len(ps) != 6 || ps[0].Level != Device || ps[2].Level != None || ps[3].Workers != 2 {
		t.Fatalf("Points = %v", ps)
	}
	var ms []Measurement
	for l, v := range Documented {
		ms = append(ms, Measurement{Point{Level: l, Workers: 4, Impl: "naive"}, v})
	}
	var sb strings.Builder
	if err := WriteTable(&sb, ms); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"transforms=naive workers=4", "none", "0.26", "bottleneck: raw data loading", "-47% transforms"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestStepSummary(t *testing.T) {
	var ts []time.Duration
	for i := 1; i <= 100; i++ {
		ts = append(ts, time.Duration(i)*time.Millisecond)
	}
	s := StepSummary(ts)
	if s.Median != 50500*time.Microsecond || s.P90 != 90*time.Millisecond || s.P99 != 99*time.Millisecond {
		t.Errorf("summary %+v", s)
	}
	if (StepSummary(nil) != Summary{}) {
		t.Error("empty summary not zero")
	}
}

// TestTimelineOfARealRun records a run at level none and checks the
// timeline has one track per worker of each stage and one for the model,
// and that its Chrome trace parses with a thread per track.
func TestTimelineOfARealRun(t *testing.T) {
	rec := pipeline.NewRecorder()
	cfg := small("fast", 3)
	cfg.Recorder = rec
	dev := fastDevice(t)
	defer dev.Close()
	if _, err := Run(context.Background(), None, cfg, dev, RunConfig{Steps: 4, Warmup: 1, Model: rec.Track("model", 0)}); err != nil {
		t.Fatal(err)
	}
	tl := Timeline("run", rec, cfg.Batch)
	want := []string{"load 0", "load 1", "load 2", "transform 0", "transform 1", "transform 2", "collate 0", "collate 1", "collate 2", "batch", "model"}
	if strings.Join(tl.Tracks, ",") != strings.Join(want, ",") {
		t.Errorf("tracks %v, want %v", tl.Tracks, want)
	}
	spans := map[string]int{}
	for _, s := range tl.Spans {
		spans[s.Label]++
	}
	if spans["load"] != 20 || spans["transform"] != 20 || spans["collate"] != 20 || spans["batch"] != 20 || spans["model"] != 4 {
		t.Errorf("spans per stage %v, want 20 samples per stage and 4 steps", spans)
	}
	var buf bytes.Buffer
	if err := tl.WriteChromeTrace(&buf); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Ph   string         `json:"ph"`
			Tid  int            `json:"tid"`
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatalf("trace does not parse: %v", err)
	}
	threads := map[string]bool{}
	for _, e := range trace.TraceEvents {
		if e.Ph == "M" && e.Name == "thread_name" {
			threads[fmt.Sprint(e.Args["name"])] = true
		}
	}
	for _, w := range want {
		if !threads[w] {
			t.Errorf("trace has no thread named %q (threads %v)", w, threads)
		}
	}
}
