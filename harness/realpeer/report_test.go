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

// TestReadFileReport: a results file with two rounds and a missing run
// reads back as its runs, each in its round (dali's round-1 run missing,
// so its record is round 2), and its report is the golden one.
func TestReadFileReport(t *testing.T) {
	r, err := ReadFile("testdata/peers.txt")
	if err != nil {
		t.Fatal(err)
	}
	var rounds []string
	for _, m := range r.Runs {
		rounds = append(rounds, m.Peer+":"+string(rune('0'+m.Round)))
	}
	if got, want := strings.Join(rounds, " "), "ours:1 torch2:1 torch2:2 dali:2 ours:2 dali:1"; got != want {
		t.Errorf("runs' rounds %s, want %s", got, want)
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "peers.md", b.Bytes())
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

func TestNewReportRefuses(t *testing.T) {
	full, err := ReadFile("testdata/peers.txt")
	if err != nil {
		t.Fatal(err)
	}
	without := func(key string) Report {
		var r Report
		for _, c := range full.Config {
			if c.Key != key {
				r.Config = append(r.Config, c)
			}
		}
		return r
	}
	for _, key := range ReportKeys {
		if _, err := NewReport(without(key).Config, full.Runs, nil, "f.txt"); err == nil || !strings.Contains(err.Error(), "f.txt: no "+key+" line") {
			t.Errorf("without %s: %v, want the error naming the file and the key", key, err)
		}
	}
	bad := append(without("peers").Config, full.Config[0])
	bad[len(bad)-1].Key, bad[len(bad)-1].Value = "peers", "torch2,ray"
	if _, err := NewReport(bad, full.Runs, nil, "f.txt"); err == nil || !strings.Contains(err.Error(), `peers line names "ray"`) {
		t.Errorf("a peers line with an unknown peer: %v", err)
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

// TestReadFileLimit: a results file with the limit's records rebuilds
// the share of the limit (ours: 350 samples/s × 2804736 B ÷ the median
// copy bandwidth 11.5 GB/s) and where ours' time goes; its report is the
// golden one.
func TestReadFileLimit(t *testing.T) {
	r, err := ReadFile("testdata/peers-limit.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Limits) != 2 || r.SampleBytes != 2804736 || r.CopyBandwidth(2) != 11.5e9 || r.CopyBandwidth(1) != 0 {
		t.Fatalf("limits %+v, bytes %d, bandwidth %g", r.Limits, r.SampleBytes, r.CopyBandwidth(2))
	}
	for _, row := range r.Rows {
		want := -1.0
		if row.Runs > 0 {
			want = row.SamplesPerSec * 2804736 / 11.5e9
		}
		if math.Abs(row.Share-want) > 1e-12 {
			t.Errorf("%s: share %v, want %v", row.Peer, row.Share, want)
		}
	}
	if st := r.StageTimes(2); len(st) != 5 || st[1].Stage != "decode" || st[1].PerSample != 2500*time.Microsecond {
		t.Errorf("stage times %+v, want five, decode's median 2.5 ms", st)
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "peers-limit.md", b.Bytes())
}

// TestReadFileLimitRefuses: a bad limit record or bytes line names the
// file and what is wrong.
func TestReadFileLimitRefuses(t *testing.T) {
	good, err := os.ReadFile("testdata/peers-limit.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"BenchmarkRealPeerLimit/workers=2 8 1.2e+10 copy-B/s", "BenchmarkRealPeerLimit/workers=0 8 1.2e+10 copy-B/s", "workers is not a positive"},
		{"BenchmarkRealPeerLimit/workers=2 8 1.2e+10 copy-B/s", "BenchmarkRealPeerLimit/mode=x 8 1.2e+10 copy-B/s", "want BenchmarkRealPeerLimit/workers=<n>"},
		{"8 1.2e+10 copy-B/s", "8 1.2e+10 other-B/s", "no copy-B/s value"},
		{"8 1.2e+10 copy-B/s", "8 0 copy-B/s", "copy-B/s must be positive"},
		{"8 1.2e+10 copy-B/s 40000 fetch-ns/sample", "8 1.2e+10 copy-B/s -4 fetch-ns/sample", "fetch-ns/sample -4 must be finite and not negative"},
		{"limit-bytes-per-sample: 2804736", "limit-bytes-per-sample: many", `limit-bytes-per-sample "many" is not a positive whole number`},
	} {
		path := filepath.Join(t.TempDir(), "r.txt")
		if err := os.WriteFile(path, []byte(strings.Replace(string(good), tc.old, tc.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s → %s: %v, want an error naming %s and %q", tc.old, tc.new, err, path, tc.want)
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

// TestPlotRebuilds: the plot is drawn from the report alone, so drawing
// it twice (a run, then --from) gives the same bytes; both formats.
func TestPlotRebuilds(t *testing.T) {
	r, err := ReadFile("testdata/peers-limit.txt")
	if err != nil {
		t.Fatal(err)
	}
	var files [2][]string
	for i := range files {
		paths, err := r.Plot(filepath.Join(t.TempDir(), "peers"))
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != 2 || !strings.HasSuffix(paths[0], ".png") || !strings.HasSuffix(paths[1], ".svg") {
			t.Fatalf("paths %v", paths)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil || len(b) == 0 {
				t.Fatalf("%s: %v, %d bytes", p, err, len(b))
			}
			files[i] = append(files[i], string(b))
		}
	}
	for k := range files[0] {
		if files[0][k] != files[1][k] {
			t.Errorf("plot file %d differs between two draws of one report", k)
		}
	}
	if !strings.Contains(files[0][1], "torch2") || !strings.Contains(files[0][1], "ours") {
		t.Error("the SVG names neither torch2 nor ours")
	}
	if _, err := (Report{}).Plot(filepath.Join(t.TempDir(), "empty")); err == nil {
		t.Error("a report with no runs: no error")
	}
}
