package peer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchproc"

	"github.com/headspace-bench/headspace/internal/summary"
)

// Target is a goal for one of our implementations: samples/s at least Min
// times the peer's at the same worker count.
type Target struct {
	Impl string
	Min  float64
}

// Targets are the project's goals: fast ≥ 10× torch's samples/s, naive ≥ 2×.
var Targets = []Target{{Impl: Fast, Min: 10}, {Impl: Naive, Min: 2}}

// TargetFor returns the target of impl, if it has one.
func TargetFor(impl string) (Target, bool) {
	for _, t := range Targets {
		if t.Impl == impl {
			return t, true
		}
	}
	return Target{}, false
}

// Row is one implementation at one worker count: the medians of its runs
// and, for ours, the ratios to the peer's medians at the same worker count.
type Row struct {
	Workers       int
	Impl          string
	Runs          int
	SamplesPerSec float64       // median
	TTFB          time.Duration // median
	CPU           time.Duration // median
	// Speedup is SamplesPerSec over the peer's (ours/torch); 0 for the
	// peer's own row or when the peer was not measured.
	Speedup float64
	// TTFBRatio is TTFB over the peer's (ours/torch; below 1 is sooner);
	// 0 where Speedup is.
	TTFBRatio float64
}

// Met says whether the row has a target and meets it: ok is false when
// the implementation has no target or the peer was not measured.
func (r Row) Met() (met, ok bool) {
	t, has := TargetFor(r.Impl)
	if !has || r.Speedup == 0 {
		return false, false
	}
	return r.Speedup >= t.Min, true
}

// Summarize returns one row per worker count and implementation, ordered
// by worker count, then as in Impls (other implementations after them, by
// name). The groups and their order are benchproc's: the measurements'
// benchmark results (Measurement.Benchmark) projected on
// "/workers@num,/impl@(naive fast torch …)", as benchstat would group them.
func Summarize(ms []Measurement) []Row {
	proj := projection(ms)
	groups := map[benchproc.Key][]Measurement{}
	var keys []benchproc.Key
	for _, m := range ms {
		k := proj.Project(m.Benchmark())
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], m)
	}
	benchproc.SortKeys(keys)
	rows := make([]Row, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		rows = append(rows, Row{
			Workers:       g[0].Workers,
			Impl:          g[0].Impl,
			Runs:          len(g),
			SamplesPerSec: median(g, func(m Measurement) float64 { return m.SamplesPerSec }),
			TTFB:          time.Duration(median(g, func(m Measurement) float64 { return float64(m.TTFB) })),
			CPU:           time.Duration(median(g, func(m Measurement) float64 { return float64(m.CPU) })),
		})
	}
	divideByTorch(rows)
	return rows
}

// projection is Summarize's benchproc projection of ms:
// "/workers@num,/impl@(…)", the implementations in Impls' order, then
// the others in ms by name.
func projection(ms []Measurement) *benchproc.Projection {
	impls := slices.Clone(Impls)
	for _, m := range ms {
		if !slices.Contains(impls, m.Impl) {
			impls = append(impls, m.Impl)
		}
	}
	slices.Sort(impls[len(Impls):])
	order := make([]string, len(impls))
	for i, impl := range impls {
		order[i] = strconv.Quote(impl)
	}
	var p benchproc.ProjectionParser
	filter, err := benchproc.NewFilter("*")
	if err != nil {
		panic(err)
	}
	proj, err := p.Parse("/workers@num,/impl@("+strings.Join(order, " ")+")", filter)
	if err != nil {
		panic(fmt.Sprintf("peer: Summarize: %v", err)) // the impls are quoted
	}
	return proj
}

// divideByTorch sets each of our rows' Speedup and TTFBRatio to the torch
// row's at the same worker count, where there is one.
func divideByTorch(rows []Row) {
	for i, r := range rows {
		if r.Impl == Torch {
			continue
		}
		j := slices.IndexFunc(rows, func(t Row) bool { return t.Impl == Torch && t.Workers == r.Workers })
		if j < 0 {
			continue
		}
		t := rows[j]
		if t.SamplesPerSec > 0 {
			rows[i].Speedup = r.SamplesPerSec / t.SamplesPerSec
		}
		if t.TTFB > 0 && rows[i].Speedup > 0 {
			rows[i].TTFBRatio = float64(r.TTFB) / float64(t.TTFB)
		}
	}
}

// median of f over ms (not empty), by package summary.
func median(ms []Measurement, f func(Measurement) float64) float64 {
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = f(m)
	}
	return summary.Median(v)
}
