package remedies

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/fetchmodel"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

func rec(name string, vals map[string]float64) *benchfmt.Result {
	r := &benchfmt.Result{Name: benchfmt.Name("BenchmarkRemote/" + name + "/workers=2/transforms=fast/placement=host/pinned=true-2"), Iters: 1}
	for u, v := range vals {
		r.Values = append(r.Values, benchfmt.Value{Value: v, Unit: u})
	}
	return r
}

// TestBuild: the calibration, the predictions and their errors, the
// knee and the ratios, from records of known values.
func TestBuild(t *testing.T) {
	none := func(sps, latNs float64) map[string]float64 {
		return map[string]float64{"samples/s": sps, "req-mean-ns": latNs, "requests/sample": 1, "bytes/sample": 1000}
	}
	recs := []*benchfmt.Result{
		rec("level=device", map[string]float64{"samples/s": 800}),
		rec("format=raw/layout=files/level=local", map[string]float64{"samples/s": 1000}),
		rec("format=raw/layout=files/rtt=0s/concurrency=1/level=none", none(400, 2e6)),
		rec("format=raw/layout=files/rtt=0s/concurrency=4/level=none", none(600, 5e6)),
		rec("format=raw/layout=files/rtt=18ms/concurrency=4/level=none", none(250, 21e6)),
		rec("format=raw/layout=files/check=a/concurrency=1/level=none", none(25, 40e6)),
	}
	config := []resultfile.Config{{Key: "batch", Value: "16"}, {Key: "remote-check-a", Value: "latency=38ms concurrency=1"}}
	r, err := Build(recs, config)
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
		recs []*benchfmt.Result
		want string
	}{
		{"no device", []*benchfmt.Result{rec("format=raw/layout=files/rtt=0s/concurrency=1/level=none", map[string]float64{"samples/s": 1})}, "no level=device"},
		{"no calibration", []*benchfmt.Result{rec("level=device", map[string]float64{"samples/s": 1}), rec("format=raw/layout=files/rtt=5ms/concurrency=1/level=none", map[string]float64{"samples/s": 1})}, "no point at round trip 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.recs, []resultfile.Config{{Key: "batch", Value: "4"}})
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
