package gate

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"
	"golang.org/x/perf/benchunit"

	"github.com/headspace-bench/headspace/harness/blocks/results"
	"github.com/headspace-bench/headspace/internal/disturb"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Gate defaults.
const (
	// DefaultThreshold is the relative change beyond which a
	// significant change counts: 5%.
	DefaultThreshold = 0.05
	// DefaultAlpha is benchstat's significance level,
	// benchmath.DefaultThresholds.CompareAlpha.
	DefaultAlpha = 0.05
	// DefaultMinCoverage is the share of the old side's benchmarks the
	// new side must hold for the gate to decide: 90%.
	DefaultMinCoverage = 0.9
	// Confidence is the level of the medians' confidence intervals,
	// benchstat's default (internal/summary's).
	Confidence = summary.Confidence
)

// MachineKeys are the configuration keys that say which machine and
// device a file was recorded on; two files that differ in one of them
// (both setting it) come from different machines.
// A file that records no cpu or no cores line names no machine, and is
// treated as another machine than any file.
var MachineKeys = []string{"device", "gpu", "cpu", "cores", "goos", "goarch"}

// RequiredMachineKeys must be recorded on both sides for the files to
// count as one machine's: without them nothing says which machine a
// file comes from.
var RequiredMachineKeys = []string{"cpu", "cores"}

// DefaultSpreadZ is how many between-run spreads (Options.Spread) a
// change must exceed to count: 3.
const DefaultSpreadZ = 3

// Options configures Compare and the evidence it needs.
type Options struct {
	// Threshold is the relative change of the median a significant
	// change must exceed to count, 0.05 for 5%; in [0, 1). Zero gates on
	// any significant change.
	Threshold float64

	// Alpha is the significance level: a change is significant when the
	// Mann–Whitney U test's p-value is below it; in (0, 1).
	Alpha float64

	// MinCoverage is the share of the old side's benchmarks that the new
	// side must also hold, in [0, 1]: a run that crashed half-way has
	// too few to pass on.
	MinCoverage float64

	// CrossMachine allows files from different machines (MachineKeys)
	// to be compared; the report then says so first.
	CrossMachine bool

	// Units is unit metadata from the compared files (ReadUnits); its
	// better= entries give the direction of units that headspace's own
	// table (results.KnownDirection) does not know. A known unit always
	// takes the table's direction. May be nil.
	Units benchfmt.UnitMetadataMap

	// Spread is each metric's measured spread between runs on this
	// machine, as a fraction of its median (0.03 for 3%), from a history
	// of earlier runs (package history). A change of a metric listed
	// here counts only beyond SpreadZ times its spread, as well as beyond
	// Threshold: noise between runs that the within-run test cannot see.
	// May be nil.
	Spread map[Metric]float64

	// SpreadZ is how many spreads a change must exceed; DefaultSpreadZ
	// when zero.
	SpreadZ float64
}

// Metric names one benchmark (with its "Benchmark" prefix, as in Row)
// and one tidied unit.
type Metric struct{ Name, Unit string }

// DefaultOptions are benchstat's alpha, a 5% threshold and 90% coverage.
func DefaultOptions() Options {
	return Options{Threshold: DefaultThreshold, Alpha: DefaultAlpha, MinCoverage: DefaultMinCoverage}
}

// Validate says what is wrong with o's numbers, naming the flag.
func (o Options) Validate() error {
	switch {
	case !(o.Threshold >= 0 && o.Threshold < 1):
		return fmt.Errorf("--threshold %v: want a finite change in [0, 1), e.g. 0.05 for 5%%", o.Threshold)
	case !(o.Alpha > 0 && o.Alpha < 1):
		return fmt.Errorf("--alpha %v: want a significance level in (0, 1)", o.Alpha)
	case !(o.MinCoverage >= 0 && o.MinCoverage <= 1):
		return fmt.Errorf("--min-coverage %v: want a share in [0, 1]", o.MinCoverage)
	}
	return nil
}

