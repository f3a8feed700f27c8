package workloads

import (
	"context"
	"slices"
	"testing"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/whatif"
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

// TestDefaultLevels checks that every default sweep runs the document's
// levels, the explicit list level.Document, not every level of the table
// (level.For): a level added to the table joins none of them unless it is
// added to that list (level.TestDefault) or asked for.
func TestDefaultLevels(t *testing.T) {
	doc, down := level.Document, level.Descending(level.Document)
	if got := DefaultLadder().Levels; !slices.Equal(got, doc) {
		t.Errorf("DefaultLadder().Levels = %v, want %v", got, doc)
	}
	for _, st := range CachingSteps(512, LadderDocumentSmallRaw)[:2] {
		if !slices.Equal(st.Levels, down) {
			t.Errorf("caching step %s: levels %v, want %v", st.Key, st.Levels, down)
		}
	}
	if got := (Caching{}).YardstickExperiment().Config.Levels; !slices.Equal(got, down) {
		t.Errorf("the yardstick's levels %v, want %v", got, down)
	}
	if got := (peer.LadderConfig{}).LevelOrder(); !slices.Equal(got, down) {
		t.Errorf("a peer ladder's default levels %v, want %v", got, down)
	}
	w := WhatIf{WithLadder: true, Profiled: &whatif.Profile{}, Count: 2}
	if got, want := w.Runs(), len(w.Verify.Cores)*len(w.Verify.Workers)*len(w.Verify.StepScales)*2+len(doc)*2; got != want {
		t.Errorf("WhatIf.Runs() = %d, want %d (the document's %d levels twice)", got, want, len(doc))
	}
}
