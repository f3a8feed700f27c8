package timeline

import (
	"fmt"
	"image/color"
	"sort"
	"time"
)

// Span is one activity on one track: a loader loading a batch, the model
// stepping on one.
type Span struct {
	// Track is the row the span belongs to, e.g. "loader 3" or "model".
	Track string
	// Label names the activity, e.g. the stage "load" or "step".
	Label string
	// Start and End bound the span, as offsets from the start of the run.
	Start, End time.Duration
	// Batch is the batch index the span worked on, or -1.
	Batch int
	// Color selects the fill colour (see Color); by convention the index of
	// the loader that produced Batch, or -1 for the neutral colour.
	Color int
}

// Timeline is a record of spans on named tracks.
type Timeline struct {
	// Name titles charts and names the process in traces.
	Name string
	// Tracks lists the tracks in display order, top to bottom. Tracks that
	// only appear in Spans are displayed after these.
	Tracks []string
	// Spans are the recorded activities, in any order.
	Spans []Span
	// End is the length of the run; charts span [0, End]. If End is before
	// the last span's end, the last span's end is used.
	End time.Duration
}

// Validate reports the first span that ends before it starts or starts
// before 0.
func (t *Timeline) Validate() error {
	for i, s := range t.Spans {
		if s.Start < 0 || s.End < s.Start {
			return fmt.Errorf("timeline: span %d (%s %q batch %d): bad interval [%v, %v]", i, s.Track, s.Label, s.Batch, s.Start, s.End)
		}
	}
	if t.End < 0 {
		return fmt.Errorf("timeline: negative end %v", t.End)
	}
	return nil
}

// DisplayTracks returns the tracks in display order: Tracks (without
// duplicates), then tracks that appear only in Spans, in order of first
// appearance.
func (t *Timeline) DisplayTracks() []string {
	seen := make(map[string]bool, len(t.Tracks))
	var out []string
	for _, tr := range t.Tracks {
		if !seen[tr] {
			seen[tr] = true
			out = append(out, tr)
		}
	}
	for _, s := range t.Spans {
		if !seen[s.Track] {
			seen[s.Track] = true
			out = append(out, s.Track)
		}
	}
	return out
}

// end returns the right edge of charts: End, or the last span end if later.
func (t *Timeline) end() time.Duration {
	e := t.End
	for _, s := range t.Spans {
		e = max(e, s.End)
	}
	return e
}

// Gap is an interval in which a track had no span.
type Gap struct {
	// Start and End bound the idle interval.
	Start, End time.Duration
	// Spans is the number of spans that started in the busy run this gap
	// ends: since the previous gap, or since time 0 for the first gap (0
	// when the track is idle from the start).
	Spans int
}

// Gaps returns the idle intervals of track within [0, End] that last at
// least min (and are not empty), in time order. Overlapping spans are merged
// into one busy interval. A leading gap (idle from 0 until the first span)
// and a trailing gap (idle from the last span until End) are included; a
// busy run still open at End, not followed by a gap, is not reported. An
// idle interval shorter than min does not split a busy run.
func (t *Timeline) Gaps(track string, min time.Duration) []Gap {
	var spans []Span
	for _, s := range t.Spans {
		if s.Track == track {
			spans = append(spans, s)
		}
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
	var gaps []Gap
	var cur time.Duration // end of the busy time seen so far
	n := 0                // spans started since the last gap
	add := func(start, end time.Duration) {
		if end > start && end-start >= min {
			gaps = append(gaps, Gap{Start: start, End: end, Spans: n})
			n = 0
		}
	}
	for _, s := range spans {
		if s.Start > cur {
			add(cur, s.Start)
		}
		n++
		cur = max(cur, s.End)
	}
	if end := t.end(); end > cur {
		add(cur, end)
	}
	return gaps
}

// palette is a qualitative palette: Tableau 10 without its grey, which
// would be confused with Neutral.
var palette = [...]color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0xe3, 0x77, 0xc2, 0xff}, // pink
	{0xbc, 0xbd, 0x22, 0xff}, // olive
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
}

// Neutral is the colour of spans with a negative Color index.
var Neutral = color.RGBA{0x55, 0x55, 0x55, 0xff}

// NumColors is the number of distinct colours Color cycles through.
const NumColors = len(palette)

// Color returns the fill colour for a Span's Color index: a qualitative
// palette cycled every NumColors indices, or Neutral for i < 0.
func Color(i int) color.RGBA {
	if i < 0 {
		return Neutral
	}
	return palette[i%len(palette)]
}
