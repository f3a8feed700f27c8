package peer_test

import (
	"math"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/peer"
)

func run(impl string, w int, sps float64, ttfb time.Duration) peer.Measurement {
	return peer.Measurement{Impl: impl, Workers: w, Batches: 8, SamplesPerSec: sps, TTFB: ttfb, CPU: time.Second}
}

func TestSummarize(t *testing.T) {
	ms := []peer.Measurement{
		run("torch", 2, 180, 4*time.Second),
		run("fast", 2, 2000, 100*time.Millisecond),
		run("naive", 1, 240, time.Second),
		run("torch", 1, 100, 2*time.Second),
		run("torch", 1, 120, 3*time.Second),
		run("fast", 1, 900, 300*time.Millisecond),
		run("naive", 1, 200, 2*time.Second),
		run("torch", 1, 110, 2*time.Second),
		run("fast", 4, 3000, time.Second), // no torch at 4 workers
	}
	rows := peer.Summarize(ms)
	want := []peer.Row{
		{Workers: 1, Impl: "naive", Runs: 2, SamplesPerSec: 220, TTFB: 1500 * time.Millisecond, CPU: time.Second, Speedup: 2, TTFBRatio: 0.75},
		{Workers: 1, Impl: "fast", Runs: 1, SamplesPerSec: 900, TTFB: 300 * time.Millisecond, CPU: time.Second, Speedup: 900.0 / 110, TTFBRatio: 0.15},
		{Workers: 1, Impl: "torch", Runs: 3, SamplesPerSec: 110, TTFB: 2 * time.Second, CPU: time.Second},
		{Workers: 2, Impl: "fast", Runs: 1, SamplesPerSec: 2000, TTFB: 100 * time.Millisecond, CPU: time.Second, Speedup: 2000.0 / 180, TTFBRatio: 0.025},
		{Workers: 2, Impl: "torch", Runs: 1, SamplesPerSec: 180, TTFB: 4 * time.Second, CPU: time.Second},
		{Workers: 4, Impl: "fast", Runs: 1, SamplesPerSec: 3000, TTFB: time.Second, CPU: time.Second},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i, w := range want {
		r := rows[i]
		if r.Workers != w.Workers || r.Impl != w.Impl || r.Runs != w.Runs || r.SamplesPerSec != w.SamplesPerSec ||
			r.TTFB != w.TTFB || r.CPU != w.CPU || math.Abs(r.Speedup-w.Speedup) > 1e-12 || math.Abs(r.TTFBRatio-w.TTFBRatio) > 1e-12 {
			t.Errorf("row %d: %+v, want %+v", i, r, w)
		}
	}
	for _, tc := range []struct {
		row     int
		met, ok bool
	}{
		{0, true, true},   // naive 2.00× against ≥ 2×
		{1, false, true},  // fast 8.2× against ≥ 10×
		{2, false, false}, // torch has no target
		{3, true, true},   // fast 11.1×
		{5, false, false}, // no torch to compare with
	} {
		if met, ok := rows[tc.row].Met(); met != tc.met || ok != tc.ok {
			t.Errorf("row %d (%+v): Met() = %v, %v, want %v, %v", tc.row, rows[tc.row], met, ok, tc.met, tc.ok)
		}
	}
}

func TestSummarizeEmpty(t *testing.T) {
	if rows := peer.Summarize(nil); len(rows) != 0 {
		t.Errorf("Summarize(nil) = %+v", rows)
	}
}
