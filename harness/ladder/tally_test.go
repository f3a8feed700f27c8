package ladder

import (
	"slices"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// TestTally: a point's runs are the resumed file's, then each record
// added, in order; a record counts as disturbed only with a disturbed
// value above 0; another point's records stay its own.
func TestTally(t *testing.T) {
	p := Point{Level: level.Raw, Workers: 2, Impl: "fast", Pinned: true}
	q := p
	q.Level = level.None
	rec := func(p Point, steps, disturbed float64) *benchfmt.Result {
		b := &benchfmt.Result{Name: benchfmt.Name(p.BenchName()), Iters: 1}
		b.Values = append(b.Values, benchfmt.Value{Value: steps, Unit: "steps/s"}, benchfmt.Value{Value: disturbed, Unit: disturb.DisturbedUnit})
		return b
	}
	tl := NewTally()
	tl.Resume(p.BenchName(), []float64{1.5})
	for _, b := range []*benchfmt.Result{rec(p, 2, 0), rec(q, 7, 1), rec(p, 3, 2)} {
		if err := tl.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	if got := tl.Steps(p); !slices.Equal(got, []float64{1.5, 2, 3}) || tl.Disturbed(p) != 1 {
		t.Errorf("%s: steps/s %v, %d disturbed; want [1.5 2 3] and 1", p.Name(), got, tl.Disturbed(p))
	}
	if got := tl.Steps(q); !slices.Equal(got, []float64{7}) || tl.Disturbed(q) != 1 {
		t.Errorf("%s: steps/s %v, %d disturbed; want [7] and 1", q.Name(), got, tl.Disturbed(q))
	}
	other := p
	other.Workers = 3
	if tl.Steps(other) != nil || tl.Disturbed(other) != 0 {
		t.Errorf("a point not run: %v, %d", tl.Steps(other), tl.Disturbed(other))
	}
}
