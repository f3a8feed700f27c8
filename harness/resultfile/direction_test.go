package resultfile_test

import (
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestTrustedDirection: a unit headspace knows keeps its direction
// whatever a file's Unit line says; an unknown one takes the line's.
func TestTrustedDirection(t *testing.T) {
	meta := benchfmt.UnitMetadataMap{}
	for _, u := range []string{"steps/s", "widgets"} {
		meta[benchfmt.UnitMetadataKey{Unit: u, Key: "better"}] = &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: u, Key: "better"}, Value: "lower"}
	}
	for _, tc := range []struct {
		unit string
		meta benchfmt.UnitMetadataMap
		want resultfile.Direction
	}{
		{"steps/s", meta, resultfile.HigherIsBetter},
		{"ttfb-ns", nil, resultfile.LowerIsBetter},
		{"widgets", meta, resultfile.LowerIsBetter},
		{"widgets", nil, resultfile.NoDirection},
	} {
		if got := resultfile.TrustedDirection(tc.unit, tc.meta); got != tc.want {
			t.Errorf("TrustedDirection(%s, meta %v) = %v, want %v", tc.unit, tc.meta != nil, got, tc.want)
		}
	}
}
