package summary

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBootstrap(t *testing.T) {
	xs := []float64{1.01, 0.99, 1.02, 1.0, 0.98, 1.03}
	lo1, hi1 := Bootstrap(xs, 0.95, 2000, rand.New(rand.NewPCG(1, 2)))
	lo2, hi2 := Bootstrap(xs, 0.95, 2000, rand.New(rand.NewPCG(1, 2)))
	if lo1 != lo2 || hi1 != hi2 {
		t.Error("the same seed gave different intervals")
	}
	if !(lo1 >= 0.98 && lo1 <= 1.0 && hi1 >= 1.0 && hi1 <= 1.03) {
		t.Errorf("interval [%v, %v] of %v", lo1, hi1, xs)
	}
	if lo, hi := Bootstrap(xs, 0.99999, 10, rand.New(rand.NewPCG(1, 2))); math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
		t.Errorf("a tail thinner than one resample: [%v, %v]; want the extremes", lo, hi)
	}
	if lo, _ := Bootstrap(nil, 0.95, 10, rand.New(rand.NewPCG(1, 2))); !math.IsNaN(lo) {
		t.Errorf("no values: %v, want NaN", lo)
	}
}

func TestMinP(t *testing.T) {
	// MinP agrees with benchmath's table of the U test's smallest p-value.
	for n, want := range []float64{1: 1, 2: 1.0 / 3, 3: 0.1, 4: 2.0 / 70, 5: 2.0 / 252, 9: 4.113533525298231e-05} {
		if want == 0 {
			continue
		}
		if got := MinP(n, n); math.Abs(got-want) > 1e-9*want {
			t.Errorf("MinP(%d, %d) = %v, want %v", n, n, got, want)
		}
	}
	if got := MinP(3, 4); math.Abs(got-2.0/35) > 1e-12 {
		t.Errorf("MinP(3, 4) = %v", got)
	}
}
