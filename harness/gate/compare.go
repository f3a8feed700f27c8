package gate

// Compare and CompareFiles: reading both sides, grouping the results by
// benchmark and unit, and the configuration lines that differ.

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/disturb"
	"github.com/headspace-bench/headspace/internal/summary"
)

// CompareFiles compares the results files at oldPath and newPath with
// Compare, reading them one result at a time so that memory grows with
// the distinct benchmarks and their values, not with the files. A unit
// headspace knows (resultfile.KnownDirection) takes its direction from
// headspace's table; a file whose Unit line declares the other direction
// for it is refused, naming the file and the unit. A unit headspace does
// not know takes the files' direction, and the files must agree on it.
// An error means an input could not be read, has syntax errors or
// contradicts the unit table; the comparison was not made.
func CompareFiles(oldPath, newPath string, opt Options) (Report, error) {
	var acc accumulator
	var metas [2]benchfmt.UnitMetadataMap
	for s, path := range []string{oldPath, newPath} {
		m, err := resultfile.Scan(path, func(r *benchfmt.Result) error {
			acc.add(s, r)
			return nil
		})
		if err != nil {
			return Report{}, err
		}
		if err := CheckUnits(path, m); err != nil {
			return Report{}, err
		}
		metas[s] = m
	}
	meta := benchfmt.UnitMetadataMap{}
	for _, m := range []benchfmt.UnitMetadataMap{opt.Units, metas[0], metas[1]} {
		for k, v := range m {
			if prev, ok := meta[k]; ok && k.Key == "better" && prev.Value != v.Value {
				return Report{}, fmt.Errorf("%s and %s declare different directions for unit %s (better=%s, better=%s): not comparable",
					oldPath, newPath, k.Unit, prev.Value, v.Value)
			}
			meta[k] = v
		}
	}
	opt.Units = meta
	rep := acc.report(opt)
	rep.OldName, rep.NewName = oldPath, newPath
	return rep, nil
}

// CheckUnits returns an error naming the file and the unit when meta,
// the Unit lines of the file at path, declares a direction for a unit
// that contradicts headspace's unit table (resultfile.KnownDirection), such
// as "Unit steps/s better=lower".
func CheckUnits(path string, meta benchfmt.UnitMetadataMap) error {
	var units []string
	for k := range meta {
		if k.Key == "better" {
			units = append(units, k.Unit)
		}
	}
	slices.Sort(units)
	for _, u := range units {
		want, ok := resultfile.KnownDirection(u)
		if !ok {
			continue
		}
		if got := resultfile.Direction(meta.GetBetter(u)); got != want {
			return fmt.Errorf("%s: its Unit line declares %s better=%s, but %s is %s-is-better in headspace's unit table: refusing the file",
				path, u, meta.Get(u, "better").Value, u, want)
		}
	}
	return nil
}

// Compare compares old and new results as the package documentation
// describes: per full benchmark name and tidied unit, medians with 95%
// intervals and the Mann–Whitney U test, its p-values adjusted by
// Benjamini–Hochberg; a Regression where the adjusted p-value (Q) is
// below Alpha and the median moved the wrong way beyond Threshold (and
// beyond SpreadZ times the metric's Options.Spread). Configurations do
// not affect verdicts: keys other than commit whose values differ are
// listed in Report.ConfigDiffs, those of MachineKeys in MachineDiffs, for
// Evidence to judge. Non-finite values are left out.
func Compare(old, new []*benchfmt.Result, opt Options) Report {
	var acc accumulator
	for s, rs := range [2][]*benchfmt.Result{old, new} {
		for _, r := range rs {
			acc.add(s, r)
		}
	}
	return acc.report(opt)
}

// group is one benchmark and unit's values on each side.
type group struct {
	vals    [2][]float64
	present [2]bool
	dropped int
}

