// Package summary is headspace's one path for statistics, so that a
// report, a table and the gate never disagree about a number:
//
//   - medians with their 95% confidence intervals, and the Mann–Whitney
//     U test, by golang.org/x/perf/benchmath, exactly as benchstat
//     computes them (Of, Median, Interval, UTest);
//   - percentiles, means and standard deviations by
//     github.com/montanaflynn/stats v0.7.1 (Percentile, Mean, StdDev);
//   - the percentile bootstrap interval of a median (Bootstrap), for
//     paired values, which neither library offers.
//
// No other package computes a median, percentile, mean or interval of
// its own. One streaming estimate stands apart: the pipeline's stage
// latency histogram (package pipeline) bins values as they come, with no
// allocation on the hot path, and reads its quantiles from the bins.
package summary

import (
	"math"
	"time"

	"golang.org/x/perf/benchmath"
)

// Confidence is the confidence level of every interval headspace reports.
const Confidence = 0.95

// Summary is a sample's median and its confidence interval. Lo and Hi are
// ±Inf when the sample is too small for an interval at Confidence (fewer
// than 6 values), as benchstat shows "± ∞".
type Summary struct {
	N              int
	Median, Lo, Hi float64
}

// Of summarises xs; the zero Summary, with Median NaN, when xs is empty.
func Of(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	s := Interval(benchmath.NewSample(xs, &benchmath.DefaultThresholds))
	return Summary{N: len(xs), Median: s.Center, Lo: s.Lo, Hi: s.Hi}
}

// Interval is benchmath's summary of s at Confidence, warnings included:
// the one place headspace asks benchmath for a centre and an interval
// (the regression gate builds its samples with its own thresholds).
func Interval(s *benchmath.Sample) benchmath.Summary {
	return benchmath.AssumeNothing.Summary(s, Confidence)
}

// Median is Of(xs).Median: the middle value, or for an even count
// benchmath's interpolation between the middle two (a + (b−a)/2, which
// can differ from (a+b)/2 in the last bit). It sorts xs in place.
func Median(xs []float64) float64 { return Of(xs).Median }

// UTest is benchmath's two-sided Mann–Whitney U test of old against new
// (AssumeNothing: no assumption about the distributions), with its
// warnings; the samples carry the significance level in their
// Thresholds.
func UTest(old, new *benchmath.Sample) benchmath.Comparison {
	return benchmath.AssumeNothing.Compare(old, new)
}

// MinP is the smallest two-sided p-value the U test can give for
// samples of n1 and n2 values: both samples entirely apart,
// 2/C(n1+n2, n1). Ties only raise it.
func MinP(n1, n2 int) float64 {
	// C(n1+n2, k) by the multiplicative formula: every partial product
	// is a binomial coefficient, so it is exact while below 2^53, and
	// beyond that MinP is far below any sensible alpha anyway.
	k := min(n1, n2)
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n1+n2-k+i) / float64(i)
	}
	return math.Min(1, 2/c)
}

// HalfWidth is the larger distance from the median to an end of the
// interval, as a fraction of the median (benchstat's "± x%"); +Inf when
// there is no interval.
func (s Summary) HalfWidth() float64 {
	if s.Median == 0 || math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return math.Inf(1)
	}
	return math.Max(s.Median-s.Lo, s.Hi-s.Median) / math.Abs(s.Median)
}

// MedianDuration is the median of ds (Median), rounded to the nanosecond;
// 0 when ds is empty.
func MedianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(math.Round(Median(xs)))
}
