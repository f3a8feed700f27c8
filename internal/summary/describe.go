package summary

import (
	"math"

	"github.com/montanaflynn/stats"
)

// The descriptive statistics below are github.com/montanaflynn/stats',
// pinned at v0.7.1: headspace computes no percentile, mean or standard
// deviation of its own. Each returns NaN where the statistic is
// undefined (no values; a percentile out of (0, 100]; a standard
// deviation of fewer than two values) rather than an error: a caller
// that must print something prints NaN or its own placeholder.

// Percentile is the p-th percentile of xs (0 < p ≤ 100), by v0.7.1's
// nearest-rank rule with the mean of two neighbours where p·n/100 falls
// between ranks (v0.8 changed the rule, hence the pin). xs is not
// changed.
func Percentile(xs []float64, p float64) float64 {
	return nan(stats.Percentile(xs, p))
}

// Mean is the arithmetic mean of xs.
func Mean(xs []float64) float64 { return nan(stats.Mean(xs)) }

// GeometricMean is the geometric mean of xs, the centre of ratios.
func GeometricMean(xs []float64) float64 { return nan(stats.GeometricMean(xs)) }

// StdDev is the sample standard deviation of xs (n−1 in the
// denominator).
func StdDev(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	return nan(stats.StandardDeviationSample(xs))
}

// Max is the largest of xs.
func Max(xs []float64) float64 { return nan(stats.Max(xs)) }

// Min is the smallest of xs.
func Min(xs []float64) float64 { return nan(stats.Min(xs)) }

func nan(v float64, err error) float64 {
	if err != nil {
		return math.NaN()
	}
	return v
}