// accumulator gathers results as they stream past: the values of each
// metric, each side's result count, benchmark names and configuration
// values. It keeps no *benchfmt.Result.
//
// A metric is a benchproc key of the projection ".fullname" with its
// unit, as benchstat groups rows: the full name (sub-benchmark keys and
// GOMAXPROCS suffix included) and the tidied unit. Its benchmark is the
// key of ".fullname" alone. benchproc interns both, so memory grows with
// the distinct benchmarks and units, not with the results.
type accumulator struct {
	metric  *benchproc.Projection // .fullname and .unit: one key per metric
	bench   *benchproc.Projection // .fullname: one key per benchmark
	name    *benchproc.Field      // bench's .fullname field
	unit    *benchproc.Field      // metric's .unit field
	groups  map[benchproc.Key]*group
	names   []benchproc.Key                   // benchmarks, in order of first appearance
	units   map[benchproc.Key][]benchproc.Key // benchmark → its metrics, in order of first appearance
	results [2]int
	benches [2]map[benchproc.Key]int    // benchmark → its results on the side
	heads   [2]map[benchproc.Key]string // benchmark → its headline unit on the side (Headline)
	config  [2]map[string]map[string]bool
	keys    []string
	scratch benchfmt.Result // r, normalized for projection
	// disturbed counts each side's runs per benchmark that stayed
	// disturbed.
	disturbed [2]map[benchproc.Key]int
}

func (a *accumulator) init() {
	var p benchproc.ProjectionParser
	metric, unit, err := p.ParseWithUnit(".fullname", nil)
	if err != nil {
		panic(err) // a constant projection
	}
	bench, err := p.Parse(".fullname", nil)
	if err != nil {
		panic(err)
	}
	a.metric, a.bench, a.name, a.unit = metric, bench, bench.Fields()[0], unit
	a.groups, a.units = map[benchproc.Key]*group{}, map[benchproc.Key][]benchproc.Key{}
	for s := range 2 {
		a.benches[s], a.heads[s], a.config[s] = map[benchproc.Key]int{}, map[benchproc.Key]string{}, map[string]map[string]bool{}
		a.disturbed[s] = map[benchproc.Key]int{}
	}
}

// normalize returns r as the gate compares it, in a.scratch: its name
// without a "Benchmark" prefix (results built by hand may carry one), its
// values tidied as benchfmt tidies them (benchfmt.Reader leaves 0 ns/op
// untidied).
func (a *accumulator) normalize(r *benchfmt.Result) *benchfmt.Result {
	n := &a.scratch
	n.Config, n.Iters = r.Config, r.Iters
	n.Name = bytes.TrimPrefix(r.Name, []byte("Benchmark"))
	n.Values = n.Values[:0]
	for _, v := range r.Values {
		n.Values = append(n.Values, resultfile.TidyValue(v))
	}
	return n
}

func (a *accumulator) add(side int, r *benchfmt.Result) {
	if a.groups == nil {
		a.init()
	}
	a.results[side]++
	r = a.normalize(r)
	bench := a.bench.Project(r)
	if a.benches[side][bench] == 0 {
		a.heads[side][bench] = Headline(r)
	}
	a.benches[side][bench]++
	for _, c := range r.Config {
		if !c.File || c.Key == "commit" || resultfile.IsSessionKey(c.Key) && c.Key != BusyKey {
			continue
		}
		vs := a.config[side][c.Key]
		if vs == nil {
			vs = map[string]bool{}
			a.config[side][c.Key] = vs
			if !slices.Contains(a.keys, c.Key) {
				a.keys = append(a.keys, c.Key)
			}
		}
		vs[string(c.Value)] = true
	}
	if isDisturbed(r) {
		a.disturbed[side][bench]++
	}
	for i, k := range a.metric.ProjectValues(r) {
		g := a.groups[k]
		if g == nil {
			g = &group{}
			a.groups[k] = g
			if a.units[bench] == nil {
				a.names = append(a.names, bench)
			}
			a.units[bench] = append(a.units[bench], k)
		}
		g.present[side] = true
		if v := r.Values[i].Value; math.IsNaN(v) || math.IsInf(v, 0) {
			g.dropped++
		} else {
			g.vals[side] = append(g.vals[side], v)
		}
	}
}

