package ladder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/internal/summary"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/timeline"
	"github.com/headspace-bench/headspace/harness/train"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// small is a pipeline small enough for -race: 32×24 raw, crop 8, batch 4.
func small(impl string, workers int) loader.Config {
	return loader.Config{
		Dataset:    datasets.Synthetic{Width: 32, Height: 24, Classes: 10, N: 50, Seed: 3},
		Transforms: transforms.Config{Crop: 8, MaskRatio: 0.25},
		Impl:       impl,
		Batch:      4,
		Workers:    workers,
		Prefetch:   2,
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
	for _, lv := range level.For(level.Synthetic) {
		dev := fastDevice(t)
		res, err := Run(context.Background(), lv, small("fast", 2), dev, train.Config{Steps: 5, Warmup: 2})
		if err != nil {
			t.Fatalf("%s: %v", lv, err)
		}
		if res.Steps != 5 || len(res.StepTimes) != 5 || res.DeviceStats.Steps != 5 {
			t.Errorf("%s: steps %d, times %d, device steps %d; want 5", lv, res.Steps, len(res.StepTimes), res.DeviceStats.Steps)
		}
		wantUploads := int64(5)
		if lv == level.Device {
			wantUploads = 0
		}
		if res.DeviceStats.Uploads != wantUploads {
			t.Errorf("%s: %d uploads in the measured steps, want %d", lv, res.DeviceStats.Uploads, wantUploads)
		}
		// Wall time covers at least the device's busy time: AU <= 100%.
		if res.AU() <= 0 || res.AU() > 100.0001 {
			t.Errorf("%s: AU %.1f%% out of (0, 100]", lv, res.AU())
		}
		if res.StepsPerSec() <= 0 || res.SamplesPerSec() != res.StepsPerSec()*4 {
			t.Errorf("%s: steps/s %v samples/s %v", lv, res.StepsPerSec(), res.SamplesPerSec())
		}
		if lv <= level.Sample && len(res.Pipeline.Stages) != 5 {
			t.Errorf("%s: no pipeline statistics", lv)
		}
		b := (Point{Level: lv, Workers: 2, Impl: "fast", Pinned: true}).Benchmark(res)
		if !strings.HasPrefix(string(b.Name), "BenchmarkLadder/level="+lv.String()+"/workers=2/transforms=fast/placement=host/pinned=true") {
			t.Errorf("%s: benchmark name %s", lv, b.Name)
		}
		units := map[string]bool{}
		for _, v := range b.Values {
			units[v.Unit] = true
		}
		want := []string{"ns/op", "steps/s", "samples/s", "au-%", "step-p50-ns", "step-p90-ns", "step-p99-ns", "step-max-ns"}
		if lv != level.Device {
			want = append(want, "upload-B/op", "upload-ns/op")
		}
		if lv == level.None {
			want = append(want, "load-ns/sample", "transform-ns/sample")
		}
		for _, u := range want {
			if !units[u] {
				t.Errorf("%s: record lacks %s: %v", lv, u, b.Values)
			}
		}
		dev.Close()
	}
}

// TestRunOnDisk runs every on-disk level, encoded included, from a small
// JPEG dataset: the records name fetch and decode where they run, the read
// throughput where the level fetches; and encoded is refused without data.
func TestRunOnDisk(t *testing.T) {
	cfg := small("fast", 2)
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := ondisk.Write(context.Background(), dir, cfg.Dataset, ondisk.WriteOptions{Format: "jpeg", Layout: "shards", ShardSize: 16}); err != nil {
		t.Fatal(err)
	}
	cfg, err := cfg.WithData(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, lv := range level.For(level.Disk) {
		dev := fastDevice(t)
		res, err := Run(context.Background(), lv, cfg, dev, train.Config{Steps: 3, Warmup: 1})
		dev.Close()
		if err != nil {
			t.Fatalf("%s: %v", lv, err)
		}
		units := map[string]bool{}
		for _, v := range (Point{Level: lv, Workers: 2, Impl: "fast", Pinned: true}).Benchmark(res).Values {
			units[v.Unit] = true
		}
		for u, want := range map[string]bool{
			"fetch-ns/sample":  lv == level.None,
			"read-MB/s":        lv == level.None,
			"decode-ns/sample": lv <= level.Encoded,
			"load-ns/sample":   false,
			"failures":         false,
		} {
			if units[u] != want {
				t.Errorf("%s: %s recorded: %v, want %v", lv, u, units[u], want)
			}
		}
	}
	if _, err := Run(context.Background(), level.Encoded, small("fast", 1), fastDevice(t), train.Config{Steps: 1}); err == nil ||
		!strings.Contains(err.Error(), "level encoded needs a dataset on disk") {
		t.Errorf("encoded without data: %v", err)
	}
	if l, err := level.Parse("encoded"); err != nil || l != level.Encoded || l.Stage() != "decoding" {
		t.Errorf("ParseLevel(encoded) = %v, %v", l, err)
	}
}

func TestBadInput(t *testing.T) {
	good := small("fast", 1)
	bad := good
	bad.Workers = 0
	if _, err := Run(context.Background(), level.None, bad, fastDevice(t), train.Config{Steps: 1}); err == nil || !strings.Contains(err.Error(), "workers 0") {
		t.Errorf("zero workers: %v", err)
	}
	if _, err := Run(context.Background(), level.None, good, fastDevice(t), train.Config{Steps: 0}); err == nil {
		t.Error("zero steps accepted")
	}
	if _, err := Run(context.Background(), level.Level(9), good, fastDevice(t), train.Config{Steps: 1}); err == nil {
		t.Error("unknown level accepted")
	}
	if _, err := level.ParseList("none,cpu"); err == nil || !strings.Contains(err.Error(), `unknown level "cpu"`) {
		t.Errorf("ParseLevels: %v", err)
	}
	if ls, err := level.ParseList("device, none,none"); err != nil || len(ls) != 2 || ls[0] != level.Device {
		t.Errorf("ParseLevels = %v, %v", ls, err)
	}
}

// TestRunCancelled checks that cancelling a run returns promptly with the
// context's error and leaves no goroutine behind (goleak in TestMain).
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dev, _ := device.NewEmulated(device.EmulatedConfig{Step: time.Hour, PinnedBandwidth: 1e12, PageableBandwidth: 1e12})
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := Run(ctx, level.None, small("naive", 2), dev, train.Config{Steps: 3})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel = %v", err)
	}
}

