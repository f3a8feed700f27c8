package resultfile

// Names and values as a result file writes them: the benchmark name of a
// run, and a value tidied as benchfmt's reader would.

import (
	"strconv"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"
)

// TidyValue returns v in the form benchfmt.Reader gives values: in the
// tidied unit (sec/op for ns/op) with OrigValue and OrigUnit holding
// what was written, or as is when tidying changes nothing. Unlike the
// Reader, it tidies zero values too (the Reader leaves "0 ns/op" as
// ns/op, which would put it in a unit of its own); the gate and the
// writer compare and write tidy values.
func TidyValue(v benchfmt.Value) benchfmt.Value {
	orig, origUnit := v.Value, v.Unit
	if v.OrigUnit != "" {
		orig, origUnit = v.OrigValue, v.OrigUnit
	}
	tv, tu := benchunit.Tidy(orig, origUnit)
	if tu == origUnit {
		return benchfmt.Value{Value: tv, Unit: tu}
	}
	return benchfmt.Value{Value: tv, Unit: tu, OrigValue: orig, OrigUnit: origUnit}
}

// BenchName is the full benchmark name `go test -bench` prints for the
// (sub-)benchmark name ("Ladder/level=raw/…") at GOMAXPROCS procs:
// "Benchmark" before it and "-procs" after it unless procs is 1, so that
// records written by the commands and by `go test` group together in
// benchstat. Every record headspace writes is named through it.
func BenchName(name string, procs int) string {
	name = "Benchmark" + name
	if procs != 1 {
		name += "-" + strconv.Itoa(procs)
	}
	return name
}
