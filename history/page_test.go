package history

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestSampleExp: the page's samples are integers × 10^exp, exp the
// finest digit SampleDigits significant digits need, no finer than 15
// digits below the largest value.
func TestSampleExp(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		exp  int
	}{
		{"whole", []float64{120, 3400, 5}, 0},
		{"decimals", []float64{1.5, 2.25, 100}, -2},
		{"six digits of a tidied time", []float64{19950.1 * 1e-9, 20112.3 * 1e-9}, -10},
		{"beyond SampleDigits rounds", []float64{1.0 / 3}, -12},
		{"negative and zero", []float64{-0.5, 0, 7}, -1},
		{"all zero", []float64{0, 0}, 0},
		{"15 digits below the largest", []float64{1e6, 1e-12}, 6 - 14},
	} {
		if got := sampleExp(tc.xs); got != tc.exp {
			t.Errorf("%s: sampleExp(%v) = %d, want %d", tc.name, tc.xs, got, tc.exp)
		}
	}
}

// TestEncodeSamples decodes encodeSamples' varints as page.js does and
// gets every point's run and samples back, to SampleDigits digits.
func TestEncodeSamples(t *testing.T) {
	points := []Point{
		{Run: 0, Values: []float64{19950.1e-9, 19980.7e-9, 20112.3e-9}},
		{Run: 3, Values: []float64{18000.5e-9}},
		{Run: 4, Values: []float64{-1e-7, 0, 21000e-9, 21000e-9}},
	}
	blob, exp := encodeSamples(nil, points)
	pos := 0
	uv := func() uint64 { v, n := binary.Uvarint(blob[pos:]); pos += n; return v }
	run, first := -1, int64(0)
	for _, want := range points {
		run += int(uv())
		n := int(uv())
		if run != want.Run || n != len(want.Values) {
			t.Fatalf("point at run %d of %d samples, want run %d of %d", run, n, want.Run, len(want.Values))
		}
		var cur int64
		for i := range n {
			if i == 0 {
				d, k := binary.Varint(blob[pos:])
				pos += k
				first += d
				cur = first
			} else {
				cur += int64(uv())
			}
			got := float64(cur) / math.Pow(10, float64(-exp))
			if w := want.Values[i]; math.Abs(got-w) > 1e-12*math.Abs(w) {
				t.Errorf("run %d sample %d: %v, want %v", run, i, got, w)
			}
		}
	}
	if pos != len(blob) {
		t.Errorf("%d bytes decoded of %d", pos, len(blob))
	}
}
