// Package changepoint finds the points where a series of measurements
// over commits shifts: E-Divisive means with a permutation test
// (Matteson and James, "A Nonparametric Approach for Multiple Change
// Point Analysis of Multivariate Data", JASA 2014), the method MongoDB
// runs on its nightly performance series and Hunter / Apache Otava
// package for others (Daly et al., ICPE 2020; Fleming et al., ICPE 2023).
//
// # The method
//
// For a segment x[a:b] and every split τ leaving at least MinSize points
// on each side, the energy statistic
//
//	Q(τ) = m·k/(m+k) · ( 2/(m·k)·Σ|xᵢ−yⱼ| − Σ_{i<j}|xᵢ−xⱼ|/C(m,2) − Σ_{i<j}|yᵢ−yⱼ|/C(k,2) )
//
// compares the m points left of τ with the k points right of it: it is
// near zero when both come from one distribution and grows with the
// shift, whatever the distribution (no normality assumed, robust to the
// long right tail of timings). The best split is tested by permutation:
// the segment is shuffled Permutations times and the split's Q is
// significant when fewer than Alpha of the shuffles reach it. A
// significant split is kept and both halves are searched again
// (bisection), until no segment has one.
//
// Each change is attributed to the first point of its new segment: the
// first commit that shows it. Its size is the relative change between the
// medians of the segments on either side (package summary's median).
//
// Why this method: it needs no model of the noise, no window to tune and
// no threshold in percent; it finds several changes in one series; and
// it is the published method that the anchors of this feature run on
// nightly series.
//
// # Its minimum
//
// Its weak spot is short series, and steps near the end of one. However
// large a step, a shuffle puts the same points on either side of its
// split (or swaps the sides) with probability 2/C(n,k), k points on the
// short side of n: that is the smallest p-value the test can give
// (Floor), so a change is confirmed only where Floor(n, k) < Alpha; the
// test's estimate is never taken below it. At
// the default Alpha 0.001 a step half way needs MinPoints = 14 points (7 a
// side; 13 cannot reach it), a step in the last 4 points needs 17, in the
// last 3 24, in the last 2 64. Near that floor the 1999 shuffles still
// miss it often (at 14 points about two times in three); a step half way
// through 20 points is found nearly always.
//
// # Its cost
//
// A series with a change runs the full test: 1999 shuffles, each a split
// search of O(n log n) (type energy), so O(n log n) a change; a flat
// series stops after a few shuffles. The same shuffles are drawn as
// before the search was made near-linear, so the same series give the
// same change points.
//
// Suspect covers what the test cannot yet confirm: the last points of a
// series all beyond every point before them (since its last change),
// which no shuffle test can call significant until more runs come, is
// reported as a suspected step at the end of the series.
package changepoint

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/headspace-bench/headspace/internal/summary"
)

// Defaults.
const (
	// DefaultAlpha is the permutation test's significance level: 0.001.
	// A page holds hundreds of series per machine; at 0.01 one flat
	// series in a hundred would show a change.
	DefaultAlpha = 0.001
	// DefaultPermutations is how many shuffles each test draws: 1999,
	// enough for a p-value of 1/2000 = 0.0005. A test stops as soon as
	// its split can no longer be significant, so a flat series costs a
	// few shuffles.
	DefaultPermutations = 1999
	// DefaultMinSize is the fewest points on either side of a change: 3.
	DefaultMinSize = 3
	// DefaultSuspectAlpha is Suspect's level: the chance that the last
	// points of a flat series all land beyond the others, 0.05. A
	// suspected step is a question for the next nights, not a finding.
	DefaultSuspectAlpha = 0.05
	// SuspectSpreads is how many spreads between runs (1.4826 × the
	// median absolute deviation of the points before it) a suspected
	// step must exceed: 3, as the gate's --history.
	SuspectSpreads = 3
)

// Options configure Detect. The zero value means the defaults.
type Options struct {
	Alpha        float64 // significance level of each split, in (0, 1)
	Permutations int     // shuffles per test
	MinSize      int     // fewest points per segment, at least 2
	Seed         uint64  // the shuffles' seed: the same series gives the same changes
	SuspectAlpha float64 // Suspect's level, in (0, 1)
}

func (o Options) withDefaults() Options {
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = DefaultAlpha
	}
	if o.Permutations <= 0 {
		o.Permutations = DefaultPermutations
	}
	if o.MinSize < 2 {
		o.MinSize = DefaultMinSize
	}
	if o.SuspectAlpha <= 0 || o.SuspectAlpha >= 1 {
		o.SuspectAlpha = DefaultSuspectAlpha
	}
	return o
}

