package fetchmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestPredict(t *testing.T) {
	inf := math.Inf(1)
	cal := Calibration{ServerTime: 5 * time.Millisecond, ServerRate: 2000, HostRate: 1000, DeviceRate: 800}
	for _, tc := range []struct {
		name  string
		cal   Calibration
		f     Fetch
		l     Link
		want  float64
		bound string
		hs    float64
	}{
		// 4 in flight, 15 ms + 5 ms server + 1 MB at 200 MB/s (5 ms) = 25 ms: 160 samples/s.
		{"concurrency", cal, Fetch{4, 1e6, 1, 0}, Link{RTT: 15 * time.Millisecond, ConnBandwidth: 2e8}, 160, BoundConcurrency, 0.8},
		// 1 Gbit/s (125 MB/s) of 1 MB samples: 125/s below 64 in flight's 2560/s.
		{"bandwidth", cal, Fetch{64, 1e6, 1, 0}, Link{RTT: 20 * time.Millisecond, Bandwidth: 125e6}, 125, BoundBandwidth, 0.84375},
		// 5,500 requests/s is the link's; the server's 2,000 is lower.
		{"server rate", Calibration{ServerTime: time.Millisecond, ServerRate: 2000}, Fetch{64, 100, 1, 0}, Link{RequestRate: 5500}, 2000, BoundRequestRate, 0},
		// A request serving 4 samples: 4 × 2000 requests/s.
		{"samples per request", Calibration{ServerTime: time.Millisecond, ServerRate: 2000}, Fetch{64, 100, 0.25, 0}, Link{}, 8000, BoundRequestRate, 0},
		// Everything fast: the host's 1,000 samples/s... above the device's 800.
		{"device", cal, Fetch{64, 100, 1, 0}, Link{}, 800, BoundDevice, 0},
		{"host", Calibration{HostRate: 500, DeviceRate: 800}, Fetch{64, 100, 1, 0}, Link{}, 500, BoundHost, 0.375},
		// 8 in flight at 80 ms and no server time: 100/s.
		{"long round trip", Calibration{}, Fetch{8, 100, 1, 0}, Link{RTT: 80 * time.Millisecond}, 100, BoundConcurrency, 0},
		{"nothing bounds", Calibration{}, Fetch{8, 100, 1, 0}, Link{}, inf, "", 0},
		// 64 fetchers but a window of 32 samples (prefetch 2 × batch 16):
		// 32 requests in flight at 80 ms, 400/s.
		{"window", Calibration{}, Fetch{64, 100, 1, 32}, Link{RTT: 80 * time.Millisecond}, 400, BoundConcurrency, 0},
		// A request a shard of 8 samples: the window of 32 needs 4 requests.
		{"window of shards", Calibration{}, Fetch{64, 100, 0.125, 32}, Link{RTT: 80 * time.Millisecond}, 400, BoundConcurrency, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Predict(tc.cal, tc.f, tc.l)
			if p.SamplesPerSec != tc.want || p.Bound != tc.bound || p.Headspace != tc.hs {
				t.Fatalf("Predict = %v samples/s (%q), headspace %v; want %v (%q), %v", p.SamplesPerSec, p.Bound, p.Headspace, tc.want, tc.bound, tc.hs)
			}
			if len(p.Terms) != 5 {
				t.Fatalf("%d terms, want 5", len(p.Terms))
			}
		})
	}
}

func TestServerTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		latency time.Duration
		bytes   float64
		l       Link
		want    time.Duration
	}{
		{"no link", 3 * time.Millisecond, 1e6, Link{}, 3 * time.Millisecond},
		{"round trip", 23 * time.Millisecond, 1e6, Link{RTT: 20 * time.Millisecond}, 3 * time.Millisecond},
		{"transfer", 8 * time.Millisecond, 1e6, Link{ConnBandwidth: 2e8}, 3 * time.Millisecond},
		{"never negative", time.Millisecond, 1e6, Link{RTT: 20 * time.Millisecond}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ServerTime(tc.latency, tc.bytes, tc.l); got != tc.want {
				t.Fatalf("ServerTime = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCalibrationRoundTrip: the server time calibrated from a latency
// predicts that latency back as the request's time.
func TestCalibrationRoundTrip(t *testing.T) {
	l := Link{RTT: 20 * time.Millisecond, ConnBandwidth: 9e7}
	f := Fetch{Concurrency: 16, BytesPerSample: 4.5e6, RequestsPerSample: 1}
	lat := 75 * time.Millisecond
	c := Calibration{ServerTime: ServerTime(lat, f.BytesPerRequest(), l)}
	if got := RequestTime(c, f, l); got != lat {
		t.Fatalf("RequestTime = %v, want the calibrating latency %v", got, lat)
	}
}

func TestAPEMedian(t *testing.T) {
	for _, tc := range []struct {
		pred, meas, want float64
	}{{110, 100, 10}, {90, 100, 10}, {100, 100, 0}, {150, 200, 25}} {
		if got := APE(tc.pred, tc.meas); got != tc.want {
			t.Errorf("APE(%v, %v) = %v, want %v", tc.pred, tc.meas, got, tc.want)
		}
	}
	if !math.IsNaN(APE(1, 0)) {
		t.Error("APE against a measured 0 is not NaN")
	}
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{math.NaN(), 5}, 5}} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median of nothing is not NaN")
	}
}

// TestMedianAsBefore pins Median, now summary's (benchmath's), to the
// mean of the middle two this package computed itself before (issue 33),
// at the precision the remedies report prints errors (%.1f%%), for
// errors of the kind it summarises: absolute percentage errors with
// NaNs (points without a prediction) among them.
func TestMedianAsBefore(t *testing.T) {
	old := func(xs []float64) float64 {
		var v []float64
		for _, x := range xs {
			if !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			return math.NaN()
		}
		slices.Sort(v)
		n := len(v)
		if n%2 == 1 {
			return v[n/2]
		}
		return (v[n/2-1] + v[n/2]) / 2
	}
	nan := math.NaN()
	r := rand.New(rand.NewPCG(3, 3))
	cases := [][]float64{
		{}, {nan}, {4.2}, {12.35, 0.15}, {3.3, nan, 7.1, 0.45}, {1.05, 2.15, 3.25, 4.35, 5.45, 6.55},
	}
	for n := 1; n < 60; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Abs(r.NormFloat64()) * 25 // APE, %
			if r.IntN(10) == 0 {
				xs[i] = nan
			}
		}
		cases = append(cases, xs)
	}
	for _, xs := range cases {
		want := old(slices.Clone(xs))
		got := Median(slices.Clone(xs))
		if fmt.Sprintf("%.1f", got) != fmt.Sprintf("%.1f", want) || (!math.IsNaN(want) && math.Abs(got-want) > 1e-12*math.Abs(want)) {
			t.Errorf("Median(%v) = %v, was %v", xs, got, want)
		}
	}
}
