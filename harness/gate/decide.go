package gate

// The statistics of one row and its verdict: the U test, the
// Benjamini–Hochberg adjustment across rows, the threshold and the noise.

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

// adjust sets the Benjamini–Hochberg adjusted p-value Q of every row with
// a p-value and returns how many there are: with the m p-values sorted,
// the k-th smallest gets min over j >= k of p_(j)·m/j, capped at 1.
// Rejecting every Q < alpha then keeps the expected false discovery
// rate at or below alpha (Benjamini and Hochberg 1995; it holds under
// the positive dependence of a file's metrics, which share runs).
func adjust(rows []Row) int {
	var idx []int
	for i, r := range rows {
		if !math.IsNaN(r.P) {
			idx = append(idx, i)
		}
	}
	m := len(idx)
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(rows[a].P, rows[b].P) })
	q := 1.0
	for k := m - 1; k >= 0; k-- {
		i := idx[k]
		q = math.Min(q, rows[i].P*float64(m)/float64(k+1))
		rows[i].Q = q
	}
	return m
}

// test fills in the comparison of a row present on both sides: its
// p-value and delta, or TooFewSamples. decide gives the verdict once
// every row's p-value is adjusted.
func test(row *Row, old, new *benchmath.Sample, opt Options) {
	if old == nil || new == nil {
		row.Verdict = TooFewSamples
		row.Note = fmt.Sprintf("old has %d, new has %d finite values", row.Old.N, row.New.N)
		return
	}
	n1, n2 := len(old.Values), len(new.Values)
	if p := summary.MinP(n1, n2); p >= opt.Alpha {
		row.Delta = delta(row.Old.Center, row.New.Center)
		row.Verdict = TooFewSamples
		row.Note = fmt.Sprintf("old has %d, new has %d; the smallest p-value %d+%d samples can give is %.3g, not below alpha %g: "+
			"the U test needs at least %d samples per side", n1, n2, n1, n2, p, opt.Alpha, MinSamples(opt.Alpha))
		return
	}
	cmp := summary.UTest(old, new)
	row.P = cmp.P
	row.Warnings = appendWarnings(row.Warnings, cmp.Warnings)
	row.Delta = delta(row.Old.Center, row.New.Center)
}

// decide gives a tested row its verdict from its adjusted p-value, the
// threshold and the between-run noise.
func decide(row *Row, opt Options) {
	if !(row.Q < opt.Alpha) {
		row.Verdict = NoChange
		if row.P < opt.Alpha {
			row.Note = fmt.Sprintf("p=%.3g, but not significant once adjusted for the metrics tested (q=%.3g)", row.P, row.Q)
		}
		return
	}
	if math.Abs(row.Delta) <= opt.Threshold {
		row.Verdict = NoChange
		row.Note = fmt.Sprintf("significant, but within the %s threshold", pct(opt.Threshold))
		return
	}
	if row.Noise > 0 && math.Abs(row.Delta) <= row.Noise {
		row.Verdict = NoChange
		row.Note = fmt.Sprintf("significant, but within the history's spread between runs (%g × spread = %s)", opt.SpreadZ, pct(row.Noise))
		return
	}
	switch {
	case row.Better == resultfile.NoDirection:
		row.Verdict = UnknownDirection
	case (row.Delta > 0) == (row.Better == resultfile.HigherIsBetter):
		row.Verdict = Improvement
	default:
		row.Verdict = Regression
	}
}

// delta is new/old - 1, with ±Inf when old is 0 and new is not.
func delta(old, new float64) float64 {
	switch {
	case old == new:
		return 0
	case old == 0:
		return math.Copysign(math.Inf(1), new)
	}
	return new/old - 1
}

// MinSamples is the fewest samples per side with which the
// Mann–Whitney U test can find a difference significant at alpha (p <
// alpha): 4 at 0.05 (the smallest p 4+4 samples can give is 2/70 ≈
// 0.029, while 3+3 give at best 0.1), 5 at 0.01. With unequal sides fewer
// can do on one side if the other has more; Compare checks the actual
// sizes.
func MinSamples(alpha float64) int {
	n := 1
	for ; n < 1000 && summary.MinP(n, n) >= alpha; n++ {
	}
	return n
}

func appendWarnings(dst []string, ws []error) []string {
	for _, w := range ws {
		dst = append(dst, w.Error())
	}
	return dst
}
