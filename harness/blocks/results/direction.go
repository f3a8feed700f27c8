package results

import "golang.org/x/perf/benchfmt"

// KnownDirection returns which way unit is better by headspace's own
// rules alone, ignoring any Unit line of a file: the project's unit table
// (steps/s higher, every time lower, …), else benchfmt's built-in
// defaults (ns/op, sec/op, B/op, allocs/op lower; MB/s, B/s higher). ok
// is false for a unit neither knows. The gate takes a known unit's
// direction from here and refuses a file that declares the other one.
func KnownDirection(unit string) (d Direction, ok bool) {
	if d, ok := tableDirection(unit); ok && d != NoDirection {
		return d, true
	}
	if d := Direction(benchfmt.UnitMetadataMap(nil).GetBetter(tidy(unit))); d != NoDirection {
		return d, true
	}
	return NoDirection, false
}
