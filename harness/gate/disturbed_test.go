package gate

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/internal/disturb"
)

// withValue adds unit = v to the results at the given indexes.
func withValue(rs []*benchfmt.Result, unit string, v float64, idx ...int) []*benchfmt.Result {
	for _, i := range idx {
		rs[i].Values = append(rs[i].Values, benchfmt.Value{Value: v, Unit: unit})
	}
	return rs
}

// TestDisturbedIsNotARegression: a regression whose benchmark has runs
// that stayed disturbed, on either side, is reported as Disturbed and the
// report asks for a rerun (RERUN, not FAIL); the same change without the
// marks is a regression; condition units are shown, never judged.
func TestDisturbedIsNotARegression(t *testing.T) {

	for _, tc := range []struct {
		name     string
		mark     func(old, new []*benchfmt.Result)
		want     Verdict
		wantText string
	}{
		{"clean", func(old, new []*benchfmt.Result) {}, Regression, "FAIL: 1 regression"},
		{"new disturbed", func(old, new []*benchfmt.Result) { withValue(new, disturb.DisturbedUnit, 1, 3) }, Disturbed, "RERUN: no regressions, but 1 metric rests on disturbed runs"},
		{"old disturbed", func(old, new []*benchfmt.Result) { withValue(old, disturb.DisturbedUnit, 1, 0, 1) }, Disturbed, "2 old and 0 new run(s) of it stayed disturbed"},
		{"zero mark", func(old, new []*benchfmt.Result) { withValue(new, disturb.DisturbedUnit, 0, 3) }, Regression, "FAIL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := resultsOf(raw, "sec/op", spread(1, 8)...)
			n := resultsOf(raw, "sec/op", spread(1.3, 8)...)
			tc.mark(o, n)
			rep := Compare(o, n, DefaultOptions())
			var buf bytes.Buffer
			rep.WriteText(&buf)
			got := verdicts(rep)[raw+" sec/op"]
			if got != tc.want || !strings.Contains(buf.String(), tc.wantText) {
				t.Errorf("verdict %v, want %v; report:\n%s", got, tc.want, buf.String())
			}
			if tc.want == Disturbed && len(rep.Regressions()) != 0 {
				t.Errorf("Regressions() = %v, want none", rep.Regressions())
			}
		})
	}
}

func TestConditionsAreNotJudged(t *testing.T) {
	o := withValue(resultsOf(raw, "sec/op", spread(1, 8)...), disturb.RunDelayUnit, 1, 0, 1, 2, 3, 4, 5, 6, 7)
	n := withValue(resultsOf(raw, "sec/op", spread(1, 8)...), disturb.RunDelayUnit, 40, 0, 1, 2, 3, 4, 5, 6, 7)
	rep := Compare(o, n, DefaultOptions())
	if v := verdicts(rep)[raw+" "+disturb.RunDelayUnit]; v != Condition {
		t.Errorf("run-delay-%% verdict %v, want %v", v, Condition)
	}
	if rep.Tested != 1 || len(rep.Regressions()) != 0 {
		t.Errorf("tested %d, regressions %v: want only sec/op tested and no regression", rep.Tested, rep.Regressions())
	}
}

func TestBusyMachineIsSaid(t *testing.T) {
	o := resultsOf(raw, "sec/op", spread(1, 8)...)
	n := withConfig(resultsOf(raw, "sec/op", spread(1, 8)...), BusyKey, "cpu pressure 37% after waiting 30s")
	rep := Compare(o, n, DefaultOptions())
	var buf bytes.Buffer
	rep.WriteText(&buf)
	if !strings.Contains(buf.String(), "warning: new was measured on a busy machine (cpu pressure 37% after waiting 30s)") {
		t.Errorf("report:\n%s", buf.String())
	}
	if len(rep.ConfigDiffs) != 0 {
		t.Errorf("ConfigDiffs %q: the busy line is said once, not as a configuration difference", rep.ConfigDiffs)
	}
}
