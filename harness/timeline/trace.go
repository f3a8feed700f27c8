package timeline

import (
	"bufio"
	"encoding/json"
	"io"
	"time"
)

// traceEvent is one Chrome trace event
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// WriteChromeTrace writes the timeline as Chrome trace-event JSON, an
// object whose "traceEvents" array holds, in order: a process_name metadata
// event for pid 1 (the timeline's Name), then for each track in display
// order a thread_name and a thread_sort_index metadata event ("ph":"M",
// tid = display index + 1), then one complete event ("ph":"X") per span
// with name = Label, cat = Track, ts and dur in microseconds and the batch
// and colour in args. The output opens in Perfetto and chrome://tracing.
func (t *Timeline) WriteChromeTrace(w io.Writer) error {
	if err := t.Validate(); err != nil {
		return err
	}
	tracks := t.DisplayTracks()
	tid := make(map[string]int, len(tracks))
	bw := bufio.NewWriter(w)
	first := true
	emit := func(ev traceEvent) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		sep := ",\n"
		if first {
			sep, first = "\n", false
		}
		bw.WriteString(sep)
		_, err = bw.Write(b) // a bufio.Writer keeps its first error
		return err
	}
	if _, err := bw.WriteString(`{"displayTimeUnit":"ms","traceEvents":[`); err != nil {
		return err
	}
	name := t.Name
	if name == "" {
		name = "timeline"
	}
	if err := emit(traceEvent{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": name}}); err != nil {
		return err
	}
	for i, tr := range tracks {
		tid[tr] = i + 1
		if err := emit(traceEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: i + 1, Args: map[string]any{"name": tr}}); err != nil {
			return err
		}
		if err := emit(traceEvent{Name: "thread_sort_index", Ph: "M", Pid: 1, Tid: i + 1, Args: map[string]any{"sort_index": i}}); err != nil {
			return err
		}
	}
	for _, s := range t.Spans {
		dur := micros(s.End - s.Start)
		args := map[string]any{"batch": s.Batch}
		if s.Color >= 0 {
			args["color"] = s.Color
		}
		name := s.Label
		if name == "" {
			name = s.Track
		}
		if err := emit(traceEvent{Name: name, Cat: s.Track, Ph: "X", Ts: micros(s.Start), Dur: &dur, Pid: 1, Tid: tid[s.Track], Args: args}); err != nil {
			return err
		}
	}
	if _, err := bw.WriteString("]}\n"); err != nil {
		return err
	}
	return bw.Flush()
}
