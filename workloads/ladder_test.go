package workloads

import (
	"context"
	"testing"
)

// BenchmarkLadder runs one training step per iteration at every point of
// the ladder sweep, named as the result files name them, e.g.
// BenchmarkLadder/level=raw/workers=2/transforms=naive/placement=host/pinned=true,
// and reports the same metrics as `headspace ladder` writes. -short runs
// QuickLadder (tiny images, 20 ms steps). Each step takes at least the
// emulated step (290 ms; 20 ms with -short), so bound them with
// -benchtime Nx. The pipeline's warm-up steps run before the timer starts.
func BenchmarkLadder(b *testing.B) {
	w, dev := DefaultLadder(), DocumentDevice()
	if testing.Short() {
		w, dev = QuickLadder(), DocumentDevice()
		dev.Step = QuickStep
	}
	for _, p := range w.Points() {
		b.Run(p.Sub(), func(b *testing.B) {
			l := w.Only(p)
			l.Train.Steps, l.Count = b.N, 1
			_, err := l.Run(context.Background(), Env{Device: Emulated(dev), Result: report(b)})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