// Verdict is the gate's decision about one benchmark and unit.
type Verdict int

// The verdicts.
const (
	// NoChange: the difference is not significant (p >= alpha), or it
	// is significant but within the threshold.
	NoChange Verdict = iota
	// Regression: significant, and worse by more than the threshold.
	Regression
	// Improvement: significant, and better by more than the threshold.
	Improvement
	// TooFewSamples: with this many samples no outcome could reach
	// p < alpha, so the metric was not checked.
	TooFewSamples
	// OnlyInOld: the benchmark (or this unit of it) is missing from the
	// new results.
	OnlyInOld
	// OnlyInNew: the benchmark (or this unit of it) is not in the old
	// results.
	OnlyInNew
	// UnknownDirection: significant and beyond the threshold, but the
	// unit's direction is unknown, so it is neither.
	UnknownDirection
	// Disturbed: it would be a regression, but some of the benchmark's
	// runs stayed disturbed (package disturb): the gate asks for a rerun
	// instead of calling it one.
	Disturbed
	// Condition: the unit describes how disturbed a run was (run-queue
	// delay, CPU pressure, reruns), not the code; shown, never judged.
	Condition
)

var verdictNames = [...]string{
	NoChange:         "no significant change",
	Regression:       "regression",
	Improvement:      "improvement",
	TooFewSamples:    "too few samples",
	OnlyInOld:        "only in old",
	OnlyInNew:        "only in new",
	UnknownDirection: "unknown direction",
	Disturbed:        "disturbed: rerun",
	Condition:        "run condition",
}

// String returns the verdict as the report prints it, such as
// "no significant change".
func (v Verdict) String() string {
	if v >= 0 && int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Side summarizes one side (old or new) of a Row.
type Side struct {
	// N is the number of samples: the finite values of the unit
	// among the results with the row's name. Zero when absent.
	N int
	// Summary is the median with its Confidence interval (Lo, Hi are
	// ±Inf when N is too small for one), from benchmath.AssumeNothing.
	benchmath.Summary
}

// Row is the comparison of one benchmark in one unit.
type Row struct {
	// Name is the full benchmark name with the "Benchmark" prefix.
	Name string
	// Unit is the unit, tidied as benchfmt does: values of "ns/op"
	// are compared as "sec/op".
	Unit string
	// Better is which way the unit is better.
	Better results.Direction
	// Old and New summarize the two sides.
	Old, New Side
	// Delta is the relative change of the median, new/old - 1
	// (-0.12 for -12%); NaN if a side is missing.
	Delta float64
	// P is the Mann–Whitney U test's p-value; NaN if not compared.
	P float64
	// Q is P adjusted by Benjamini–Hochberg over every metric the
	// report tested (the smallest false discovery rate at which this
	// row is a discovery); NaN if not compared. The verdict tests Q
	// against Alpha.
	Q float64
	// Noise is the between-run spread limit the change had to exceed
	// (SpreadZ × the metric's spread), or 0 without a history.
	Noise float64
	// Spread is the metric's spread between runs on this machine, from
	// the history (Options.Spread), as a fraction of its median; NaN
	// without one.
	Spread float64
	// Verdict is the decision.
	Verdict Verdict
	// Note explains the verdict where it needs explaining, such as how
	// many samples are missing.
	Note string
	// Headline marks the headline metric (see Headline; either side's)
	// of a benchmark both sides hold.
	Headline bool
	// Missing counts, per side (old, new), the benchmark's results on
	// that side without a finite value of this unit: the unit absent,
	// NaN or infinite.
	Missing [2]int
	// Warnings are benchmath's warnings about the samples and test.
	Warnings []string
	// Disturbed counts the old and the new side's runs of the benchmark
	// that stayed disturbed (a "disturbed" value in the file).
	Disturbed [2]int
}

// Report is the result of Compare.
type Report struct {
	// OldName and NewName label the sides in WriteText and errors; "old"
	// and "new" when empty. CompareFiles sets them to the paths.
	OldName, NewName string
	// Alpha and Threshold are the settings used; Alpha is the false
	// discovery rate the Benjamini–Hochberg procedure controls.
	Alpha, Threshold float64
	// Tested counts the metrics whose p-values entered the
	// Benjamini–Hochberg procedure.
	Tested int
	// SpreadZ is the setting used when a history gave spreads.
	SpreadZ float64
	// WithSpread counts the rows whose metric had a between-run spread.
	WithSpread int
	// Rows holds one row per benchmark and unit, grouped by benchmark
	// in order of first appearance, old results first.
	Rows []Row
	// OldResults and NewResults count each side's result lines.
	OldResults, NewResults int
	// OldBenchmarks counts the old side's distinct benchmarks, and
	// Covered those of them the new side holds too.
	OldBenchmarks, Covered int
	// ConfigDiffs describes each configuration key, other than commit and date,
	// whose values differ between the old and the new results, such as
	// `cpu: old "A", new "B"`: results from different machines or
	// settings may not be comparable.
	ConfigDiffs []string
	// MachineDiffs are the ConfigDiffs of MachineKeys set on both sides:
	// the files come from different machines or devices.
	MachineDiffs []string
	// CrossMachine records that the comparison was allowed across
	// machines (Options.CrossMachine) while MachineDiffs is not empty.
	CrossMachine bool
	// Busy says which side was measured on a machine that never got
	// quiet (its machine-busy line), such as "new was measured on a busy
	// machine (cpu pressure 37% after waiting 30s)".
	Busy []string
}

// Regressions returns the rows whose verdict is Regression.
func (r Report) Regressions() []Row { return r.with(Regression) }

func (r Report) with(v Verdict) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Verdict == v {
			out = append(out, row)
		}
	}
	return out
}