func TestPoints(t *testing.T) {
	ps := Points([]level.Level{level.None, level.Device, level.Raw}, []int{1, 2}, []string{"naive"}, []loader.Placement{loader.Host, loader.Device}, []bool{true})
	if len(ps) != 12 || ps[0].Level != level.Device || ps[2].Level != level.None || ps[3].Workers != 2 || ps[6].Placement != loader.Device {
		t.Fatalf("Points = %v", ps)
	}
	p := Point{Level: level.Raw, Workers: 4, Impl: "naive", Placement: loader.Device, Pinned: false}
	if got, want := p.Name(), "Ladder/level=raw/workers=4/transforms=naive/placement=device/pinned=false"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if got, want := p.Sub(), "level=raw/workers=4/transforms=naive/placement=device/pinned=false"; got != want {
		t.Errorf("Sub = %q, want %q", got, want)
	}
}

// The document's table, steps/s per level (A10G, 4 workers, naive).
var documented = map[level.Level]float64{level.Device: 3.45, level.Host: 3.33, level.Sample: 3.23, level.Raw: 1.72, level.None: 0.89}

func TestAttribute(t *testing.T) {
	for _, tc := range []struct {
		name       string
		med        map[level.Level]float64
		bottleneck string // "" for none
		drops      int
	}{
		{"document", documented, "raw data loading", 4}, // 48% against the transforms' 47%
		{"flat", map[level.Level]float64{level.Device: 3.45, level.Host: 3.44, level.Sample: 3.43, level.Raw: 3.40, level.None: 3.39}, "", 4},
		// A drop of exactly Significant counts; just below it does not.
		{"at the threshold", map[level.Level]float64{level.Device: 1, level.None: 1 - Significant}, "raw data loading + transforms + batching (collate) + host-to-device transfer", 1},
		{"below the threshold", map[level.Level]float64{level.Device: 1, level.Raw: 0.96}, "", 1},
		// The largest of two significant drops is the bottleneck, not the first.
		{"two drops", map[level.Level]float64{level.Device: 4, level.Host: 3.6, level.Raw: 1}, "transforms + batching (collate)", 2},
		// The lower level faster (noise) is a negative drop, never blamed.
		{"noise", map[level.Level]float64{level.Device: 3, level.Host: 3.3}, "", 1},
		{"one level", map[level.Level]float64{level.Raw: 2}, "", 0},
		// Data on disk: none against encoded is fetching, encoded against
		// raw decoding; none against raw, encoded not measured, is raw
		// data loading (fetch and decode), not "+ decoding" again.
		{"fetch bound", map[level.Level]float64{level.Device: 4, level.Raw: 4, level.Encoded: 3.9, level.None: 1}, "fetching", 3},
		{"decode bound", map[level.Level]float64{level.Device: 4, level.Raw: 4, level.Encoded: 1.5, level.None: 1.4}, "decoding", 3},
		{"encoded not measured", map[level.Level]float64{level.Device: 4, level.None: 1}, "raw data loading + transforms + batching (collate) + host-to-device transfer", 1},
		{"decode and transforms", map[level.Level]float64{level.Device: 4, level.Sample: 4, level.Encoded: 1}, "decoding + transforms", 2},
	} {
		a := Attribute(tc.med)
		got := ""
		if a.Bottleneck != nil {
			got = a.Bottleneck.Stages()
		}
		if got != tc.bottleneck || len(a.Drops) != tc.drops {
			t.Errorf("%s: bottleneck %q with %d drops, want %q with %d", tc.name, got, len(a.Drops), tc.bottleneck, tc.drops)
		}
		for _, d := range a.Significant() {
			if d.Fraction < Significant {
				t.Errorf("%s: Significant lists a %.3f drop", tc.name, d.Fraction)
			}
		}
	}
}

