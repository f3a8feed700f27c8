package timeline

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// sample is a small pipeline: two loaders feeding a model that idles
// between batches, plus a track that only appears in the spans.
func sample() *Timeline {
	return &Timeline{
		Name:   "sample",
		Tracks: []string{"loader 0", "loader 1", "model"},
		Spans: []Span{
			{Track: "loader 0", Label: "load", Start: 0, End: 200 * ms, Batch: 0, Color: 0},
			{Track: "loader 1", Label: "load", Start: 0, End: 250 * ms, Batch: 1, Color: 1},
			{Track: "loader 0", Label: "load", Start: 200 * ms, End: 400 * ms, Batch: 2, Color: 0},
			{Track: "model", Label: "step", Start: 200 * ms, End: 300 * ms, Batch: 0, Color: 0},
			{Track: "model", Label: "step", Start: 300 * ms, End: 350 * ms, Batch: 1, Color: 1},
			{Track: "model", Label: "step", Start: 400 * ms, End: 500 * ms, Batch: 2, Color: 0},
			{Track: "collate", Label: "", Start: 1500 * time.Microsecond, End: 1750 * time.Microsecond, Batch: -1, Color: -1},
		},
		End: 600 * ms,
	}
}

func TestDisplayTracks(t *testing.T) {
	tl := sample()
	tl.Tracks = append(tl.Tracks, "model") // duplicates are dropped
	want := []string{"loader 0", "loader 1", "model", "collate"}
	if got := tl.DisplayTracks(); !reflect.DeepEqual(got, want) {
		t.Errorf("DisplayTracks = %q, want %q", got, want)
	}
}

type event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args"`
}

