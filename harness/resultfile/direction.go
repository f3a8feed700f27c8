package resultfile

import (
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"
)

// Direction says whether higher or lower values of a unit are better.
// Its values match benchfmt.UnitMetadataMap.GetBetter: +1, -1, or 0
// (NoDirection) when unknown.
type Direction int

// The directions of a unit.
const (
	LowerIsBetter  Direction = -1
	NoDirection    Direction = 0
	HigherIsBetter Direction = 1
)

// String returns "higher", "lower" or "unknown", as a Unit line's
// better= value would say it.
func (d Direction) String() string {
	switch d {
	case HigherIsBetter:
		return "higher"
	case LowerIsBetter:
		return "lower"
	}
	return "unknown"
}

// units gives the direction of the project's own units; beyond it, a
// unit that is a time ("-ns", "-ns/op", "-ns/sample") is lower-is-better
// (see TableDirection). Files written by this package carry a "Unit <unit>
// better=<higher|lower>" line for each such unit that appears in them, so
// benchstat reads the direction too; the gate falls back to the same rule
// for files without such lines. Units without a direction (other-cores,
// cores-used, queue) describe a run rather than grade it.
var units = map[string]Direction{
	"steps/s":           HigherIsBetter,
	"predicted-steps/s": HigherIsBetter,
	"samples/s":         HigherIsBetter,
	"au-%":              HigherIsBetter,
	"au":                HigherIsBetter, // MLPerf Storage's AU as a fraction (package node)
	"au-min":            HigherIsBetter,
	"predicted-au":      HigherIsBetter,
	"measured-au":       HigherIsBetter,
	"au-error-%":        LowerIsBetter,
	"bytes/s":           HigherIsBetter,
	"requests/s":        HigherIsBetter,
	"GB/s":              HigherIsBetter,
	"read-MB/s":         HigherIsBetter,
	"copy-MB/s":         HigherIsBetter,
	"batches":           HigherIsBetter,
	"peak-rss-B":        LowerIsBetter,
	"cpu-s":             LowerIsBetter,
	"upload-B/op":       LowerIsBetter,
	"failures":          LowerIsBetter,
	"requests/sample":   LowerIsBetter,
	"retries":           LowerIsBetter,
	"epoch-usd":         LowerIsBetter,
	"model-idle-%":      LowerIsBetter,
	// How disturbed a run was (package disturb): conditions, lower is
	// quieter; and instructions per step, where counters exist.
	"run-delay-%":     LowerIsBetter,
	"cpu-pressure-%":  LowerIsBetter,
	"reruns":          LowerIsBetter,
	"disturbed":       LowerIsBetter,
	"instructions/op": LowerIsBetter,
}

// timeSuffixes mark units of time, all lower-is-better.
var timeSuffixes = []string{"-ns", "-ns/op", "-ns/sample", "-sec", "-sec/op", "-sec/sample"}

// DirectionOf returns which way unit is better: from a better= line in
// meta (unit metadata read from files; may be nil) if there is one, else
// from the project's units (steps/s higher, any time lower, …), else from benchfmt's built-in defaults (ns/op, sec/op,
// B/op and allocs/op are lower-is-better; MB/s and B/s higher). Units
// are compared tidied, so "ns/op" and "sec/op" are one unit, as are
// "ttfb-ns" and "ttfb-sec".
func DirectionOf(unit string, meta benchfmt.UnitMetadataMap) Direction {
	if meta.Get(unit, "better") != nil {
		return Direction(meta.GetBetter(unit))
	}
	if d, ok := TableDirection(unit); ok {
		return d
	}
	return Direction(benchfmt.UnitMetadataMap(nil).GetBetter(tidy(unit)))
}

// TableDirection is unit's direction in the project's unit table alone
// (not benchfmt's defaults): the Unit lines the writer adds.
func TableDirection(unit string) (Direction, bool) {
	if d, ok := units[unit]; ok {
		return d, true
	}
	t := tidy(unit)
	for u, d := range units {
		if tidy(u) == t {
			return d, true
		}
	}
	for _, suf := range timeSuffixes {
		if strings.HasSuffix(unit, suf) || strings.HasSuffix(t, suf) {
			return LowerIsBetter, true
		}
	}
	return NoDirection, false
}

func tidy(unit string) string {
	_, t := benchunit.Tidy(1, unit)
	return t
}

// TrustedDirection is unit's direction as the gate and the history
// take it: KnownDirection where headspace's rules know the unit (a file's
// Unit line cannot turn it), else DirectionOf the file's unit metadata.
func TrustedDirection(unit string, meta benchfmt.UnitMetadataMap) Direction {
	if d, ok := KnownDirection(unit); ok {
		return d
	}
	return DirectionOf(unit, meta)
}

// KnownDirection returns which way unit is better by headspace's own
// rules alone, ignoring any Unit line of a file: the project's unit table
// (steps/s higher, every time lower, …), else benchfmt's built-in
// defaults (ns/op, sec/op, B/op, allocs/op lower; MB/s, B/s higher). ok
// is false for a unit neither knows. The gate takes a known unit's
// direction from here and refuses a file that declares the other one.
func KnownDirection(unit string) (d Direction, ok bool) {
	if d, ok := TableDirection(unit); ok && d != NoDirection {
		return d, true
	}
	if d := Direction(benchfmt.UnitMetadataMap(nil).GetBetter(tidy(unit))); d != NoDirection {
		return d, true
	}
	return NoDirection, false
}