func TestWriteTable(t *testing.T) {
	runs := map[level.Level]int{}
	for l := range documented {
		runs[l] = 6
	}
	var sb strings.Builder
	groups := []Group{
		{Title: "transforms=naive workers=4", Median: documented, Runs: runs},
		{Title: "flat", Median: map[level.Level]float64{level.Device: 2, level.None: 1.99}, Runs: map[level.Level]int{level.Device: 1, level.None: 1}},
	}
	if err := WriteTable(&sb, groups, documented); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"transforms=naive workers=4", "  none    0.890", "0.26", "bottleneck: raw data loading (48% of throughput lost when it is added)", "-47% transforms", "-48% raw data loading", "bottleneck: no stage costs 5% or more"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
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
	if _, err := Run(context.Background(), level.None, cfg, dev, train.Config{Steps: 4, Warmup: 1, Model: rec.Track("model", 0)}); err != nil {
		t.Fatal(err)
	}
	tl := timeline.FromRecorder("run", rec, cfg.Batch)
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

// TestWriteTableNoise is issue 41's busy-machine table: none's median
// above raw's printed as "+16% raw data loading", a speed-up from a
// stage that adds work. With every run's steps/s the table shows each
// level's spread, calls a drop the U test cannot tell from the noise "~"
// (as benchstat does), never blames one, flags a lower level faster
// beyond the noise, and marks the levels with disturbed runs.
func TestWriteTableNoise(t *testing.T) {
	samples := map[level.Level][]float64{
		level.Device: {3.44, 3.45, 3.45, 3.46, 3.44, 3.45},
		level.Host:   {3.41, 3.42, 3.42, 3.43, 3.41, 3.42},
		// Transforms and collate (sample is not measured): a real 36%
		// drop, beyond the noise.
		level.Raw: {2.10, 2.60, 2.20, 2.05, 2.50, 2.15},
		// Raw data loading: the same work as raw plus loading; its runs
		// overlap raw's, its median 16% above.
		level.None: {2.60, 2.20, 2.62, 2.70, 2.05, 2.55},
	}
	med, runs := map[level.Level]float64{}, map[level.Level]int{}
	for l, vs := range samples {
		med[l] = summary.Median(vs)
		runs[l] = len(vs)
	}
	if d := 1 - med[level.None]/med[level.Raw]; d > -0.10 {
		t.Fatalf("the fixture's none is %.0f%% above raw, want a speed-up of more than 10%% by the medians", -100*d)
	}
	faster := map[level.Level][]float64{
		level.Device: {3.44, 3.45, 3.45, 3.46, 3.44, 3.45},
		level.None:   {3.90, 3.91, 3.92, 3.93, 3.90, 3.91}, // faster beyond the noise
	}
	fmed := map[level.Level]float64{level.Device: summary.Median(faster[level.Device]), level.None: summary.Median(faster[level.None])}
	groups := []Group{
		{Title: "busy", Median: med, Runs: runs, Samples: samples, Disturbed: map[level.Level]int{level.None: 2}},
		{Title: "changed", Median: fmed, Runs: map[level.Level]int{level.Device: 6, level.None: 6}, Samples: faster},
	}
	var sb strings.Builder
	if err := WriteTable(&sb, groups, nil); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"  level   steps/s  ±     runs",
		"~ raw data loading (p=",
		"-36% transforms + batching (collate) (p=0.002)",
		"6 (2 disturbed*)",
		"  * runs that stayed disturbed after their reruns",
		"bottleneck: transforms + batching (collate) (36% of throughput lost when it is added)",
		"+13% raw data loading + transforms + batching (collate) + host-to-device transfer (p=0.002)!",
		"  ! faster than the level above beyond the noise",
		"bottleneck: no stage costs 5% or more beyond the noise",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "+16% raw data loading") || strings.Contains(out, "+17% raw data loading") {
		t.Errorf("table reports a speed-up within the noise:\n%s", out)
	}
	for _, l := range []string{"  device  3.450    ±0%", "  raw     2.175    ±20%", "  none    2.575    ±20%"} {
		if !strings.Contains(out, l) {
			t.Errorf("table lacks the row start %q (median and spread):\n%s", l, out)
		}
	}
	a := AttributeRuns(samples)
	for _, d := range a.Drops {
		if d.Level == level.None && (!d.Noise || !(d.P >= NoiseAlpha)) {
			t.Errorf("none's drop: noise %v, p %v; want within the noise", d.Noise, d.P)
		}
		if d.Level == level.Raw && (d.Noise || !(d.P < NoiseAlpha)) {
			t.Errorf("raw's drop: noise %v, p %v; want beyond it", d.Noise, d.P)
		}
	}
}

