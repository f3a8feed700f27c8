// Package summary is how headspace summarises repeated measurements: the
// median with its 95% confidence interval, computed by
// golang.org/x/perf/benchmath exactly as benchstat and the regression gate
// compute them, so a report, a table and the gate never disagree about a
// centre. Percentiles of step times, a different question (tail stalls),
// are package train's.
package summary

import (
	"fmt"
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

// Median is Of(xs).Median.
func Median(xs []float64) float64 { return Of(xs).Median }

// HalfWidth is the larger distance from the median to an end of the
// interval, as a fraction of the median (benchstat's "± x%"); +Inf when
// there is no interval.
func (s Summary) HalfWidth() float64 {
	if s.Median == 0 || math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return math.Inf(1)
	}
	return math.Max(s.Median-s.Lo, s.Hi-s.Median) / math.Abs(s.Median)
}

// Format writes the median with prec decimals and the interval's half
// width as benchstat does: "3.448 ± 1%", or "3.448 ± ∞" when the sample is
// too small.
func (s Summary) Format(prec int) string {
	if s.N == 0 {
		return "-"
	}
	hw := s.HalfWidth()
	if math.IsInf(hw, 1) {
		return fmt.Sprintf("%.*f ± ∞", prec, s.Median)
	}
	return fmt.Sprintf("%.*f ± %.0f%%", prec, s.Median, 100*hw)
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