// Floor is the smallest p-value the permutation test can give a split
// with k of n points on one side: 2/C(n, k) (the shuffles that put the
// same points on the same sides, or swap the sides, reach the same
// statistic), never below 1/(Permutations+1) of the default test. 1 when
// there is no such split.
func Floor(n, k int) float64 {
	if k <= 0 || k >= n {
		return 1
	}
	c := 1.0 // C(n, k), in floating point: it only meets small thresholds
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return math.Max(math.Min(1, 2/c), 1/float64(DefaultPermutations+1))
}

// MinPoints is the shortest series in which Detect can confirm a change
// at all, with opt: the fewest points whose even split has a Floor below
// Alpha. 14 with the defaults.
func MinPoints(opt Options) int {
	opt = opt.withDefaults()
	for n := 2 * opt.MinSize; ; n++ {
		if Floor(n, n/2) < opt.Alpha {
			return n
		}
		if n > 1000 {
			return n
		}
	}
}

// Change is one detected change point.
type Change struct {
	// Index is the first point of the new segment: the series' first
	// commit that shows the change.
	Index int
	// Before and After are the medians of the segments on either side.
	Before, After float64
	// Delta is After/Before - 1, the size of the change (0.08 for +8%).
	Delta float64
	// P is the permutation test's p-value for the split.
	P float64
}

// Detect returns the change points of xs in order of index. NaN values
// must be removed first. A series shorter than 2·MinSize has none.
func Detect(xs []float64, opt Options) []Change {
	opt = opt.withDefaults()
	rng := rand.New(rand.NewPCG(opt.Seed, 0x6564697669736976))
	type split struct {
		index int
		p     float64
	}
	var found []split
	var search func(a, b int)
	search = func(a, b int) {
		if b-a < 2*opt.MinSize {
			return
		}
		seg := xs[a:b]
		e, ranks := newEnergy(seg)
		tau, q := e.best(ranks, opt.MinSize)
		if tau < 0 {
			return
		}
		// The shuffles estimate p; it is never below the split's Floor,
		// which a lucky draw could otherwise undercut.
		p := math.Max(permutationP(e, ranks, q, opt, rng), Floor(len(seg), tau))
		if p >= opt.Alpha {
			return
		}
		found = append(found, split{a + tau, p})
		search(a, a+tau)
		search(a+tau, b)
	}
	search(0, len(xs))
	slices.SortFunc(found, func(x, y split) int { return x.index - y.index })

	var out []Change
	bounds := []int{0}
	for _, s := range found {
		bounds = append(bounds, s.index)
	}
	bounds = append(bounds, len(xs))
	for i, s := range found {
		// summary.Median sorts what it is given (benchmath.NewSample):
		// give it copies.
		before := summary.Median(slices.Clone(xs[bounds[i]:bounds[i+1]]))
		after := summary.Median(slices.Clone(xs[bounds[i+1]:bounds[i+2]]))
		d := math.NaN()
		if before != 0 {
			d = after/before - 1
		}
		out = append(out, Change{Index: s.index, Before: before, After: after, Delta: d, P: s.p})
	}
	return out
}

// energy finds the best split of one segment and of its shuffles. The
// statistic needs, as the split moves one point x from the right to the
// left, x's summed distance to the points already on the left and to
// those still on the right. A shuffle holds the same values in another
// order, so the segment is sorted once: each point is a rank, the
// distance from x to every other point is known per rank (dist), the
// segment's summed pairwise distance (total) is the same for every
// order, and x's distance to the left is read from two Fenwick trees over
// the ranks (the count and the sum of the left's points below x) in
// O(log n). A split search costs O(n log n), not the O(n²) of summing
// the distances afresh, and gives the same split and statistic (up to
// the order of a floating-point sum; TestBestMatchesQuadratic): the
// permutation test of a series of a year of nights, 1999 searches, got
// about 20 times cheaper, and twice the nights cost about twice, not four
// times (results/history-year.txt).
type energy struct {
	sorted []float64 // the segment's values, ascending
	dist   []float64 // dist[r]: Σ|sorted[r] - y| over the segment
	total  float64   // Σ_{i<j}|xᵢ - xⱼ| over the segment
	cnt    []int     // Fenwick tree over ranks: how many left points
	sum    []float64 // Fenwick tree over ranks: their summed values
}

// newEnergy ranks seg: it returns the energy of its values and each
// point's rank (ties get distinct ranks: their distance is 0 either way).
func newEnergy(seg []float64) (*energy, []int) {
	n := len(seg)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(seg[a], seg[b]) })
	e := &energy{sorted: make([]float64, n), dist: make([]float64, n), cnt: make([]int, n+1), sum: make([]float64, n+1)}
	ranks := make([]int, n)
	for r, i := range order {
		e.sorted[r] = seg[i]
		ranks[i] = r
	}
	var all float64
	for _, x := range e.sorted {
		all += x
	}
	var below float64 // Σ sorted[:r]
	for r, x := range e.sorted {
		above := all - below - x
		e.dist[r] = x*float64(r) - below + above - x*float64(n-1-r)
		e.total += x*float64(r) - below
		below += x
	}
	return e, ranks
}

