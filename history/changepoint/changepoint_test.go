package changepoint

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// noisy returns n points around 100 with Gaussian noise of sd·100, a
// step of step (0.08 for +8%) from index at on (no step when at < 0).
func noisy(seed uint64, n int, sd, step float64, at int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	xs := make([]float64, n)
	for i := range xs {
		base := 100.0
		if at >= 0 && i >= at {
			base *= 1 + step
		}
		xs[i] = base * (1 + sd*rng.NormFloat64())
	}
	return xs
}

// TestStepFoundAtItsCommit: a step of 8% under 2% noise is found at its
// index, and nowhere else, whatever the seed and the step's place.
func TestStepFoundAtItsCommit(t *testing.T) {
	for seed := range uint64(5) {
		for _, at := range []int{6, 15, 24} {
			xs := noisy(seed, 30, 0.02, 0.08, at)
			cs := Detect(xs, Options{})
			if len(cs) != 1 || cs[0].Index != at {
				t.Errorf("seed %d, step at %d: changes %+v", seed, at, cs)
				continue
			}
			if d := cs[0].Delta; math.Abs(d-0.08) > 0.03 {
				t.Errorf("seed %d: delta %.3f, want about 0.08", seed, d)
			}
		}
	}
}

// TestFlatSeriesNoChange: flat noisy series raise no change.
func TestFlatSeriesNoChange(t *testing.T) {
	for seed := range uint64(20) {
		for _, sd := range []float64{0.02, 0.10} {
			if cs := Detect(noisy(seed, 30, sd, 0, -1), Options{}); len(cs) != 0 {
				t.Errorf("seed %d, noise %.0f%%: changes %+v in a flat series", seed, 100*sd, cs)
			}
		}
	}
}

// TestFalseAlarmRate measures how often a flat series of 30 points (2%
// noise) gets any change over 1000 seeds; at Alpha 0.001 it should be
// about 0.1% and is held under 0.5%.
func TestFalseAlarmRate(t *testing.T) {
	alarms := 0
	const runs = 1000
	for seed := range uint64(runs) {
		if len(Detect(noisy(1000+seed, 30, 0.02, 0, -1), Options{})) > 0 {
			alarms++
		}
	}
	t.Logf("%d of %d flat series had a change (%.1f%%)", alarms, runs, 100*float64(alarms)/runs)
	if alarms > runs*5/1000 {
		t.Errorf("%d of %d flat series had a change", alarms, runs)
	}
}

func TestTwoSteps(t *testing.T) {
	xs := noisy(7, 40, 0.02, 0.10, 12)
	for i := 28; i < 40; i++ {
		xs[i] *= 0.85
	}
	cs := Detect(xs, Options{})
	if len(cs) != 2 || cs[0].Index != 12 || cs[1].Index != 28 || cs[0].Delta < 0 || cs[1].Delta > 0 {
		t.Errorf("changes %+v, want +10%% at 12 and -15%% at 28", cs)
	}
}

func TestShortSeries(t *testing.T) {
	for n := range 6 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i * 100)
		}
		if cs := Detect(xs, Options{}); len(cs) != 0 {
			t.Errorf("%d points: %+v", n, cs)
		}
	}
	// Constant series: no change, no NaN.
	if cs := Detect([]float64{5, 5, 5, 5, 5, 5, 5, 5}, Options{}); len(cs) != 0 {
		t.Errorf("constant: %+v", cs)
	}
}

func TestDeterministic(t *testing.T) {
	xs := noisy(3, 30, 0.02, 0.05, 14)
	orig := fmt.Sprint(xs)
	a, b := Detect(xs, Options{Seed: 9}), Detect(xs, Options{Seed: 9})
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("%v != %v", a, b)
	}
	if fmt.Sprint(xs) != orig {
		t.Error("Detect changed its input")
	}
}

func ExampleDetect() {
	xs := []float64{100, 101, 99, 100, 102, 98, 100, 101, 108, 109, 107, 108, 110, 108, 109, 107}
	for _, c := range Detect(xs, Options{}) {
		fmt.Printf("change at point %d: %.1f → %.1f (%+.1f%%)\n", c.Index, c.Before, c.After, 100*c.Delta)
	}
	// Output: change at point 8: 100.0 → 108.0 (+8.0%)
}

// TestMinimumIsTrue: the documented minimum holds. A 50% step half way
// through MinPoints-1 points (12 by the defaults' Floor) is never a
// change, whatever the seed; through 20 points it always is; and in the
// last 3 of 20 points, below its Floor, it never is.
func TestMinimumIsTrue(t *testing.T) {
	opt := Options{}.withDefaults()
	n := MinPoints(Options{})
	if Floor(n, n/2) >= opt.Alpha || Floor(n-1, (n-1)/2) < opt.Alpha {
		t.Fatalf("MinPoints %d does not match Floor", n)
	}
	if Floor(20, 3) < opt.Alpha {
		t.Fatalf("Floor(20, 3) = %g reaches alpha", Floor(20, 3))
	}
	for seed := range uint64(40) {
		if cs := Detect(noisy(seed, n-1, 0.02, -0.5, (n-1)/2), Options{Seed: seed}); len(cs) != 0 {
			t.Errorf("seed %d: %d points, a change %+v below the test's floor", seed, n-1, cs)
		}
		if cs := Detect(noisy(seed, 20, 0.02, -0.5, 17), Options{Seed: seed}); len(cs) != 0 {
			t.Errorf("seed %d: a change %+v in the last 3 of 20 points, below the test's floor", seed, cs)
		}
		if cs := Detect(noisy(seed, 20, 0.02, -0.5, 10), Options{Seed: seed}); len(cs) != 1 || cs[0].Index != 10 {
			t.Errorf("seed %d: a 50%% step half way through 20 points: %+v", seed, cs)
		}
	}
}

