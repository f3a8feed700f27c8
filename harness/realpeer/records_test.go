package realpeer

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"
)

func TestParseScript(t *testing.T) {
	const cfg = "python: 3.11.7\nspdl-spdl: 0.8.0\nspdl-num_threads: 2\n"
	for _, tc := range []struct {
		name, out string
		check     bool
		want      Measurement
		err       string
	}{
		{name: "run", out: cfg + "BenchmarkRealPeer/peer=spdl/workers=2 8 412345678 ttfb-ns 310.5 samples/s 3.125 cpu-s\n",
			want: Measurement{Peer: "spdl", Workers: 2, Batches: 8, TTFB: 412345678, SamplesPerSec: 310.5, CPU: 3125 * time.Millisecond, PeakRSS: -1}},
		{name: "with rss", out: "BenchmarkRealPeer/peer=ours/workers=1 2 5 ttfb-ns 1 samples/s 0 cpu-s 1048576 peak-rss-B\n",
			want: Measurement{Peer: "ours", Workers: 1, Batches: 2, TTFB: 5, SamplesPerSec: 1, PeakRSS: 1 << 20}},
		{name: "check", out: cfg, check: true},
		{name: "check with a run", out: cfg + "BenchmarkRealPeer/peer=spdl/workers=2 8 1 ttfb-ns 1 samples/s 1 cpu-s\n", check: true, err: "--check printed a benchmark line"},
		{name: "check silent", out: "", check: true, err: "--check printed no configuration lines"},
		{name: "no run", out: cfg, err: "printed 0 BenchmarkRealPeer lines, want 1"},
		{name: "two runs", out: "BenchmarkRealPeer/peer=spdl/workers=2 8 1 ttfb-ns 1 samples/s 1 cpu-s\nBenchmarkRealPeer/peer=spdl/workers=2 8 1 ttfb-ns 1 samples/s 1 cpu-s\n", err: "printed 2"},
		{name: "other benchmark", out: "BenchmarkPeer/impl=torch/workers=2 8 1 ttfb-ns 1 samples/s 1 cpu-s\n", err: "BenchmarkPeer/impl=torch/workers=2: not a record of RealPeer (its benchmarks: RealPeer)"},
		{name: "unknown peer", out: "BenchmarkRealPeer/peer=ray/workers=2 8 1 ttfb-ns 1 samples/s 1 cpu-s\n", err: `no peer "ray"`},
		{name: "no workers", out: "BenchmarkRealPeer/peer=spdl 8 1 ttfb-ns 1 samples/s 1 cpu-s\n", err: "BenchmarkRealPeer/peer=spdl: a record of RealPeer without its key workers"},
		{name: "bad workers", out: "BenchmarkRealPeer/peer=spdl/workers=0 8 1 ttfb-ns 1 samples/s 1 cpu-s\n", err: `workers "0"`},
		{name: "extra key", out: "BenchmarkRealPeer/peer=spdl/workers=2/x=1 8 1 ttfb-ns 1 samples/s 1 cpu-s\n", err: "with a part of its name more (/x=1)"},
		{name: "repeated key", out: "BenchmarkRealPeer/peer=spdl/peer=dali/workers=2 8 1 ttfb-ns 1 samples/s 1 cpu-s\n", err: "with its key peer twice"},
		{name: "one batch", out: "BenchmarkRealPeer/peer=spdl/workers=2 1 1 ttfb-ns 1 samples/s 1 cpu-s\n", err: "1 batches, want at least 2"},
		{name: "no cpu", out: "BenchmarkRealPeer/peer=spdl/workers=2 8 1 ttfb-ns 1 samples/s\n", err: "no cpu-s value"},
		{name: "negative", out: "BenchmarkRealPeer/peer=spdl/workers=2 8 1 ttfb-ns -1 samples/s 1 cpu-s\n", err: "samples/s -1 must be finite and not negative"},
		{name: "nan", out: "BenchmarkRealPeer/peer=spdl/workers=2 8 NaN ttfb-ns 1 samples/s 1 cpu-s\n", err: "must be finite"},
		{name: "twice", out: "BenchmarkRealPeer/peer=spdl/workers=2 8 1 ttfb-ns 1 samples/s 1 samples/s 1 cpu-s\n", err: "samples/s given 2 times"},
		{name: "huge ttfb", out: "BenchmarkRealPeer/peer=spdl/workers=2 8 1e30 ttfb-ns 1 samples/s 1 cpu-s\n", err: "out of range"},
		{name: "syntax", out: "BenchmarkRealPeer/peer=spdl/workers=2 x\n", err: "parsing iteration count"},
	} {
		o, err := ParseScript(strings.NewReader(tc.out), "peer spdl", tc.check)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if o.Run != tc.want {
			t.Errorf("%s: run %+v, want %+v", tc.name, o.Run, tc.want)
		}
		if strings.HasPrefix(tc.out, cfg) && (len(o.Config) != 3 || o.Config[1].Key != "spdl-spdl" || o.Config[1].Value != "0.8.0") {
			t.Errorf("%s: configuration %v, want the script's three lines", tc.name, o.Config)
		}
	}
}

func FuzzParseScript(f *testing.F) {
	f.Add("spdl-spdl: 0.8.0\nBenchmarkRealPeer/peer=spdl/workers=2 8 412345678 ttfb-ns 310.5 samples/s 3.125 cpu-s\n", false)
	f.Add("python: 3.11\n", true)
	f.Add("BenchmarkRealPeer/peer=ours/workers=1 2 5 ttfb-ns 1 samples/s 0 cpu-s 1048576 peak-rss-B\n", false)
	f.Fuzz(func(t *testing.T, out string, check bool) {
		o, err := ParseScript(strings.NewReader(out), "fuzz", check)
		if err != nil || check {
			return
		}
		m := o.Run
		if m.Batches < 2 || m.Workers < 1 || m.SamplesPerSec < 0 || m.TTFB < 0 || m.CPU < 0 || m.PeakRSS < -1 {
			t.Fatalf("accepted a run out of bounds: %+v", m)
		}
		// A record it accepts, written as the result file writes it, reads
		// back the same.
		rec := m.Record()
		rec.Name = benchfmt.Name(strings.TrimPrefix(string(rec.Name), "Benchmark"))
		var b bytes.Buffer
		if err := benchfmt.NewWriter(&b).Write(rec); err != nil {
			t.Fatal(err)
		}
		o2, err := ParseScript(&b, "rewritten", false)
		if err != nil {
			t.Fatalf("its own record %v does not parse: %v", rec, err)
		}
		back := o2.Run
		if back.Peer != m.Peer || back.Workers != m.Workers || back.Batches != m.Batches || back.PeakRSS != m.PeakRSS {
			t.Fatalf("record round trip: %+v, want %+v", back, m)
		}
	})
}

func TestParsePgrp(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int
		ok   bool
	}{
		{"1234 (python3) S 1200 1234 1200 0 -1 4194560", 1234, true},
		{"99 (a (weird) name) R 1 77 77 0", 77, true},
		{"99 (trunc) R 1", 0, false},
		{"no parenthesis", 0, false},
	} {
		got, ok := parsePgrp(tc.stat)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parsePgrp(%q) = %d, %v; want %d, %v", tc.stat, got, ok, tc.want, tc.ok)
		}
	}
}