// best returns the split of the segment in the order ranks gives (a
// point's rank per position) with the largest energy statistic Q and
// that Q, or -1 when it is too short.
func (e *energy) best(ranks []int, minSize int) (tau int, q float64) {
	n := len(ranks)
	if n < 2*minSize {
		return -1, 0
	}
	clear(e.cnt)
	clear(e.sum)
	// Start with everything on the right: left = seg[:0].
	var left, cross, leftSum float64
	right := e.total
	tau, q = -1, math.Inf(-1)
	for t := 1; t < n; t++ {
		// Move the point at t-1 from the right to the left.
		r := ranks[t-1]
		x := e.sorted[r]
		c, s := 0, 0.0 // the left's points ranked below r: count, sum
		for i := r; i > 0; i -= i & -i {
			c += e.cnt[i]
			s += e.sum[i]
		}
		l := t - 1 // the left's size before the move
		toLeft := x*float64(c) - s + (leftSum - s) - x*float64(l-c)
		toRight := e.dist[r] - toLeft
		for i := r + 1; i <= n; i += i & -i {
			e.cnt[i]++
			e.sum[i] += x
		}
		leftSum += x
		left += toLeft
		cross += toRight - toLeft
		right -= toRight
		m, k := float64(t), float64(n-t)
		if t < minSize || n-t < minSize {
			continue
		}
		stat := 2*cross/(m*k) - left/(m*(m-1)/2) - right/(k*(k-1)/2)
		if v := m * k / (m + k) * stat; v > q {
			tau, q = t, v
		}
	}
	return tau, q
}

// permutationP is the share of shuffles of the segment of e (in the
// order ranks gives) whose best split reaches q, counting the observed
// order as one of them: (1 + hits)/(1 + R). It stops early once the
// split can no longer be significant.
func permutationP(e *energy, ranks []int, q float64, opt Options, rng *rand.Rand) float64 {
	perm := slices.Clone(ranks)
	hits := 0
	limit := opt.Alpha * float64(opt.Permutations+1)
	for r := range opt.Permutations {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		// A shuffle with the same sides has the same statistic, summed
		// in another order: count it as reaching q.
		if _, qp := e.best(perm, opt.MinSize); qp >= q-1e-9*math.Abs(q) {
			hits++
			if float64(1+hits) > limit {
				return float64(1+hits) / float64(r+2)
			}
		}
	}
	return float64(1+hits) / float64(opt.Permutations+1)
}

// Suspect looks for a step at the end of xs[from:] (from: the series'
// last change point, or 0) that Detect cannot confirm yet: the last
// points, at least 2 and leaving at least MinSize before them, that all
// lie strictly above, or all strictly below, every point before them
// (of the tails that do, the one with the widest gap to the rest). It is suspected when the chance of that in a flat series,
// 2/C(n, k) for the last k of n points, is below SuspectAlpha, and the
// step between the medians exceeds SuspectSpreads spreads between the
// points before it. The Change's Index is the first point of the step and
// P that chance; ok is false when there is none.
func Suspect(xs []float64, from int, opt Options) (c Change, ok bool) {
	opt = opt.withDefaults()
	if from < 0 || from >= len(xs) {
		return Change{}, false
	}
	seg := xs[from:]
	n := len(seg)
	k, gap := 0, 0.0
	for j := 2; j <= n-opt.MinSize; j++ {
		before, after := seg[:n-j], seg[n-j:]
		g := math.Max(slices.Min(after)-slices.Max(before), slices.Min(before)-slices.Max(after))
		if g > gap {
			k, gap = j, g
		}
	}
	if k == 0 {
		return Change{}, false
	}
	p := Floor(n, k)
	if p >= opt.SuspectAlpha {
		return Change{}, false
	}
	before, after := seg[:n-k], seg[n-k:]
	mb := summary.Median(slices.Clone(before))
	ma := summary.Median(slices.Clone(after))
	dev := make([]float64, len(before))
	for i, x := range before {
		dev[i] = math.Abs(x - mb)
	}
	if mb == 0 || math.Abs(ma-mb) <= SuspectSpreads*1.4826*summary.Median(dev) {
		return Change{}, false
	}
	return Change{Index: from + n - k, Before: mb, After: ma, Delta: ma/mb - 1, P: p}, true
}