// TestKeepers: every stage that a level running no loader keeps, of any
// source's pipeline, has the ladder's keeper, so a new level cut at an
// existing stage needs none of its own; a level whose kept stage has
// none (here upload's, taken out) is refused by Check and Run, naming the
// stage, before anything runs.
func TestKeepers(t *testing.T) {
	for _, lv := range level.For(level.Bucket) {
		for src := lv.Needs(); src <= level.Bucket && !lv.Loader(); src++ {
			if kept, ok := lv.Kept(src); !ok || keepers[kept] == nil {
				t.Errorf("%s on %s keeps %q: no keeper", lv, src, kept)
			}
		}
	}
	saved := keepers[level.Upload]
	delete(keepers, level.Upload)
	defer func() { keepers[level.Upload] = saved }()
	cfg := small("fast", 1)
	want := "level device keeps the output of stage upload: the ladder keeps a batch only"
	if err := Check(level.Device, cfg); err == nil || err.Error() != want {
		t.Errorf("Check(device) without upload's keeper: %v", err)
	}
	dev := fastDevice(t)
	defer dev.Close()
	if _, err := Run(context.Background(), level.Device, cfg, dev, train.Config{Steps: 1}); err == nil || err.Error() != want {
		t.Errorf("Run(device) without upload's keeper: %v", err)
	}
	if err := Check(level.Host, cfg); err != nil {
		t.Errorf("Check(host) without upload's keeper: %v", err)
	}
}
