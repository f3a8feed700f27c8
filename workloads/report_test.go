package workloads

import (
	"testing"

	"golang.org/x/perf/benchfmt"
)

// report returns an Env.Result that reports a run's record as the
// benchmark's metrics, so `go test -bench` prints what the CLI writes.
func report(b *testing.B) func(*benchfmt.Result) error {
	return func(r *benchfmt.Result) error {
		reportRecord(b, r)
		return nil
	}
}

// benchResult is one record of a benchmark's run and its sub-benchmark
// name.
type benchResult struct {
	name string
	r    *benchfmt.Result
}

// reportRecord reports every value of a benchmark-format record.
func reportRecord(b *testing.B, r *benchfmt.Result) {
	b.StopTimer()
	for _, v := range r.Values {
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" {
			unit, val = v.OrigUnit, v.OrigValue
		}
		b.ReportMetric(val, unit)
	}
}
