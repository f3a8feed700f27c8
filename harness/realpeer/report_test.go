package realpeer

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", name, got)
	}
}

func TestSummarize(t *testing.T) {
	ms := []Measurement{
		{Peer: Ours, Workers: 2, Round: 1, Batches: 8, SamplesPerSec: 400, CPU: 1024 * time.Millisecond, TTFB: 9 * time.Millisecond, PeakRSS: 40 << 20},
		{Peer: "torch2", Workers: 2, Round: 1, Batches: 8, SamplesPerSec: 200, CPU: 2048 * time.Millisecond, TTFB: 200 * time.Millisecond, PeakRSS: 1500 << 20},
		{Peer: "torch2", Workers: 2, Round: 2, Batches: 8, SamplesPerSec: 250, CPU: 2048 * time.Millisecond, TTFB: 220 * time.Millisecond, PeakRSS: -1},
		{Peer: Ours, Workers: 2, Round: 2, Batches: 8, SamplesPerSec: 300, CPU: 1024 * time.Millisecond, TTFB: 8 * time.Millisecond, PeakRSS: 38 << 20},
		{Peer: "torch2", Workers: 2, Round: 3, Batches: 8, SamplesPerSec: 100, CPU: 2048 * time.Millisecond, PeakRSS: -1}, // no ours in round 3: no pair
		{Peer: "dali", Workers: 2, Round: 1, Batches: 8, PeakRSS: -1, Missing: "crashed"},
	}
	rows := Summarize(ms, []string{"torch2", "dali"}, 64)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want ours, torch2 and dali: %+v", len(rows), rows)
	}
	ours, torch, dali := rows[0], rows[1], rows[2]
	if ours.Peer != Ours || ours.SamplesPerSec != 350 || ours.CPUPerSample != 2*time.Millisecond || ours.PeakRSS != 39<<20 || ours.Pairs != 0 {
		t.Errorf("ours: %+v; want the median 350 samples/s, 2 ms CPU a sample (1.024 s / 512), 39 MiB, no ratio", ours)
	}
	// Round 1: 400/200 = 2; round 2: 300/250 = 1.2; round 3 has no ours.
	if torch.Runs != 3 || torch.Pairs != 2 || torch.Ratio != 1.6 || torch.Least != 1.2 || torch.Most != 2 || torch.SamplesPerSec != 200 || torch.PeakRSS != 1500<<20 || torch.CPUPerSample != 4*time.Millisecond {
		t.Errorf("torch2: %+v; want 3 runs, ratio 1.6 (1.2–2) over 2 pairs, median 200 samples/s, RSS of the one run that has it", torch)
	}
	if dali.Runs != 0 || dali.Missing != 1 || dali.Pairs != 0 {
		t.Errorf("dali: %+v; want no run, one missing", dali)
	}
}

func TestWholeRunRate(t *testing.T) {
	for _, tc := range []struct {
		m    Measurement
		want float64
	}{
		// 7 batches of 64 after the first at 448/s take 1 s; with 1 s to
		// the first batch, 512 samples in 2 s.
		{Measurement{Batches: 8, TTFB: time.Second, SamplesPerSec: 448}, 256},
		{Measurement{Batches: 2, TTFB: 0, SamplesPerSec: 64}, 128},
		{Measurement{Batches: 8, TTFB: time.Second}, 0},
		{Measurement{Batches: 8, TTFB: time.Second, SamplesPerSec: 448, Missing: "crashed"}, 0},
	} {
		if got := WholeRunRate(tc.m, 64); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("WholeRunRate(%+v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}

func TestSampleBytes(t *testing.T) {
	for _, tc := range []struct {
		decodeCrop bool
		total      int64
		part       string
	}{
		// 61440 + 512·512·3 + 224·224·3 + 3 × 224·224·3·4
		{false, 61440 + 786432 + 150528 + 3*602112, "decoded pixels written 786432"},
		// 61440 + (224+4+8)·(224+2)·3 + 2 × 224·224·3 (the copy out of
		// the window) + 224·224·3 + 3 × 224·224·3·4
		{true, 61440 + 236*226*3 + 2*150528 + 150528 + 3*602112, "decoded window written 160008"},
	} {
		total, parts := SampleBytes(61440.4, 512, 512, 224, tc.decodeCrop)
		if total != tc.total {
			t.Errorf("decode crop %v: SampleBytes = %d, want %d", tc.decodeCrop, total, tc.total)
		}
		if !strings.Contains(parts, "file read 61440,") || !strings.Contains(parts, tc.part) {
			t.Errorf("decode crop %v: parts %q, want %q", tc.decodeCrop, parts, tc.part)
		}
	}
}