// checked is how many rows the gate decided on.
func (r Report) checked() int {
	n := 0
	for _, row := range r.Rows {
		if row.decided() {
			n++
		}
	}
	return n
}

// decided reports whether the gate compared the row.
func (row Row) decided() bool {
	switch row.Verdict {
	case NoChange, Regression, Improvement, UnknownDirection, Disturbed:
		return true
	}
	return false
}

// Headline returns a result's headline unit, tidied: the unit its
// benchmark is about, which a gate may not pass without. It is the first
// unit the result records, passing over sec/op (ns/op, which Go's
// convention puts first) when another unit follows it: steps/s for the
// ladder, GB/s for CUDACopy, step-ns for CUDAStep, ns/op for a plain Go
// benchmark. A benchmark's headline on each side is its first result's
// there.
func Headline(r *benchfmt.Result) string {
	for i, v := range r.Values {
		u := results.TidyValue(v).Unit
		if u != "sec/op" || i == len(r.Values)-1 {
			return u
		}
	}
	return ""
}

func (r Report) names() (oldName, newName string) {
	oldName, newName = r.OldName, r.NewName
	if oldName == "" {
		oldName = "old"
	}
	if newName == "" {
		newName = "new"
	}
	return oldName, newName
}

// Evidence says why the report cannot be trusted to pass or fail, or nil:
// a side with no results (an empty, foreign or crashed run's file), no
// metric compared at all, a benchmark on both sides with a result that
// lacks a finite value of its headline metric (Headline), fewer than minCoverage of the old side's benchmarks in the
// new, or files from different machines when the comparison was not
// allowed across them. A command gating on the report exits 2 on it,
// whatever the verdicts.
func (r Report) Evidence(minCoverage float64) error {
	oldName, newName := r.names()
	switch {
	case r.OldResults == 0:
		return fmt.Errorf("%s holds no benchmark results: nothing to gate against", oldName)
	case r.NewResults == 0:
		return fmt.Errorf("%s holds no benchmark results: nothing to gate on", newName)
	case len(r.MachineDiffs) > 0 && !r.CrossMachine:
		return fmt.Errorf("%s and %s come from different machines (%s): compare with this machine's baseline, or pass --cross-machine",
			oldName, newName, strings.Join(r.MachineDiffs, "; "))
	case r.checked() == 0:
		return fmt.Errorf("no metric could be compared between %s and %s (%d rows, none on both sides with enough samples)", oldName, newName, len(r.Rows))
	}
	for _, row := range r.Rows {
		if !row.Headline {
			continue
		}
		for s, name := range []string{oldName, newName} {
			if n := row.Missing[s]; n > 0 {
				return fmt.Errorf("%s: %s %s, the benchmark's headline metric, is missing or not finite in %d of its results there: a broken measurement, and no verdict on the other metrics alone",
					name, row.Name, row.Unit, n)
			}
		}
	}
	if cov := float64(r.Covered) / float64(max(r.OldBenchmarks, 1)); cov < minCoverage {
		return fmt.Errorf("%s holds %d of the %d benchmarks of %s (%s), under the %s coverage the gate needs (--min-coverage)",
			newName, r.Covered, r.OldBenchmarks, oldName, pct(cov), pct(minCoverage))
	}
	return nil
}

