package history

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"
	"time"
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
		{"beyond SampleDigits rounds", []float64{1.0 / 3}, -6},
		{"full precision of a noisy rate", []float64{51.234567890123, 49.876543210987}, -4},
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

// TestPageSamplesPerSeries: the page holds each series' samples as a blob
// of its own (so a chart decodes only its own): at its At and Len in the
// sample text, base64 of raw DEFLATE of Raw bytes, encodeSamples' bytes.
func TestPageSamplesPerSeries(t *testing.T) {
	h, err := Load(context.Background(), seededStore(t, 12, 6, "Test CPU", "Other CPU"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := h.WritePage(context.Background(), &page, time.Now()); err != nil {
		t.Fatal(err)
	}
	section := func(id string) string {
		start := strings.Index(page.String(), `id="`+id+`">`)
		if start < 0 {
			t.Fatalf("the page has no #%s", id)
		}
		rest := page.String()[start+len(id)+6:]
		return rest[:strings.Index(rest, "</script>")]
	}
	var d pageData
	if err := json.Unmarshal([]byte(section("data")), &d); err != nil {
		t.Fatal(err)
	}
	text := section("samples")
	n := 0
	for mi, m := range h.Machines {
		for si, s := range m.Series {
			ps := d.Machines[mi].Series[si]
			z, err := base64.StdEncoding.DecodeString(text[ps.At : ps.At+ps.Len])
			if err != nil {
				t.Fatalf("%s %s: %v", s.Benchmark, s.Unit, err)
			}
			got, err := io.ReadAll(flate.NewReader(bytes.NewReader(z)))
			if err != nil {
				t.Fatalf("%s %s: %v", s.Benchmark, s.Unit, err)
			}
			want, exp := encodeSamples(nil, s.Points)
			if !bytes.Equal(got, want) || len(got) != ps.Raw || exp != ps.Exp || ps.Points != len(s.Points) {
				t.Errorf("%s %s: blob of %d bytes (raw %d, exp %d, %d points), want encodeSamples' %d (exp %d, %d points)",
					s.Benchmark, s.Unit, len(got), ps.Raw, ps.Exp, ps.Points, len(want), exp, len(s.Points))
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no series")
	}
}
