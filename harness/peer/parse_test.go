package peer_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/peer"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []peer.Measurement // nil: an error containing err
		err  string
	}{
		{
			name: "torch",
			in:   "torch: 1.13\nBenchmarkPeer/impl=torch/workers=2 8 2.5e+09 ttfb-ns 152.25 samples/s 30.5 cpu-s\n",
			want: []peer.Measurement{{Impl: "torch", Workers: 2, Batches: 8, TTFB: 2500 * time.Millisecond, SamplesPerSec: 152.25, CPU: 30500 * time.Millisecond}},
		},
		{
			name: "ours, without cpu-s, ttfb in seconds, gomaxprocs-free",
			in:   "BenchmarkPeer/impl=fast/workers=1 3 0.25 ttfb-sec 1000 samples/s\nBenchmarkPeer/impl=naive/workers=16 2 0 ttfb-ns 0 samples/s\n",
			want: []peer.Measurement{
				{Impl: "fast", Workers: 1, Batches: 3, TTFB: 250 * time.Millisecond, SamplesPerSec: 1000},
				{Impl: "naive", Workers: 16, Batches: 2},
			},
		},
		{name: "empty", in: "", err: "no BenchmarkPeer lines"},
		{name: "config only", in: "torch: 1.13\n", err: "no BenchmarkPeer lines"},
		{name: "syntax", in: "BenchmarkPeer/impl=torch/workers=1 x 1 ttfb-ns\n", err: "out.txt:1: parsing iteration count"},
		{name: "other benchmark", in: "BenchmarkLoaders/mode=process/workers=1 2 1 ttfb-ns 1 samples/s\n", err: "BenchmarkLoaders/mode=process/workers=1: not a record of Peer (its benchmarks: Peer)"},
		{name: "unknown impl", in: "BenchmarkPeer/impl=jax/workers=1 2 1 ttfb-ns 1 samples/s\n", err: `unknown impl "jax"`},
		{name: "no impl", in: "BenchmarkPeer/workers=1 2 1 ttfb-ns 1 samples/s\n", err: "BenchmarkPeer/workers=1: a record of Peer without its key impl"},
		{name: "zero workers", in: "BenchmarkPeer/impl=torch/workers=0 2 1 ttfb-ns 1 samples/s\n", err: `workers "0": want a positive count`},
		{name: "extra part", in: "BenchmarkPeer/impl=torch/workers=1/x=2 2 1 ttfb-ns 1 samples/s\n", err: "with a part of its name more (/x=2)"},
		{name: "gomaxprocs", in: "BenchmarkPeer/impl=torch/workers=1-2 2 1 ttfb-ns 1 samples/s\n", err: "with a part of its name more (-2)"},
		{name: "twice", in: "BenchmarkPeer/impl=torch/impl=fast/workers=1 2 1 ttfb-ns 1 samples/s\n", err: "with its key impl twice"},
		{name: "one batch", in: "BenchmarkPeer/impl=torch/workers=1 1 1 ttfb-ns 1 samples/s\n", err: "1 batches, want at least 2"},
		{name: "no ttfb", in: "BenchmarkPeer/impl=torch/workers=1 2 1 samples/s\n", err: "no value in ttfb-ns"},
		{name: "no samples/s", in: "BenchmarkPeer/impl=torch/workers=1 2 1 ttfb-ns\n", err: "no value in samples/s"},
		{name: "negative", in: "BenchmarkPeer/impl=torch/workers=1 2 1 ttfb-ns -3 samples/s\n", err: "samples/s -3 must be finite and not negative"},
		{name: "NaN", in: "BenchmarkPeer/impl=torch/workers=1 2 NaN ttfb-ns 3 samples/s\n", err: "ttfb-ns NaN"},
		{name: "huge", in: "BenchmarkPeer/impl=torch/workers=1 2 1e300 ttfb-ns 3 samples/s\n", err: "out of range"},
		{name: "duplicate unit", in: "BenchmarkPeer/impl=torch/workers=1 2 1 ttfb-ns 2 ttfb-sec 3 samples/s\n", err: "ttfb-ns given 2 times"},
	} {
		out, err := peer.Parse(strings.NewReader(tc.in), "out.txt")
		if tc.want == nil {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(out.Results) != len(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, out.Results, tc.want)
			continue
		}
		for i := range tc.want {
			if out.Results[i] != tc.want[i] {
				t.Errorf("%s: result %d %+v, want %+v", tc.name, i, out.Results[i], tc.want[i])
			}
		}
	}
}

func TestParseManyBadLines(t *testing.T) {
	in := strings.Repeat("BenchmarkPeer/impl=torch/workers=1 2 x ttfb-ns\n", 9)
	_, err := peer.Parse(strings.NewReader(in), "out.txt")
	if err == nil || !strings.Contains(err.Error(), "out.txt: 4 more bad lines") {
		t.Errorf("error %v, want five lines named and the rest counted", err)
	}
}

func TestParseConfigIsTheFirstResults(t *testing.T) {
	in := "torch: 1.13\nnumpy: 1.24\nBenchmarkPeer/impl=torch/workers=1 2 1 ttfb-ns 1 samples/s\n" +
		"torch: 9.9\nBenchmarkPeer/impl=torch/workers=2 2 1 ttfb-ns 1 samples/s\n"
	out, err := peer.Parse(strings.NewReader(in), "out.txt")
	if err != nil {
		t.Fatal(err)
	}
	if out.Get("torch") != "1.13" || out.Get("numpy") != "1.24" || out.Get("scipy") != "" {
		t.Errorf("config %v: want torch 1.13 and numpy 1.24 as the first result saw them", out.Config)
	}
}

// TestBenchmarkRoundTrip: what Measurement.Benchmark writes, Parse reads.
func TestBenchmarkRoundTrip(t *testing.T) {
	ms := []peer.Measurement{
		{Impl: "naive", Workers: 1, Batches: 8, TTFB: 1234567891, SamplesPerSec: 245.125, CPU: 9876543210},
		{Impl: "torch", Workers: 32, Batches: 2, TTFB: 0, SamplesPerSec: 0, CPU: 0},
	}
	var buf bytes.Buffer
	for _, m := range ms {
		buf.WriteString(m.BenchName() + " ")
		r := m.Benchmark()
		buf.WriteString(strings.TrimPrefix(formatResult(r.Iters, r.Values), " ") + "\n")
	}
	out, err := peer.Parse(&buf, "round-trip")
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if out.Results[i] != m {
			t.Errorf("%+v came back as %+v", m, out.Results[i])
		}
	}
}
