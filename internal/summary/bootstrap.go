package summary

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/montanaflynn/stats"
)

// Bootstrap is the percentile bootstrap interval at level of the median
// of xs: resamples times, draw len(xs) values from xs with replacement
// and take their median; the interval is the (1-level)/2 and
// 1-(1-level)/2 percentiles of those medians (Percentile), or their
// extremes where a tail is thinner than one resample. It is written
// here because benchmath's intervals are for one sample's median by
// order statistics, not for a statistic of paired values: the
// regression gate's paired rounds, whose unit of replication is the
// round, give it one ratio per round. NaN, NaN for no values.
func Bootstrap(xs []float64, level float64, resamples int, rng *rand.Rand) (lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	// A resample's median depends only on how often each value was
	// drawn: with xs sorted, count the draws per index and walk the
	// counts to the middle order statistics (no sort per resample).
	sorted := slices.Sorted(slices.Values(xs))
	n := len(sorted)
	counts := make([]int, n)
	meds := make([]float64, resamples)
	for i := range meds {
		clear(counts)
		for range n {
			counts[rng.IntN(n)]++
		}
		meds[i] = (orderStat(sorted, counts, (n-1)/2) + orderStat(sorted, counts, n/2)) / 2
	}
	slices.Sort(meds) // once: the percentiles' own sorts then find it sorted
	tail := 100 * (1 - level) / 2
	var err1, err2 error
	lo, err1 = stats.Percentile(meds, tail)
	hi, err2 = stats.Percentile(meds, 100-tail)
	if err1 != nil || err2 != nil {
		// A tail thinner than one resample: the extremes.
		lo, hi = Min(meds), Max(meds)
	}
	return lo, hi
}

// orderStat is the k-th smallest (from 0) of a resample of sorted that
// drew sorted[i] counts[i] times.
func orderStat(sorted []float64, counts []int, k int) float64 {
	for i, c := range counts {
		if k < c {
			return sorted[i]
		}
		k -= c
	}
	return sorted[len(sorted)-1]
}