// CompareFiles compares the results files at oldPath and newPath with
// Compare, reading them one result at a time so that memory grows with
// the distinct benchmarks and their values, not with the files. A unit
// headspace knows (results.KnownDirection) takes its direction from
// headspace's table; a file whose Unit line declares the other direction
// for it is refused, naming the file and the unit. A unit headspace does
// not know takes the files' direction, and the files must agree on it.
// An error means an input could not be read, has syntax errors or
// contradicts the unit table; the comparison was not made.
func CompareFiles(oldPath, newPath string, opt Options) (Report, error) {
	var acc accumulator
	var metas [2]benchfmt.UnitMetadataMap
	for s, path := range []string{oldPath, newPath} {
		m, err := results.Scan(path, func(r *benchfmt.Result) error {
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
// that contradicts headspace's unit table (results.KnownDirection), such
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
		want, ok := results.KnownDirection(u)
		if !ok {
			continue
		}
		if got := results.Direction(meta.GetBetter(u)); got != want {
			return fmt.Errorf("%s: its Unit line declares %s better=%s, but %s is %s-is-better in headspace's unit table: refusing the file",
				path, u, meta.Get(u, "better").Value, u, want)
		}
	}
	return nil
}

// direction is the unit's direction: headspace's table where it knows
// the unit, else the files' Unit lines.
func direction(unit string, meta benchfmt.UnitMetadataMap) results.Direction {
	if d, ok := results.KnownDirection(unit); ok {
		return d
	}
	return results.DirectionOf(unit, meta)
}

// Compare compares old and new results as benchstat does: it groups
// results by full benchmark name (sub-benchmark keys and GOMAXPROCS
// suffix included) and tidied unit, summarizes each group by its median
// with a 95% confidence interval, and tests old against new with the
// Mann–Whitney U test (benchmath.AssumeNothing). The p-values of every
// metric tested are adjusted by Benjamini–Hochberg, so that Alpha bounds
// the expected share of false alarms among the changes reported however
// many metrics a file holds. A row is a Regression when its adjusted
// p-value (Q) is below Alpha and the median moved the wrong way by more
// than Threshold and, where Options.Spread gives the metric's spread
// between runs, by more than SpreadZ times that spread. Configurations do not affect verdicts: keys other than
// commit whose values differ between the sides are listed in
// Report.ConfigDiffs, and those of MachineKeys in MachineDiffs, for
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
		n.Values = append(n.Values, results.TidyValue(v))
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
		if !c.File || c.Key == "commit" || c.Key == "date" {
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
		if !vs[string(c.Value)] {
			vs[string(c.Value)] = true
		}
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
			g, unit := a.groups[k], k.Get(a.unit)
			row := Row{
				Name:     "Benchmark" + name,
				Unit:     unit,
				Better:   direction(unit, opt.Units),
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
			for side := range 2 {
				if len(g.vals[side]) == 0 {
					continue
				}
				s := benchmath.NewSample(g.vals[side], &thr)
				samples[side] = s
				sum := summary.Interval(s)
				if side == 0 {
					row.Old = Side{N: len(s.Values), Summary: sum}
				} else {
					row.New = Side{N: len(s.Values), Summary: sum}
				}
				row.Warnings = appendWarnings(row.Warnings, sum.Warnings)
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
			rep.Rows = append(rep.Rows, row)
		}
	}
	rep.Tested = adjust(rep.Rows)
	if opt.SpreadZ == 0 {
		opt.SpreadZ = DefaultSpreadZ
	}
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
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(rows[a].P, rows[b].P) })
	q := 1.0
	for k := m - 1; k >= 0; k-- {
		i := idx[k]
		q = math.Min(q, rows[i].P*float64(m)/float64(k+1))
		rows[i].Q = q
	}
	return m
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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
	if p := minP(n1, n2); p >= opt.Alpha {
		row.Delta = delta(row.Old.Center, row.New.Center)
		row.Verdict = TooFewSamples
		row.Note = fmt.Sprintf("old has %d, new has %d; the smallest p-value %d+%d samples can give is %.3g, not below alpha %g: "+
			"the U test needs at least %d samples per side", n1, n2, n1, n2, p, opt.Alpha, MinSamples(opt.Alpha))
		return
	}
	cmp := benchmath.AssumeNothing.Compare(old, new)
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
	case row.Better == results.NoDirection:
		row.Verdict = UnknownDirection
	case (row.Delta > 0) == (row.Better == results.HigherIsBetter):
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

// minP is the smallest two-sided p-value the Mann–Whitney U test can
// give for samples of n1 and n2 values: both samples entirely apart,
// 2/C(n1+n2, n1). Ties only raise it.
func minP(n1, n2 int) float64 {
	// C(n1+n2, k) by the multiplicative formula: every partial product
	// is a binomial coefficient, so it is exact while below 2^53, and
	// beyond that minP is far below any sensible alpha anyway.
	k := min(n1, n2)
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n1+n2-k+i) / float64(i)
	}
	return math.Min(1, 2/c)
}

