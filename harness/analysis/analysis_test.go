package analysis

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func tiny(loadLatency time.Duration) Config {
	return Config{
		Pipeline: loader.Config{
			Dataset:     datasets.Synthetic{Width: 32, Height: 32, Classes: 10, N: 100, Seed: 1},
			Transforms:  transforms.Config{Crop: 16, MaskRatio: 0.25},
			Impl:        "fast",
			Batch:       4,
			Workers:     1,
			Prefetch:    2,
			LoadLatency: loadLatency,
		},
		NumCaches: 2, ReturnCachesAfter: 12, StepsAfter: 8, TotalSteps: 1000, Skip: 2,
	}
}

func emulated(t *testing.T, step time.Duration) device.Device {
	t.Helper()
	d, err := device.NewEmulated(device.EmulatedConfig{Step: step, Pinned: true, PinnedBandwidth: 1e12, PageableBandwidth: 1e12})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSlowLoading: each sample waits 10 ms in the load stage (one worker, 4
// samples a batch: at least 40 ms a batch) while a step takes 1 ms. The
// loop waits for input most of the time whatever the machine's speed, and
// the load stage's queue is the one that runs dry.
func TestSlowLoading(t *testing.T) {
	dev := emulated(t, time.Millisecond)
	defer dev.Close()
	rep, err := Run(context.Background(), tiny(10*time.Millisecond), dev)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict.Class != HighlyInputBound {
		t.Errorf("class %q (share %.2f), want %q", rep.Verdict.Class, rep.Verdict.Share, HighlyInputBound)
	}
	if rep.Verdict.Stage != "load" {
		t.Errorf("bounding stage %q (%s), want load", rep.Verdict.Stage, rep.Verdict.Reason)
	}
	if rep.Headspace() <= 0 || rep.HeadspacePercent() <= 0 {
		t.Errorf("headspace %v (%.1f%%), want positive", rep.Headspace(), rep.HeadspacePercent())
	}
	if len(rep.StepTimes) != 20 || rep.Before.N != 10 || rep.After.N != 6 {
		t.Errorf("steps %d, before n=%d, after n=%d", len(rep.StepTimes), rep.Before.N, rep.After.N)
	}
	var sb strings.Builder
	rep.WriteText(&sb)
	for _, want := range []string{"highly input-bound", "bounding stage: load", "headspace:", "Completed", "Occupancy rate", "h saved"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, sb.String())
		}
	}
}

// TestFastLoading: the loader makes a tiny batch in well under a
// millisecond while a step takes 100 ms; two batches are always ready.
func TestFastLoading(t *testing.T) {
	dev := emulated(t, 100*time.Millisecond)
	defer dev.Close()
	cfg := tiny(0)
	cfg.ReturnCachesAfter, cfg.StepsAfter, cfg.Skip = 8, 4, 2
	rep, err := Run(context.Background(), cfg, dev)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict.Class != NotInputBound {
		t.Errorf("class %q (share %.3f), want %q", rep.Verdict.Class, rep.Verdict.Share, NotInputBound)
	}
	if rep.Verdict.Stage != "model step" {
		t.Errorf("bounding stage %q (%s), want model step", rep.Verdict.Stage, rep.Verdict.Reason)
	}
}

// TestStatsLog: with StatsEvery, the loader's stage statistics are
// written to StatsLog while the run goes on (the load stage takes at
// least 480 ms before the switch: many periods of 10 ms), and the
// writer has stopped by the time Run returns (goleak checks it is gone).
func TestStatsLog(t *testing.T) {
	dev := emulated(t, time.Millisecond)
	defer dev.Close()
	var log bytes.Buffer
	cfg := tiny(10 * time.Millisecond)
	cfg.StatsEvery, cfg.StatsLog = 10*time.Millisecond, &log
	if _, err := Run(context.Background(), cfg, dev); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "[load     ] Completed"); n < 2 {
		t.Errorf("%d statistics lines of the load stage, want at least 2:\n%s", n, log.String())
	}
}