// TestSuspectAtEnd: what the test cannot confirm at the end of a series
// is a suspected step, at its first point: a 50% drop in the last 3 of 20
// points, or in the last 6 of 12; and a flat series is rarely suspected.
func TestSuspectAtEnd(t *testing.T) {
	for seed := range uint64(20) {
		for _, tc := range []struct{ n, at int }{{20, 17}, {12, 6}, {8, 5}} {
			xs := noisy(seed, tc.n, 0.02, -0.5, tc.at)
			c, ok := Suspect(xs, 0, Options{})
			if !ok || c.Index != tc.at || math.Abs(c.Delta+0.5) > 0.05 {
				t.Errorf("seed %d, %d points, drop at %d: suspect %+v, %v", seed, tc.n, tc.at, c, ok)
			}
		}
	}
	// Only the points after from count: a step before it is not suspected.
	if c, ok := Suspect(noisy(1, 20, 0.02, -0.5, 10), 10, Options{}); ok {
		t.Errorf("suspect %+v after the confirmed change", c)
	}
	suspects := 0
	const runs = 1000
	for seed := range uint64(runs) {
		if _, ok := Suspect(noisy(seed, 20, 0.02, 0, -1), 0, Options{}); ok {
			suspects++
		}
	}
	t.Logf("flat 20-point series suspected: %d of %d", suspects, runs)
	if suspects > runs/50 {
		t.Errorf("flat series suspected %d of %d times, want at most 2%%", suspects, runs)
	}
}

// quadraticBest is the split search as it was before issue 37: every
// sum of distances summed afresh, O(n²). The O(n log n) search must give
// the same split and statistic.
func quadraticBest(seg []float64, minSize int) (tau int, q float64) {
	n := len(seg)
	if n < 2*minSize {
		return -1, 0
	}
	var left, cross, right float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			right += math.Abs(seg[i] - seg[j])
		}
	}
	tau, q = -1, math.Inf(-1)
	for t := 1; t < n; t++ {
		x := seg[t-1]
		var toLeft, toRight float64
		for i := 0; i < t-1; i++ {
			toLeft += math.Abs(x - seg[i])
		}
		for j := t; j < n; j++ {
			toRight += math.Abs(x - seg[j])
		}
		left += toLeft
		cross += toRight - toLeft
		right -= toRight
		m, k := float64(t), float64(n-t)
		if t < minSize || n-t < minSize {
			continue
		}
		e := 2*cross/(m*k) - left/(m*(m-1)/2) - right/(k*(k-1)/2)
		if v := m * k / (m + k) * e; v > q {
			tau, q = t, v
		}
	}
	return tau, q
}

// TestBestMatchesQuadratic: the ranked split search finds the split and
// statistic of the quadratic one, on noisy series, steps, ties (rounded
// values, a constant run) and shuffles of one segment.
func TestBestMatchesQuadratic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var cases [][]float64
	for seed := range uint64(30) {
		n := 6 + int(seed)*13
		cases = append(cases, noisy(seed, n, 0.02, 0.08, n/3), noisy(seed, n, 0.10, 0, -1))
		tied := noisy(seed, n, 0.05, 0.05, n/2)
		for i := range tied {
			tied[i] = math.Round(tied[i])
		}
		cases = append(cases, tied)
	}
	cases = append(cases, []float64{5, 5, 5, 5, 5, 5, 5, 5}, []float64{1, 2, 3, 3, 2, 1, 9, 9, 9})
	for i, seg := range cases {
		e, ranks := newEnergy(seg)
		for shuffle := range 5 {
			perm := make([]float64, len(seg))
			for j, r := range ranks {
				perm[j] = e.sorted[r]
			}
			wt, wq := quadraticBest(perm, DefaultMinSize)
			gt, gq := e.best(ranks, DefaultMinSize)
			if gt != wt || math.Abs(gq-wq) > 1e-9*math.Max(1, math.Abs(wq)) {
				t.Fatalf("case %d (n=%d), shuffle %d: split %d Q %.12g, the quadratic search %d Q %.12g", i, len(seg), shuffle, gt, gq, wt, wq)
			}
			rng.Shuffle(len(ranks), func(a, b int) { ranks[a], ranks[b] = ranks[b], ranks[a] })
		}
	}
}

// BenchmarkDetect is the detection of one series of n points (2% noise)
// with an 8% step half way: the full permutation test of 1999 shuffles.
func BenchmarkDetect(b *testing.B) {
	for _, n := range []int{365, 730} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			xs := noisy(1, n, 0.02, 0.08, n/2)
			for range b.N {
				if cs := Detect(xs, Options{}); len(cs) != 1 {
					b.Fatalf("changes %+v, want the one step", cs)
				}
			}
		})
	}
}
