package loadbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/perf/benchfmt"
	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestMain makes the test binary its own process-mode workers.
func TestMain(m *testing.M) {
	procloader.ServeIfSelfWorker()
	goleak.VerifyTestMain(m)
}

func tiny() Config {
	return Config{
		Pipeline: loader.Config{
			Dataset:    datasets.Synthetic{Width: 32, Height: 24, Classes: 10, N: 50, Seed: 3},
			Transforms: transforms.Config{Crop: 8, MaskRatio: 0.25},
			Impl:       "fast",
			Batch:      4,
			Prefetch:   2,
		},
		Batches: 5,
		Worker:  procloader.SelfWorker(),
	}
}

func TestSweepStructure(t *testing.T) {
	workers := []int{1, 3}
	ms, err := Sweep(context.Background(), tiny(), Modes, workers, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != len(Modes)*len(workers) {
		t.Fatalf("%d measurements, want %d", len(ms), len(Modes)*len(workers))
	}
	i := 0
	for _, mode := range Modes {
		for _, w := range workers {
			m := ms[i]
			i++
			if m.Mode != mode || m.Workers != w {
				t.Errorf("measurement %d is %s/%d, want %s/%d", i, m.Mode, m.Workers, mode, w)
			}
			if m.TTFB <= 0 || m.PeakRSS <= 0 || m.SamplesPerSec <= 0 || m.CPU < 0 {
				t.Errorf("%s: TTFB %v, RSS %d, samples/s %v, CPU %v: want positive", m.BenchName(), m.TTFB, m.PeakRSS, m.SamplesPerSec, m.CPU)
			}
			if m.Samples != 4*4 || m.Batches != 5 {
				t.Errorf("%s: %d samples in %d batches, want 16 in 5", m.BenchName(), m.Samples, m.Batches)
			}
		}
	}

	var sb strings.Builder
	if err := WriteTable(&sb, ms); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(sb.String(), "\n"); got != len(ms)+1 {
		t.Errorf("table has %d lines, want %d:\n%s", got, len(ms)+1, sb.String())
	}

	dir := t.TempDir()
	paths, err := Plots(ms, filepath.Join(dir, "loaders"), "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", p, err)
		}
	}

	out := filepath.Join(dir, "loaders.txt")
	var bs []*benchfmt.Result
	for _, m := range ms {
		bs = append(bs, m.Benchmark())
	}
	job := driver.Job{Settings: func() []resultfile.Config { return machine.Environment("none") },
		Measure: func(context.Context, *driver.Hooks) ([]*benchfmt.Result, error) { return bs, nil }}
	if _, err := driver.Run(context.Background(), job, driver.Output{Path: out}); err != nil {
		t.Fatal(err)
	}
	back, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(ms) {
		t.Fatalf("read back %d results, want %d", len(back), len(ms))
	}
	data, _ := os.ReadFile(out)
	for _, want := range []string{"Loaders/mode=process/workers=3", "Unit ttfb-ns better=lower", "Unit samples/s better=higher", "peak-rss-B", "cpu-s"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("results file lacks %q:\n%s", want, data)
		}
	}
}

func TestBadConfig(t *testing.T) {
	c := tiny()
	c.Batches = 1
	if _, err := Measure(context.Background(), c, Point{Mode: Goroutine, Workers: 1}); err == nil {
		t.Error("1 batch: no error")
	}
	if _, err := Measure(context.Background(), tiny(), Point{Mode: "fibers", Workers: 1}); err == nil {
		t.Error("unknown mode: no error")
	}
}

func TestParseVmRSS(t *testing.T) {
	if got := parseVmRSS("Name:\tx\nVmPeak:\t 100 kB\nVmRSS:\t    2048 kB\n"); got != 2048<<10 {
		t.Errorf("parseVmRSS = %d, want %d", got, 2048<<10)
	}
	if got := parseVmRSS("Name:\tx\n"); got != 0 {
		t.Errorf("parseVmRSS without VmRSS = %d, want 0", got)
	}
}

func TestPlotWorkers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pts        []WorkerPoint
		wantErr    bool
		xmin, xmax float64
	}{
		{"two series", []WorkerPoint{{"a", 1, 3}, {"b", 1, 4}, {"a", 4, 5}, {"b", 4, 6}}, false, 1, 4},
		{"one worker count, widened", []WorkerPoint{{"a", 2, 3}}, false, 1, 4},
		{"zero workers", []WorkerPoint{{"a", 0, 3}}, true, 0, 0},
	} {
		p, err := PlotWorkers("t", "y", tc.pts)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err %v, want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if p.X.Min != tc.xmin || p.X.Max != tc.xmax || p.Y.Min != 0 {
			t.Errorf("%s: x in [%v, %v], y from %v; want [%v, %v], from 0", tc.name, p.X.Min, p.X.Max, p.Y.Min, tc.xmin, tc.xmax)
		}
		if _, err := p.WriterTo(4*vg.Inch, 3*vg.Inch, "png"); err != nil {
			t.Errorf("%s: rendering: %v", tc.name, err)
		}
	}
}
