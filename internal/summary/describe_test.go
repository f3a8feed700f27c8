package summary

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMedianOfWholeNumbers: for whole numbers (nanoseconds, counts)
// benchmath's median is exactly the mean of the middle two that
// montanaflynn/stats and the hand-written medians it replaced compute,
// so step-time P50s and the like did not change when they moved here.
func TestMedianOfWholeNumbers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 200; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(r.Int64N(1 << 40))
		}
		v := slices.Sorted(slices.Values(xs))
		want := v[n/2]
		if n%2 == 0 {
			want = (v[n/2-1] + v[n/2]) / 2
		}
		if got := Median(xs); got != want {
			t.Fatalf("n %d: Median = %v, the mean of the middle two %v", n, got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	xs := []float64{4, 1, 3, 2, 10}
	nan := math.NaN()
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		// v0.7.1's rule: index p·n/100; whole → that rank, else the mean
		// of the rank below and the next.
		{"p50 of 5", Percentile(xs, 50), 2.5}, // 2.5 → mean of ranks 2 and 3
		{"p90 of 5", Percentile(xs, 90), 7},   // 4.5 → mean of 4 and 10
		{"p40 of 5", Percentile(xs, 40), 2},   // 2 → rank 2
		{"p0 is out of range", Percentile(xs, 0), nan},
		{"p of none", Percentile(nil, 50), nan},
		{"mean", Mean(xs), 4},
		{"mean of none", Mean(nil), nan},
		{"geometric mean", GeometricMean([]float64{1, 4, 16}), 4},
		{"sample sd", StdDev([]float64{2, 4, 4, 4, 5, 5, 7, 9}), math.Sqrt(32.0 / 7)},
		{"sd of one", StdDev([]float64{3}), nan},
		{"max", Max(xs), 10},
		{"min", Min(xs), 1},
	} {
		if !(tc.got == tc.want || math.IsNaN(tc.got) && math.IsNaN(tc.want) || math.Abs(tc.got-tc.want) < 1e-12*math.Abs(tc.want)) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if !slices.Equal(xs, []float64{4, 1, 3, 2, 10}) {
		t.Errorf("xs changed to %v", xs)
	}
}