func TestNotInputBoundIsTheModel(t *testing.T) {
	st := pipeline.Stats{
		Stages: []pipeline.StageStats{{Name: "index"}, {Name: "load"}},
		Queues: []pipeline.QueueStats{{Name: "index", Occupancy: 0.01}, {Name: "load", Occupancy: 0.01}},
	}
	if v := Judge(st, time.Millisecond, time.Second); v.Stage != "model step" || v.Class != NotInputBound {
		t.Errorf("a loop that waits 0.1%% of the time: %q, %q", v.Class, v.Stage)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		share float64
		want  Class
	}{{0, NotInputBound}, {0.049, NotInputBound}, {0.05, ModeratelyInputBound}, {0.2, ModeratelyInputBound}, {0.21, HighlyInputBound}, {1, HighlyInputBound}} {
		if got := Classify(tc.share); got != tc.want {
			t.Errorf("Classify(%v) = %q, want %q", tc.share, got, tc.want)
		}
	}
}

func TestJudgeReadsOccupancy(t *testing.T) {
	st := func(occ ...float64) pipeline.Stats {
		var s pipeline.Stats
		for i, o := range occ {
			name := []string{"index", "load", "transform", "collate"}[i]
			s.Stages = append(s.Stages, pipeline.StageStats{Name: name})
			s.Queues = append(s.Queues, pipeline.QueueStats{Name: name, Occupancy: o})
		}
		return s
	}
	for _, tc := range []struct {
		occ  []float64
		want string
	}{
		{[]float64{1, 0.98, 0.1, 0.05}, "transform"},
		{[]float64{1, 0.2, 0.1, 0.05}, "load"},
		{[]float64{0.3, 0.2, 0.1, 0.05}, "load"}, // the source's queue is not read
		{[]float64{1, 0.99, 0.97, 0.95}, "model step"},
		{[]float64{1, 0.9, 0.8, 0.7}, "model step"}, // gradual: no single drop
		{[]float64{1, 1, 1, 0.3}, "collate"},
	} {
		if v := Judge(st(tc.occ...), time.Second/2, time.Second); v.Stage != tc.want {
			t.Errorf("occupancies %v: stage %q, want %q", tc.occ, v.Stage, tc.want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, mut := range []func(*Config){
		func(c *Config) { c.NumCaches = 0 },
		func(c *Config) { c.ReturnCachesAfter = 1 },
		func(c *Config) { c.StepsAfter = 0 },
		func(c *Config) { c.TotalSteps = -1 },
		func(c *Config) { c.Pipeline.Workers = 0 },
	} {
		cfg := tiny(0)
		mut(&cfg)
		if _, err := Run(context.Background(), cfg, emulated(t, 0)); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

func TestPlotFiles(t *testing.T) {
	rep := Report{Config: tiny(0), Switch: 3, StepTimes: []time.Duration{9e6, 8e6, 8e6, 2e6, 2e6, 2e6},
		Before: Estimate{Median: 8e6}, After: Estimate{Median: 2e6}}
	dir := t.TempDir()
	for _, name := range []string{"h.png", "h.svg"} {
		if err := rep.Save(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "h.png"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Errorf("PNG does not decode: %v", err)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "h.svg"))
	if !bytes.Contains(svg, []byte("<svg")) {
		t.Error("SVG has no <svg element")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestEstimateUnboundedSide: with too few values for benchmath to bound a
// side of the 95% interval (it gives ±Inf), the estimate's bound on that
// side is the extreme duration of its sign, printed as such, not a
// float-to-integer conversion's arbitrary value (on amd64, both
// infinities became math.MinInt64, which printed as -9223372036854.8 ms
// and made an unbounded upper side the smallest duration).
func TestEstimateUnboundedSide(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		ts   []time.Duration
	}{
		{"one", []time.Duration{2 * ms}},
		{"two", []time.Duration{2 * ms, 3 * ms}},
		{"five", []time.Duration{2 * ms, 3 * ms, 2 * ms, 4 * ms, 3 * ms}},
	} {
		e := estimate(tc.ts)
		if e.Lo > e.Median || e.Hi < e.Median {
			t.Errorf("%s: interval %v – %v does not hold the median %v", tc.name, e.Lo, e.Hi, e.Median)
		}
		var b strings.Builder
		Report{Before: e, After: e}.WriteText(&b)
		if strings.Contains(b.String(), "9223372036854") {
			t.Errorf("%s: an infinite bound printed as a number:\n%s", tc.name, b.String())
		}
	}
}
