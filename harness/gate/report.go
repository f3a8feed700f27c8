package gate

// What Compare returns: a Verdict per Row, the Report of every row,
// and Evidence, which says whether the report can be trusted to decide.

import (
	"cmp"
	"fmt"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

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
	Better resultfile.Direction
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

// checked is how many rows the gate compared and decided on.
func (r Report) checked() int {
	n := 0
	for _, row := range r.Rows {
		switch row.Verdict {
		case NoChange, Regression, Improvement, UnknownDirection, Disturbed:
			n++
		}
	}
	return n
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
		u := resultfile.TidyValue(v).Unit
		if u != "sec/op" || i == len(r.Values)-1 {
			return u
		}
	}
	return ""
}

func (r Report) names() (oldName, newName string) {
	return cmp.Or(r.OldName, "old"), cmp.Or(r.NewName, "new")
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
