package pipeline

import (
	"sync"
	"time"
)

// Recorder keeps the start and end of every task of every worker, for
// timelines of real runs. Each worker appends to its own Track, so recording
// takes no lock and, once a track's slice has grown, allocates nothing; a
// track is only read after its pipeline has been closed.
type Recorder struct {
	start time.Time

	mu     sync.Mutex
	tracks []*Track
}

// NewRecorder returns a recorder whose times count from now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Span is one task: the item it worked on and when, from the recorder's start.
type Span struct {
	Index      int
	Start, End time.Duration
}

// Track is the spans of one worker of one stage, in the order they ran.
type Track struct {
	Stage  string
	Worker int
	Spans  []Span
	origin time.Time
}

// Track returns a new track for one goroutine: stage and worker name it. A
// nil Recorder returns a nil Track, whose Add does nothing, so recording
// costs one nil check when it is off.
func (r *Recorder) Track(stage string, worker int) *Track {
	if r == nil {
		return nil
	}
	t := &Track{Stage: stage, Worker: worker, Spans: make([]Span, 0, 1024), origin: r.start}
	r.mu.Lock()
	r.tracks = append(r.tracks, t)
	r.mu.Unlock()
	return t
}

func (r *Recorder) track(stage string, worker int) *Track { return r.Track(stage, worker) }

// Add records one task. Only the goroutine that owns the track calls it.
func (t *Track) Add(index int, start, end time.Time) {
	if t == nil {
		return
	}
	t.Spans = append(t.Spans, Span{Index: index, Start: start.Sub(t.origin), End: end.Sub(t.origin)})
}

func (t *Track) add(index int, start, end time.Time) { t.Add(index, start, end) }

// Tracks returns every track recorded so far. Call it after the pipeline
// (and any other goroutine holding a track) has stopped.
func (r *Recorder) Tracks() []*Track {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Track(nil), r.tracks...)
}