func (a *accumulator) report(opt Options) Report {
	thr := benchmath.DefaultThresholds
	thr.CompareAlpha = opt.Alpha

	rep := Report{Alpha: opt.Alpha, Threshold: opt.Threshold,
		OldResults: a.results[0], NewResults: a.results[1], OldBenchmarks: len(a.benches[0])}
	for b := range a.benches[0] {
		if a.benches[1][b] > 0 {
			rep.Covered++
		}
	}
	rep.ConfigDiffs, rep.MachineDiffs = a.configDiffs()
	rep.Busy = a.busy()
	rep.CrossMachine = opt.CrossMachine && len(rep.MachineDiffs) > 0
	for _, bench := range a.names {
		name := bench.Get(a.name)
		for _, k := range a.units[bench] {
			rep.Rows = append(rep.Rows, a.row(bench, k, name, opt, &thr))
		}
	}
	rep.Tested = adjust(rep.Rows)
	opt.SpreadZ = cmp.Or(opt.SpreadZ, DefaultSpreadZ)
	if len(opt.Spread) > 0 {
		rep.SpreadZ = opt.SpreadZ
	}
	for i := range rep.Rows {
		row := &rep.Rows[i]
		if sp, ok := opt.Spread[Metric{row.Name, row.Unit}]; ok {
			row.Noise = opt.SpreadZ * sp
			row.Spread = sp
			rep.WithSpread++
		}
		if !math.IsNaN(row.Q) {
			decide(row, opt)
			holdDisturbed(row)
		}
	}
	return rep
}

// row compares metric k of benchmark bench (named name) between the two
// sides: each side's median and interval, and the test of a metric both
// sides have (a condition is described, never tested).
func (a *accumulator) row(bench, k benchproc.Key, name string, opt Options, thr *benchmath.Thresholds) Row {
	g, unit := a.groups[k], k.Get(a.unit)
	row := Row{
		Name:     "Benchmark" + name,
		Unit:     unit,
		Better:   resultfile.TrustedDirection(unit, opt.Units),
		Delta:    math.NaN(),
		P:        math.NaN(),
		Q:        math.NaN(),
		Spread:   math.NaN(),
		Headline: a.benches[0][bench] > 0 && a.benches[1][bench] > 0 && (unit == a.heads[0][bench] || unit == a.heads[1][bench]),
	}
	for side := range 2 {
		row.Missing[side] = max(0, a.benches[side][bench]-len(g.vals[side]))
	}
	row.Disturbed = [2]int{a.disturbed[0][bench], a.disturbed[1][bench]}
	var samples [2]*benchmath.Sample
	for side, to := range [2]*Side{&row.Old, &row.New} {
		if len(g.vals[side]) == 0 {
			continue
		}
		samples[side] = benchmath.NewSample(g.vals[side], thr)
		*to = Side{N: len(g.vals[side]), Summary: summary.Interval(samples[side])}
		row.Warnings = appendWarnings(row.Warnings, to.Warnings)
	}
	if g.dropped > 0 {
		row.Warnings = append(row.Warnings, fmt.Sprintf("%d non-finite value(s) left out", g.dropped))
	}
	switch {
	case disturb.IsCondition(unit):
		row.Verdict = Condition
		if row.Old.N > 0 && row.New.N > 0 {
			row.Delta = delta(row.Old.Center, row.New.Center)
		}
	case !g.present[1]:
		row.Verdict = OnlyInOld
	case !g.present[0]:
		row.Verdict = OnlyInNew
	default:
		test(&row, samples[0], samples[1], opt)
	}
	return row
}

// configDiffs describes the file configuration keys, other than commit,
// whose sets of values differ between old and new; machine are those of
// MachineKeys that both sides set.
func (a *accumulator) configDiffs() (all, machine []string) {
	values := func(m map[string]bool) string {
		if len(m) == 0 {
			return "not set"
		}
		var vs []string
		for v := range m {
			vs = append(vs, strconv.Quote(v))
		}
		slices.Sort(vs)
		return strings.Join(vs, ", ")
	}
	for _, k := range a.keys {
		if k == BusyKey {
			continue // Report.Busy says it
		}
		o, n := values(a.config[0][k]), values(a.config[1][k])
		if o == n {
			continue
		}
		all = append(all, fmt.Sprintf("%s: old %s, new %s", k, o, n))
		if slices.Contains(MachineKeys, k) && len(a.config[0][k]) > 0 && len(a.config[1][k]) > 0 {
			machine = append(machine, fmt.Sprintf("%s %s ≠ %s", k, o, n))
		}
	}
	for _, k := range RequiredMachineKeys {
		for s, side := range []string{"old", "new"} {
			if a.results[s] > 0 && len(a.config[s][k]) == 0 {
				machine = append(machine, fmt.Sprintf("%s records no %s: line", side, k))
			}
		}
	}
	return all, machine
}
