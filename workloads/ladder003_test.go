package workloads

import (
	"context"
	"fmt"
	"testing"

	"github.com/headspace-bench/headspace/harness/device"
	"github.com/headspace-bench/headspace/harness/ladder"
)

// BenchmarkLadder runs one training step per iteration at every point of
// the ladder sweep, e.g. BenchmarkLadder/level=raw/workers=4/transforms=naive.
// Use -benchtime Nx to bound the steps: each step takes at least the
// emulated 290 ms. The pipeline's first batch is made before the timer
// starts (one warm-up step).
func BenchmarkLadder(b *testing.B) {
	w := DefaultLadder003()
	for _, p := range ladder.Points(w.Levels, w.Workers, w.Impls) {
		b.Run(fmt.Sprintf("level=%s/workers=%d/transforms=%s", p.Level, p.Workers, p.Impl), func(b *testing.B) {
			cfg := w.Config
			cfg.Workers, cfg.Impl = p.Workers, p.Impl
			dev, err := device.NewEmulated(w.Device)
			if err != nil {
				b.Fatal(err)
			}
			defer dev.Close()
			b.ResetTimer()
			res, err := ladder.Run(context.Background(), p.Level, cfg, dev, ladder.RunConfig{Steps: b.N, Warmup: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(res.Wall.Nanoseconds())/float64(res.Steps), "ns/op")
			b.ReportMetric(res.StepsPerSec(), "steps/s")
			b.ReportMetric(res.SamplesPerSec(), "samples/s")
			b.ReportMetric(res.AU(), "au-%")
		})
	}
}
