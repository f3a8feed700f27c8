package gate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// ExitDisturbed is the exit status of a gate that found no regression
// but would have called one on disturbed runs: rerun, on a quiet machine.
// 1 stays a regression, 2 bad input or short evidence.
const ExitDisturbed = 3

// BusyKey is the configuration key a run taken on a machine that never
// got quiet records (resultfile.BusyKey).
const BusyKey = resultfile.BusyKey

// Disturbed returns the rows whose verdict is Disturbed: a regression
// the gate does not call one because runs of the benchmark stayed
// disturbed.
func (r Report) Disturbed() []Row { return r.with(Disturbed) }

// isDisturbed reports whether a result stayed disturbed: it carries a
// positive disturbed value (package disturb).
func isDisturbed(r *benchfmt.Result) bool {
	for _, v := range r.Values {
		if v.Unit == disturb.DisturbedUnit && v.Value > 0 {
			return true
		}
	}
	return false
}

// holdDisturbed turns a regression whose benchmark has disturbed runs on
// either side into Disturbed: a disturbed point is never called a
// regression.
func holdDisturbed(row *Row) {
	if row.Verdict != Regression || row.Disturbed == [2]int{} {
		return
	}
	row.Verdict = Disturbed
	row.Note = fmt.Sprintf("%d old and %d new run(s) of it stayed disturbed (run-queue delay beyond the threshold after their reruns)",
		row.Disturbed[0], row.Disturbed[1])
}

// busy describes each side's machine-busy lines.
func (a *accumulator) busy() []string {
	var out []string
	for s, side := range []string{"old", "new"} {
		vs := a.config[s][BusyKey]
		if len(vs) == 0 {
			continue
		}
		list := slices.Sorted(maps.Keys(vs))
		out = append(out, fmt.Sprintf("%s was measured on a busy machine (%s): the wait for a quiet one ended at its bound", side, strings.Join(list, "; ")))
	}
	return out
}
