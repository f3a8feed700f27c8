package summary

import (
	"math"
	"testing"
	"time"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		xs      []float64
		median  float64
		percent float64 // the interval's half width, in percent of the median
	}{
		{"odd", []float64{3, 1, 2}, 2, math.Inf(1)},
		{"even", []float64{4, 1, 3, 2}, 2.5, math.Inf(1)},
		// Six values give a finite 95% interval: the order statistics
		// 1 and 6 bound the median, here 1.0 and 1.2.
		{"six", []float64{1.0, 1.05, 1.1, 1.1, 1.15, 1.2}, 1.1, 9},
		{"one", []float64{7}, 7, math.Inf(1)},
	} {
		s := Of(tc.xs)
		if s.Median != tc.median || s.N != len(tc.xs) {
			t.Errorf("%s: median %v (n %d), want %v", tc.name, s.Median, s.N, tc.median)
		}
		if got := math.Round(100 * s.HalfWidth()); got != tc.percent {
			t.Errorf("%s: half width %v%%, want %v%%", tc.name, got, tc.percent)
		}
		if s.Lo > s.Median || s.Hi < s.Median {
			t.Errorf("%s: interval [%v, %v] does not hold the median %v", tc.name, s.Lo, s.Hi, s.Median)
		}
	}
	if e := Of(nil); !math.IsNaN(e.Median) || e.N != 0 {
		t.Errorf("empty: %+v", e)
	}
	if Median([]float64{5, 1, 9}) != 5 {
		t.Error("Median")
	}
}

func TestMedianDuration(t *testing.T) {
	for _, tc := range []struct {
		ds   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{7}, 7},
		{[]time.Duration{5, 1, 3}, 3},
		{[]time.Duration{4, 1, 3, 2}, 3}, // even: the mean of the middle two, rounded
	} {
		if got := MedianDuration(tc.ds); got != tc.want {
			t.Errorf("MedianDuration(%v) = %v, want %v", tc.ds, got, tc.want)
		}
	}
}