// MinSamples is the fewest samples per side with which the
// Mann–Whitney U test can find a difference significant at alpha (p <
// alpha): 4 at 0.05 (the smallest p 4+4 samples can give is 2/70 ≈
// 0.029, while 3+3 give at best 0.1), 5 at 0.01. With unequal sides fewer
// can do on one side if the other has more; Compare checks the actual
// sizes.
func MinSamples(alpha float64) int {
	n := 1
	for ; n < 1000 && minP(n, n) >= alpha; n++ {
	}
	return n
}

func appendWarnings(dst []string, ws []error) []string {
	for _, w := range ws {
		dst = append(dst, w.Error())
	}
	return dst
}

func pct(f float64) string {
	s := fmt.Sprintf("%.1f", 100*f)
	return strings.TrimSuffix(s, ".0") + "%"
}

func signedPct(f float64) string {
	switch {
	case math.IsNaN(f):
		return "-"
	case math.IsInf(f, 0):
		return fmt.Sprintf("%+.0f%%", f)
	}
	return fmt.Sprintf("%+.2f%%", 100*f)
}

// WriteText writes the report for people: a table with a row per
// benchmark and unit (medians ± their 95% confidence interval, delta,
// p-value, sample counts, verdict), then a summary naming every
// regression, improvement, benchmark present on one side only, metric
// with too few samples to decide and change of unknown direction, and a
// closing PASS or FAIL line.
func (r Report) WriteText(w io.Writer) error {
	oldName, newName := r.names()
	var b strings.Builder
	if r.CrossMachine {
		fmt.Fprintf(&b, "CROSS-MACHINE comparison (--cross-machine): %s; a change may be the machine's, not the code's\n",
			strings.Join(r.MachineDiffs, "; "))
	}
	fmt.Fprintf(&b, "old: %s\nnew: %s\n", oldName, newName)
	fmt.Fprintf(&b, "medians ± %g%% confidence interval; Mann–Whitney U test, false discovery rate %g over %s (Benjamini–Hochberg); threshold %s\n",
		100*Confidence, r.Alpha, plural(r.Tested, "tested metric"), pct(r.Threshold))
	if r.WithSpread > 0 {
		fmt.Fprintf(&b, "history: %d metrics must also change by more than %g × their spread between runs\n", r.WithSpread, r.SpreadZ)
	}
	b.WriteString("\n")
	for _, busy := range r.Busy {
		fmt.Fprintf(&b, "warning: %s\n", busy)
	}
	if len(r.ConfigDiffs) > 0 {
		b.WriteString("warning: old and new were recorded under different configurations; they may not be comparable:\n")
		for _, d := range r.ConfigDiffs {
			fmt.Fprintf(&b, "  %s\n", d)
		}
		b.WriteString("\n")
	}
	if len(r.Rows) == 0 {
		b.WriteString("no benchmark results to compare\n")
		_, err := io.WriteString(w, b.String())
		return err
	}

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	spreadCol := func(string) string { return "" }
	if r.WithSpread > 0 {
		// compare --history: each metric's spread between runs.
		spreadCol = func(s string) string { return s + "\t" }
	}
	fmt.Fprintln(tw, "benchmark\tunit\told\tnew\tdelta\t"+spreadCol("run-to-run")+"p\tq\tn\tverdict")
	for _, row := range r.Rows {
		sc := scaler(row)
		p, q := "-", "-"
		if !math.IsNaN(row.P) {
			p, q = fmt.Sprintf("%.3g", row.P), fmt.Sprintf("%.3g", row.Q)
		}
		v := row.Verdict.String()
		switch {
		case row.Verdict == Regression:
			v = "REGRESSION"
		case row.Verdict == Disturbed:
			v = "DISTURBED: rerun"
		case row.Verdict == NoChange && row.Q < r.Alpha && row.Noise > 0 && math.Abs(row.Delta) > r.Threshold:
			v = "within the spread between runs"
		case row.Verdict == NoChange && row.Q < r.Alpha:
			v = "within " + pct(r.Threshold) + " threshold"
		}
		sp := "-"
		if !math.IsNaN(row.Spread) {
			sp = "±" + pct(row.Spread)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s%s\t%s\t%s\t%s\n", row.Name, row.Unit,
			cell(row.Old, sc), cell(row.New, sc), signedPct(row.Delta), spreadCol(sp), p, q, counts(row), v)
	}
	tw.Flush()

	section := func(title string, rows []Row, line func(Row) string) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s\n", title)
		for _, row := range rows {
			fmt.Fprintf(&b, "  %s\n", line(row))
		}
	}
	change := func(row Row) string {
		sc := scaler(row)
		return fmt.Sprintf("%s %s: %s → %s (%s, p=%.3g, q=%.3g, n=%s); %s is better", row.Name, row.Unit,
			sc.Format(row.Old.Center), sc.Format(row.New.Center), signedPct(row.Delta), row.P, row.Q, counts(row), row.Better)
	}
	regs := r.Regressions()
	section(fmt.Sprintf("%s beyond %s at false discovery rate %g:", plural(len(regs), "regression"), pct(r.Threshold), r.Alpha), regs, change)
	imps := r.with(Improvement)
	section(fmt.Sprintf("%s beyond %s:", plural(len(imps), "improvement"), pct(r.Threshold)), imps, change)
	section("Only in old (missing from new; not compared):", oneSided(r.Rows, OnlyInOld), func(row Row) string { return row.Name })
	section("Only in new (not in old; not compared):", oneSided(r.Rows, OnlyInNew), func(row Row) string { return row.Name })
	few := r.with(TooFewSamples)
	section("Too few samples to decide (not checked):", few, func(row Row) string {
		return fmt.Sprintf("%s %s: %s", row.Name, row.Unit, row.Note)
	})
	dist := r.Disturbed()
	section("Disturbed (worse beyond the threshold, but runs of the benchmark stayed disturbed: not called a regression; rerun on a quiet machine):", dist, func(row Row) string {
		sc := scaler(row)
		return fmt.Sprintf("%s %s: %s → %s (%s); %s", row.Name, row.Unit, sc.Format(row.Old.Center), sc.Format(row.New.Center), signedPct(row.Delta), row.Note)
	})
	unk := r.with(UnknownDirection)
	section("Changed, but which way is better is unknown (not checked; add a \"Unit <unit> better=higher|lower\" line):", unk, func(row Row) string {
		sc := scaler(row)
		return fmt.Sprintf("%s %s: %s → %s (%s, p=%.3g, q=%.3g, n=%s)", row.Name, row.Unit,
			sc.Format(row.Old.Center), sc.Format(row.New.Center), signedPct(row.Delta), row.P, row.Q, counts(row))
	})
	var notes []string
	seen := map[string]bool{}
	for _, row := range r.Rows {
		for _, w := range row.Warnings {
			if !seen[w] {
				seen[w] = true
				notes = append(notes, w)
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nbenchmath notes:\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}

	checked := r.checked()
	unchecked := len(r.Rows) - checked
	if len(regs) > 0 {
		fmt.Fprintf(&b, "\nFAIL: %s in %s:\n", plural(len(regs), "regression"), plural(checked, "compared metric"))
		for _, row := range regs {
			fmt.Fprintf(&b, "  %s %s %s\n", row.Name, row.Unit, signedPct(row.Delta))
		}
	} else if len(dist) > 0 {
		fmt.Fprintf(&b, "\nRERUN: no regressions, but %s disturbed runs; rerun on a quiet machine (exit %d)\n", plural(len(dist), "metric rests on"), ExitDisturbed)
	} else {
		fmt.Fprintf(&b, "\nPASS: no regressions in %s", plural(checked, "compared metric"))
		if unchecked > 0 {
			fmt.Fprintf(&b, "; %d not checked (see above)", unchecked)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// oneSided returns one row per benchmark name whose rows all have the
// verdict v, with the units listed in its Name; and a row per unit for
// benchmarks present on both sides but missing that unit on one.
func oneSided(rows []Row, v Verdict) []Row {
	var out []Row
	byName := map[string][]Row{}
	var names []string
	for _, row := range rows {
		if byName[row.Name] == nil {
			names = append(names, row.Name)
		}
		byName[row.Name] = append(byName[row.Name], row)
	}
	for _, name := range names {
		var units []string
		all := true
		for _, row := range byName[name] {
			if row.Verdict == v {
				units = append(units, row.Unit)
			} else {
				all = false
			}
		}
		switch {
		case len(units) == 0:
		case all:
			out = append(out, Row{Name: fmt.Sprintf("%s (%s)", name, strings.Join(units, ", "))})
		default:
			for _, u := range units {
				out = append(out, Row{Name: fmt.Sprintf("%s %s (the benchmark is on both sides, this unit is not)", name, u)})
			}
		}
	}
	return out
}

func plural(n int, s string) string {
	if n == 1 {
		return "1 " + s
	}
	return fmt.Sprintf("%d %ss", n, s)
}

func counts(row Row) string {
	switch {
	case row.Verdict == OnlyInOld:
		return fmt.Sprint(row.Old.N)
	case row.Verdict == OnlyInNew:
		return fmt.Sprint(row.New.N)
	case row.Old.N == row.New.N:
		return fmt.Sprint(row.Old.N)
	}
	return fmt.Sprintf("%d+%d", row.Old.N, row.New.N)
}

func scaler(row Row) benchunit.Scaler {
	var vals []float64
	for _, s := range []Side{row.Old, row.New} {
		if s.N > 0 {
			vals = append(vals, s.Center)
		}
	}
	return benchunit.CommonScale(vals, benchunit.ClassOf(row.Unit))
}

func cell(s Side, sc benchunit.Scaler) string {
	if s.N == 0 {
		return "-"
	}
	return sc.Format(s.Center) + " ± " + s.PctRangeString()
}
