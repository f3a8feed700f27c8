package ladder

import (
	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// Tally is what a sweep measured so far, per point (by benchmark name):
// every run's steps/s, and how many runs stayed disturbed. A resumed
// result file's runs come first (Resume), then each new record (Add); a
// sweep's table reads it (Steps, Disturbed).
type Tally struct {
	steps     map[string][]float64
	disturbed map[string]int
}

// NewTally is an empty Tally.
func NewTally() *Tally {
	return &Tally{steps: map[string][]float64{}, disturbed: map[string]int{}}
}

// Resume sets the runs of the point named name (Point.BenchName) that a
// result file already holds: their steps/s.
func (t *Tally) Resume(name string, stepsPerSec []float64) { t.steps[name] = stepsPerSec }

// Add counts one record: its steps/s, and whether it stayed disturbed
// (disturb.DisturbedUnit above 0). Its error is always nil: it is the
// workloads.Env.Result a sweep calls with each record before it is
// recorded.
func (t *Tally) Add(b *benchfmt.Result) error {
	v, _ := resultfile.Value(b, "steps/s")
	t.steps[string(b.Name)] = append(t.steps[string(b.Name)], v)
	if d, ok := resultfile.Value(b, disturb.DisturbedUnit); ok && d > 0 {
		t.disturbed[string(b.Name)]++
	}
	return nil
}

// Steps is every run's steps/s at p, in the order counted.
func (t *Tally) Steps(p Point) []float64 { return t.steps[p.BenchName()] }

// Disturbed is how many of p's new runs stayed disturbed.
func (t *Tally) Disturbed(p Point) int { return t.disturbed[p.BenchName()] }