func TestChromeTrace(t *testing.T) {
	tl := sample()
	var buf bytes.Buffer
	if err := tl.WriteChromeTrace(&buf); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []event `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatalf("trace does not parse: %v\n%s", err, buf.String())
	}
	names := map[int]string{} // tid → thread name
	var spans []event
	for _, e := range trace.TraceEvents {
		if e.Pid != 1 {
			t.Errorf("event %+v not in pid 1", e)
		}
		switch {
		case e.Ph == "M" && e.Name == "thread_name":
			name, _ := e.Args["name"].(string)
			if _, dup := names[e.Tid]; dup || name == "" {
				t.Errorf("bad thread_name %+v", e)
			}
			names[e.Tid] = name
		case e.Ph == "X":
			spans = append(spans, e)
		}
	}
	tracks := tl.DisplayTracks()
	if len(names) != len(tracks) {
		t.Fatalf("%d named threads, want one per track (%d): %v", len(names), len(tracks), names)
	}
	for i, tr := range tracks {
		if names[i+1] != tr {
			t.Errorf("tid %d named %q, want %q", i+1, names[i+1], tr)
		}
	}
	if len(spans) != len(tl.Spans) {
		t.Fatalf("%d complete events, want %d", len(spans), len(tl.Spans))
	}
	for i, e := range spans {
		s := tl.Spans[i]
		if names[e.Tid] != s.Track || e.Cat != s.Track || e.Dur == nil ||
			e.Ts != float64(s.Start)/1e3 || *e.Dur != float64(s.End-s.Start)/1e3 || e.Args["batch"] != float64(s.Batch) {
			t.Errorf("event %+v does not match span %+v", e, s)
		}
	}
	// The unlabelled span is named after its track; times are in µs.
	if last := spans[len(spans)-1]; last.Name != "collate" || last.Ts != 1500 || *last.Dur != 250 {
		t.Errorf("last event %+v", last)
	}
}

func TestChromeTraceEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := (&Timeline{}).WriteChromeTrace(&buf); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(buf.Bytes()) {
		t.Errorf("invalid JSON: %s", buf.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestChromeTraceWriteError(t *testing.T) {
	if err := sample().WriteChromeTrace(failWriter{}); err == nil {
		t.Error("write error not reported")
	}
}

func TestWritePNG(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		tl   *Timeline
		w, h int
	}{
		{"sample", sample(), 800, 300},
		{"small", sample(), 200, 120},
		{"empty", &Timeline{Name: "empty"}, 300, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".png")
			if err := tc.tl.WritePNG(path, tc.w, tc.h); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
				t.Errorf("image is %v, want %dx%d", b, tc.w, tc.h)
			}
		})
	}
	noTemp(t, dir)
}

func TestWriteSVG(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sample.svg")
	if err := sample().WriteSVG(path, 800, 300); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || !(bytes.HasPrefix(b, []byte("<?xml")) || bytes.HasPrefix(b, []byte("<svg"))) {
		t.Fatalf("not an SVG: %.100q", b)
	}
	// Well-formed XML whose root element is svg.
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	for _, tr := range sample().DisplayTracks() {
		if !bytes.Contains(b, []byte(tr)) {
			t.Errorf("SVG lacks the label of track %q", tr)
		}
	}
	noTemp(t, dir)
}

func TestBadTimeline(t *testing.T) {
	dir := t.TempDir()
	bad := sample()
	bad.Spans = append(bad.Spans, Span{Track: "model", Start: time.Second, End: 0})
	path := filepath.Join(dir, "bad.png")
	if err := bad.WritePNG(path, 400, 200); err == nil {
		t.Error("WritePNG accepted a span ending before it starts")
	}
	if err := bad.WriteSVG(filepath.Join(dir, "bad.svg"), 400, 200); err == nil {
		t.Error("WriteSVG accepted a span ending before it starts")
	}
	if err := bad.WriteChromeTrace(io.Discard); err == nil {
		t.Error("WriteChromeTrace accepted a span ending before it starts")
	}
	if err := sample().WritePNG(path, 0, 100); err == nil {
		t.Error("WritePNG accepted width 0")
	}
	if err := sample().WritePNG(filepath.Join(dir, "missing", "x.png"), 100, 100); err == nil {
		t.Error("WritePNG into a missing directory succeeded")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("failed writes left %s: %v", path, err)
	}
	noTemp(t, dir)
}

func noTemp(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestGaps(t *testing.T) {
	span := func(track string, start, end int) Span {
		return Span{Track: track, Start: time.Duration(start) * ms, End: time.Duration(end) * ms, Batch: -1, Color: -1}
	}
	gap := func(start, end, n int) Gap {
		return Gap{Start: time.Duration(start) * ms, End: time.Duration(end) * ms, Spans: n}
	}
	for _, tc := range []struct {
		name  string
		spans []Span
		end   int
		min   time.Duration
		want  []Gap
	}{
		{"empty track", nil, 100, 0, []Gap{gap(0, 100, 0)}},
		{"empty timeline", nil, 0, 0, nil},
		{"busy throughout", []Span{span("m", 0, 50), span("m", 50, 100)}, 100, 0, nil},
		{"leading, middle and trailing",
			[]Span{span("m", 10, 20), span("m", 20, 30), span("m", 50, 60), span("x", 30, 50)}, 100, 0,
			[]Gap{gap(0, 10, 0), gap(30, 50, 2), gap(60, 100, 1)}},
		{"short gaps do not split runs",
			[]Span{span("m", 0, 10), span("m", 11, 20), span("m", 40, 50), span("m", 51, 60)}, 60, 5 * ms,
			[]Gap{gap(20, 40, 2)}},
		{"overlaps merge, order does not matter",
			[]Span{span("m", 30, 40), span("m", 0, 25), span("m", 5, 10), span("m", 20, 28)}, 40, 0,
			[]Gap{gap(28, 30, 3)}},
		{"span past End", []Span{span("m", 50, 150)}, 100, 0, []Gap{gap(0, 50, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &Timeline{Spans: tc.spans, End: time.Duration(tc.end) * ms}
			if got := tl.Gaps("m", tc.min); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Gaps = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestColor(t *testing.T) {
	if Color(-1) != Neutral || Color(0) != Color(NumColors) || Color(0) == Color(1) {
		t.Error("Color does not cycle the palette")
	}
	for i := range NumColors {
		if Color(i) == Neutral {
			t.Errorf("colour %d is the neutral colour", i)
		}
	}
}
