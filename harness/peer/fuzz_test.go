package peer_test

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/peer"
)

// formatResult writes iterations and values as a benchmark line does.
func formatResult(iters int, vs []benchfmt.Value) string {
	var b strings.Builder
	fmt.Fprintf(&b, " %d", iters)
	for _, v := range vs {
		fmt.Fprintf(&b, " %v %s", v.Value, v.Unit)
	}
	return b.String()
}

// FuzzParse feeds arbitrary output to the parser. It must never panic;
// what it accepts must hold its invariants and survive Benchmark and Parse
// again unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte("python: 3.11.2\ntorch: 1.13.0a0\nBenchmarkPeer/impl=torch/workers=2 8 2712345678 ttfb-ns 189.3 samples/s 25.1 cpu-s\n"))
	f.Add([]byte("BenchmarkPeer/impl=fast/workers=1 3 0.25 ttfb-sec 1000 samples/s\nBenchmarkPeer/impl=naive/workers=16 2 0 ttfb-ns 0 samples/s\n"))
	f.Add([]byte("BenchmarkPeer/impl=torch/workers=1 2 1e300 ttfb-ns NaN samples/s -1 cpu-s\nUnit ttfb-ns better=lower\n"))
	f.Add([]byte("BenchmarkPeer/impl=torch/workers=1-4 2 1 ttfb-ns\nkey:\nBenchmark\nBenchmarkPeer 1 2 x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := peer.Parse(bytes.NewReader(data), "fuzz.txt")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(out.Results) == 0 {
			t.Fatal("accepted output with no result")
		}
		var buf bytes.Buffer
		for _, m := range out.Results {
			if m.Workers <= 0 || m.Batches < 2 || m.TTFB < 0 || m.CPU < 0 ||
				m.SamplesPerSec < 0 || math.IsNaN(m.SamplesPerSec) || math.IsInf(m.SamplesPerSec, 0) {
				t.Fatalf("accepted %+v", m)
			}
			r := m.Benchmark()
			buf.WriteString(m.BenchName() + formatResult(r.Iters, r.Values) + "\n")
		}
		back, err := peer.Parse(&buf, "again.txt")
		if err != nil {
			t.Fatalf("rewritten output does not parse: %v\n%s", err, buf.Bytes())
		}
		if len(back.Results) != len(out.Results) {
			t.Fatalf("%d results became %d", len(out.Results), len(back.Results))
		}
		for i, m := range out.Results {
			b := back.Results[i]
			// Seconds written with %v round-trip exactly; a duration
			// in seconds may be off by a nanosecond after float64.
			if b.Impl != m.Impl || b.Workers != m.Workers || b.Batches != m.Batches || b.TTFB != m.TTFB ||
				b.SamplesPerSec != m.SamplesPerSec || absDiff(b.CPU.Nanoseconds(), m.CPU.Nanoseconds()) > 1 {
				t.Fatalf("%+v became %+v", m, b)
			}
		}
	})
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}
