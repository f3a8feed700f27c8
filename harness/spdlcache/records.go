package spdlcache

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Benchmark is the records' benchmark name
// (BenchmarkRealPeerHeadspace/peer=<side>/workers=<n>).
const Benchmark = "RealPeerHeadspace"

// BenchName is r's benchmark name.
func (r Run) BenchName() string {
	return fmt.Sprintf("Benchmark%s/peer=%s/workers=%d", Benchmark, r.Side, r.Workers)
}

// Record is r in benchmark format: Steps iterations, step-ns,
// cached-step-ns and headspace-% (ownloop's units), and for ours the
// bounds of their intervals.
func (r Run) Record() *benchfmt.Result {
	res := &benchfmt.Result{Name: benchfmt.Name(strings.TrimPrefix(r.BenchName(), "Benchmark")), Iters: r.Steps}
	add := func(v float64, unit string) { res.Values = append(res.Values, benchfmt.Value{Value: v, Unit: unit}) }
	add(float64(r.Before), "step-ns")
	add(float64(r.After), "cached-step-ns")
	add(100*r.Share(), "headspace-%")
	if r.OtherBefore > 0 {
		add(float64(r.OtherBefore), "other-step-ns")
		add(float64(r.OtherAfter), "other-cached-step-ns")
	}
	if r.BeforeHi > 0 {
		add(float64(r.BeforeLo), "step-lo-ns")
		add(float64(r.BeforeHi), "step-hi-ns")
	}
	if r.AfterHi > 0 {
		add(float64(r.AfterLo), "cached-step-lo-ns")
		add(float64(r.AfterHi), "cached-step-hi-ns")
	}
	return res
}

// MissingKey is the configuration key of a missing run's reason.
func (r Run) MissingKey() string { return fmt.Sprintf("missing-%s-r%d", r.Side, r.Round) }

var missingKey = regexp.MustCompile(`^missing-(` + Ours + `|` + SPDL + `)-r([1-9][0-9]*)$`)

// Records are the runs' records in the order they ran, missing runs left
// out; MissingConfig their reasons.
func Records(runs []Run) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, r := range runs {
		if r.Missing == "" {
			out = append(out, r.Record())
		}
	}
	return out
}

// MissingConfig are the configuration lines of the runs that failed.
func MissingConfig(runs []Run) []resultfile.Config {
	var out []resultfile.Config
	for _, r := range runs {
		if r.Missing != "" {
			out = append(out, resultfile.Config{Key: r.MissingKey(), Value: oneLine(r.Missing)})
		}
	}
	return out
}

// RunOf is the run of one record, its name read (package workloads'
// SPDLCacheCodec: the side, peer=, and its workers): the figures checked
// to hold together. Its Round is 0 (Rounds sets it).
func RunOf(side string, workers int, rec *benchfmt.Result) (Run, error) {
	full := "Benchmark" + string(rec.Name)
	r := Run{Steps: rec.Iters, Side: side, Workers: workers}
	if !slices.Contains(Sides, side) {
		return r, fmt.Errorf("%s: peer %q: want %s", full, side, strings.Join(Sides, " or "))
	}
	if workers < 0 {
		return r, fmt.Errorf("%s: workers %d: want a count", full, workers)
	}
	if r.Steps < 2 {
		return r, fmt.Errorf("%s: %d steps, want at least 2", full, r.Steps)
	}
	var errs []error
	get := func(unit string, optional bool) time.Duration {
		v, err := value(rec, unit)
		if optional && errors.Is(err, errNoValue) {
			return 0
		}
		if err == nil && (v < 0 || v > math.MaxInt64) {
			err = fmt.Errorf("%s %g must be a time", unit, v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", full, err))
		}
		return time.Duration(math.Round(v))
	}
	r.Before, r.After = get("step-ns", false), get("cached-step-ns", false)
	r.OtherBefore, r.OtherAfter = get("other-step-ns", true), get("other-cached-step-ns", true)
	if (r.OtherBefore > 0) != (r.OtherAfter > 0) {
		errs = append(errs, fmt.Errorf("%s: other-step-ns and other-cached-step-ns come together", full))
	}
	r.BeforeLo, r.BeforeHi, r.AfterLo, r.AfterHi = get("step-lo-ns", true), get("step-hi-ns", true), get("cached-step-lo-ns", true), get("cached-step-hi-ns", true)
	if side == SPDL && r.BeforeHi+r.AfterHi > 0 {
		errs = append(errs, fmt.Errorf("%s: SPDL's side has no interval of its step times", full))
	}
	if !inside(r.BeforeLo, r.Before, r.BeforeHi) || !inside(r.AfterLo, r.After, r.AfterHi) {
		errs = append(errs, fmt.Errorf("%s: an interval that does not hold its step time", full))
	}
	pct, err := value(rec, "headspace-%")
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", full, err))
	}
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	if r.Before <= 0 {
		return r, fmt.Errorf("%s: step-ns must be positive", full)
	}
	// headspace-% is derived: it must be the steps' (to the record's
	// precision), or the file was edited.
	if want := 100 * r.Share(); math.Abs(pct-want) > 1e-6*math.Max(1, math.Abs(want)) {
		return r, fmt.Errorf("%s: headspace-%% %g, but its step times give %g", full, pct, want)
	}
	return r, nil
}

// inside says lo ≤ v ≤ hi, or the interval is absent (both zero).
func inside(lo, v, hi time.Duration) bool { return lo == 0 && hi == 0 || lo <= v && v <= hi }

// errNoValue is value's error for a unit the record lacks.
var errNoValue = errors.New("no value")

// value is rec's one value in unit, finite (benchfmt may have tidied the
// unit: step-ns reads as step-sec).
func value(rec *benchfmt.Result, unit string) (float64, error) {
	n, found := 0, 0.0
	for _, v := range rec.Values {
		if v.OrigUnit == unit || (v.OrigUnit == "" && v.Unit == unit) {
			n++
			found = v.OrigValue
			if v.OrigUnit == "" {
				found = v.Value
			}
		}
	}
	switch {
	case n == 0:
		return 0, fmt.Errorf("%w in %s", errNoValue, unit)
	case n > 1:
		return 0, fmt.Errorf("%s given %d times", unit, n)
	case math.IsNaN(found) || math.IsInf(found, 0):
		return 0, fmt.Errorf("%s %g must be finite", unit, found)
	}
	return found, nil
}

// Rounds are runs, decoded in the order they ran (RunOf), each in its
// round, then the missing runs that config's lines name (missing-<side>-r<round>),
// at the first run's workers.
func Rounds(config []resultfile.Config, runs []Run) []Run {
	if len(runs) == 0 {
		return nil
	}
	skip := map[string]map[int]bool{}
	var missing []Run
	for _, c := range config {
		g := missingKey.FindStringSubmatch(c.Key)
		if g == nil {
			continue
		}
		round, _ := strconv.Atoi(g[2])
		if skip[g[1]] == nil {
			skip[g[1]] = map[int]bool{}
		}
		skip[g[1]][round] = true
		missing = append(missing, Run{Side: g[1], Workers: runs[0].Workers, Round: round, Missing: c.Value})
	}
	next := map[string]int{}
	for i := range runs {
		round := next[runs[i].Side] + 1
		for skip[runs[i].Side][round] {
			round++
		}
		next[runs[i].Side] = round
		runs[i].Round = round
	}
	return append(runs, missing...)
}
