package remedies

import (
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/fetchmodel"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// grid, local and device are runs of a grid point, a check (check set),
// level local and level device.
func grid(rtt time.Duration, check string, conc int, sps, latNs float64) Run {
	return Run{Format: "raw", Layout: "files", Level: level.None, RTT: rtt, Check: check, Concurrency: conc,
		SamplesPerSec: sps, ReqMean: latNs, RequestsPerSample: 1, BytesPerSample: 1000}
}

func local(sps float64) Run {
	return Run{Format: "raw", Layout: "files", Level: level.Local, SamplesPerSec: sps}
}

func device(sps float64) Run { return Run{Level: level.Device, SamplesPerSec: sps} }

// TestBuild: the calibration, the predictions and their errors, the
// knee and the ratios, from records of known values.
func TestBuild(t *testing.T) {
	runs := []Run{
		device(800),
		local(1000),
		grid(0, "", 1, 400, 2e6),
		grid(0, "", 4, 600, 5e6),
		grid(18*time.Millisecond, "", 4, 250, 21e6),
		grid(0, "a", 1, 25, 40e6),
	}
	config := []resultfile.Config{{Key: "batch", Value: "16"}, {Key: "remote-check-a", Value: "latency=38ms concurrency=1"}}
	r, err := Build(runs, config)
	if err != nil {
		t.Fatal(err)
	}
	if r.Device != 800 || len(r.Datasets) != 1 {
		t.Fatalf("device %v, %d datasets; want 800, 1", r.Device, len(r.Datasets))
	}
	d := r.Datasets[0]
	want := fetchmodel.Calibration{ServerTime: 2 * time.Millisecond, ServerRate: 600, HostRate: 1000, DeviceRate: 800}
	if d.Calibration != want {
		t.Fatalf("calibration %+v, want %+v", d.Calibration, want)
	}
	for _, tc := range []struct {
		i          int
		calibrates bool
		pred, ape  float64
		bound      string
	}{
		{0, true, 500, 25, fetchmodel.BoundConcurrency},  // 1 ÷ 2 ms
		{2, false, 200, 20, fetchmodel.BoundConcurrency}, // 4 ÷ (18 + 2 ms)
		{3, false, 25, 0, fetchmodel.BoundConcurrency},   // 1 ÷ (38 + 2 ms)
	} {
		p := d.Points[tc.i]
		if p.Calibration != tc.calibrates || p.Predicted.SamplesPerSec != tc.pred || p.APE != tc.ape || p.Predicted.Bound != tc.bound {
			t.Errorf("point %d: calibration %v, predicted %v (%s), error %v; want %v, %v (%s), %v", tc.i, p.Calibration, p.Predicted.SamplesPerSec, p.Predicted.Bound, p.APE, tc.calibrates, tc.pred, tc.bound, tc.ape)
		}
	}
	if got := MedianError(r); got != 10 {
		t.Errorf("median error %v, want 10 (of 20 and 0)", got)
	}
	if c, best := d.Knee(0); c != 4 || best != 600 {
		t.Errorf("knee at 0: %d (%v), want 4 (600)", c, best)
	}
	if hs := d.Points[2].Headspace; hs != 1-250.0/800 {
		t.Errorf("headspace %v, want %v", hs, 1-250.0/800)
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| raw/files | 1000 | 4 (600/s, 25%) | 4 (250/s, 69%) |", "over 2 predicted points: **10.0%**"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs []Run
		want string
	}{
		{"no device", []Run{grid(0, "", 1, 1, 0)}, "no level=device"},
		{"no calibration", []Run{device(1), grid(5*time.Millisecond, "", 1, 1, 0)}, "no point at round trip 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.runs, []resultfile.Config{{Key: "batch", Value: "4"}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestWindowFor: a file that records the fetch-window rule gives the
// model at least one sample per fetcher; an older one, prefetch × batch.
func TestWindowFor(t *testing.T) {
	old := Report{Window: 32}
	now := Report{Window: 32, Config: []resultfile.Config{{Key: "fetch-window", Value: loader.WindowRule}}}
	for _, tc := range []struct {
		r    Report
		c    int
		want int
	}{{old, 64, 32}, {now, 64, 64}, {now, 4, 32}} {
		if got := tc.r.WindowFor(tc.c); got != tc.want {
			t.Errorf("WindowFor(%d) = %d, want %d (config %v)", tc.c, got, tc.want, tc.r.Config)
		}
	}
}
