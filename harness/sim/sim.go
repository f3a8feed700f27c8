package sim

import (
	"fmt"
	"time"

	"github.com/headspace-bench/headspace/harness/timeline"
)

// EventKind says what happened in an Event.
type EventKind uint8

const (
	// LoadStart: a loader started loading Batch; Until is when it will
	// finish (possibly after Config.Duration).
	LoadStart EventKind = iota
	// LoadEnd: Batch is loaded and joins the ready queue.
	LoadEnd
	// StepStart: the model took Batch off the ready queue; Until is when
	// its step will finish (possibly after Config.Duration).
	StepStart
	// StepEnd: the model finished its step on Batch.
	StepEnd
)

// String returns the kind's name, e.g. "load-start".
func (k EventKind) String() string {
	switch k {
	case LoadStart:
		return "load-start"
	case LoadEnd:
		return "load-end"
	case StepStart:
		return "step-start"
	case StepEnd:
		return "step-end"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one entry of a simulation's event log. Events are in time order;
// at equal times, in the order the simulation processed them (see the
// package documentation).
type Event struct {
	// At is when the event happened.
	At time.Duration
	// Kind is what happened.
	Kind EventKind
	// Batch is the batch index.
	Batch int
	// Loader is the loader the batch is assigned to (Batch mod Loaders).
	Loader int
	// Until is, for LoadStart and StepStart, the scheduled end of the load
	// or step; zero otherwise.
	Until time.Duration
}

// Result is the outcome of a simulation.
type Result struct {
	// Config is the configuration simulated, with defaults filled in.
	Config Config
	// Batches is the number of steps the model completed by Duration
	// (a step ending exactly at Duration counts).
	Batches int
	// Loaded is the number of batches whose load finished by Duration.
	Loaded int
	// Consumed is the number of batches the model took off the ready queue:
	// Batches, plus one if a step was in progress at Duration.
	Consumed int
	// Queued is the number of batches ready (loaded, not consumed) at
	// Duration: Loaded = Consumed + Queued.
	Queued int
	// Loading is the number of loads in progress at Duration.
	Loading int
	// ModelIdle is the fraction of [0, Duration] in which the model was not
	// stepping.
	ModelIdle float64
	// MeanQueueLength is the time-weighted mean number of ready batches
	// over [0, Duration].
	MeanQueueLength float64
	// MaxQueueLength is the largest number of ready batches at any time.
	MaxQueueLength int
	// Timeline holds one track per loader ("loader 0", …) and one "model"
	// track. Loads are labelled "load", steps "step"; each span's Color is
	// the loader of its batch. Activities in progress at Duration are cut
	// at Duration.
	Timeline *timeline.Timeline
	// Events is the event log, in time order.
	Events []Event
}

// ModelTrack is the name of the model's track in Result.Timeline.
const ModelTrack = "model"

// LoaderTrack returns the name of loader i's track in Result.Timeline.
func LoaderTrack(i int) string { return fmt.Sprintf("loader %d", i) }

// worker is one loader.
type worker struct {
	pending []int         // assigned batches not yet started, in index order
	busy    bool          // loading cur
	cur     int           // batch being loaded
	start   time.Duration // when the load of cur started
	end     time.Duration // when it finishes
}

// Random streams: one for load times, one for step times, so that each
// batch's load time depends only on the seed and its index.
const (
	loadStream = 0x6c6f6164 // "load"
	stepStream = 0x73746570 // "step"
)

// Run simulates the pipeline described by c. It returns an error, and never
// panics, for an invalid configuration.
func Run(c Config) (*Result, error) {
	c, err := c.normalize()
	if err != nil {
		return nil, err
	}
	s := &state{
		c:     c,
		loads: newSampler(c.Seed, loadStream, c.LoadDist, c.Load, c.LoadStddev),
		steps: newSampler(c.Seed, stepStream, Normal, c.Step, c.StepStddev),
		w:     make([]worker, c.Loaders),
		r: &Result{Config: c, Timeline: &timeline.Timeline{
			Name: c.String(),
			End:  c.Duration,
		}},
	}
	for i := range c.Loaders {
		s.r.Timeline.Tracks = append(s.r.Timeline.Tracks, LoaderTrack(i))
	}
	s.r.Timeline.Tracks = append(s.r.Timeline.Tracks, ModelTrack)
	s.run()
	return s.r, nil
}

// state is a simulation in progress.
type state struct {
	c            Config
	loads, steps *sampler
	w            []worker
	r            *Result

	now        time.Duration
	sent       int             // batches dispatched to workers: 0 … sent-1
	loadTime   []time.Duration // load time of each dispatched batch
	ready      map[int]bool    // loaded, not consumed
	next       int             // next batch the model will take
	modelBusy  bool
	stepStart  time.Duration
	stepEnd    time.Duration
	busyTime   time.Duration
	queueArea  float64 // ∫ len(ready) dt, in batch·ns
	lastChange time.Duration
}

func (s *state) log(e Event) { s.r.Events = append(s.r.Events, e) }

// accountQueue adds the ready-queue length up to now to the time integral;
// call it before the length changes.
func (s *state) accountQueue() {
	s.queueArea += float64(len(s.ready)) * float64(s.now-s.lastChange)
	s.lastChange = s.now
}

// dispatch assigns the next batch index to its worker, round-robin, and
// starts loading it if the worker is idle.
func (s *state) dispatch() {
	b := s.sent
	s.sent++
	s.loadTime = append(s.loadTime, s.loads.next())
	w := &s.w[b%len(s.w)]
	w.pending = append(w.pending, b)
	s.startLoad(b % len(s.w))
}

// startLoad starts worker i's next pending batch if it is idle and time
// remains.
func (s *state) startLoad(i int) {
	w := &s.w[i]
	if w.busy || len(w.pending) == 0 || s.now >= s.c.Duration {
		return
	}
	w.busy, w.cur = true, w.pending[0]
	w.pending = w.pending[1:]
	w.start, w.end = s.now, s.now+s.loadTime[w.cur]
	s.log(Event{At: s.now, Kind: LoadStart, Batch: w.cur, Loader: i, Until: w.end})
}

// tryStep starts the model on the next batch if it is idle, the batch is
// ready and time remains. Taking a batch dispatches a new index, as PyTorch
// does when a batch is yielded.
func (s *state) tryStep() {
	if s.modelBusy || !s.ready[s.next] || s.now >= s.c.Duration {
		return
	}
	s.accountQueue()
	b := s.next
	delete(s.ready, b)
	s.next++
	s.r.Consumed++
	s.modelBusy = true
	s.stepStart, s.stepEnd = s.now, s.now+s.steps.next()
	s.log(Event{At: s.now, Kind: StepStart, Batch: b, Loader: b % len(s.w), Until: s.stepEnd})
	s.dispatch()
}

func (s *state) run() {
	c := s.c
	s.ready = make(map[int]bool)
	for range c.Prefetch * c.Loaders {
		s.dispatch()
	}
	for {
		t, found := s.nextEvent()
		if !found || t > c.Duration {
			break
		}
		s.now = t
		s.finish(t)
		s.tryStep()
	}
	s.closeBooks()
}

// nextEvent is the earliest load or step to finish, if any.
func (s *state) nextEvent() (t time.Duration, found bool) {
	for i := range s.w {
		if w := &s.w[i]; w.busy && (!found || w.end < t) {
			t, found = w.end, true
		}
	}
	if s.modelBusy && (!found || s.stepEnd < t) {
		t, found = s.stepEnd, true
	}
	return t, found
}

// finish ends what finishes at t: loads, in worker order, each worker
// starting its next pending batch at once; then the step.
func (s *state) finish(t time.Duration) {
	for i := range s.w {
		w := &s.w[i]
		if !w.busy || w.end != t {
			continue
		}
		s.accountQueue()
		w.busy = false
		s.ready[w.cur] = true
		s.r.Loaded++
		s.r.MaxQueueLength = max(s.r.MaxQueueLength, len(s.ready))
		s.log(Event{At: t, Kind: LoadEnd, Batch: w.cur, Loader: i})
		s.span(LoaderTrack(i), "load", w.start, t, w.cur)
		s.startLoad(i)
	}
	if s.modelBusy && s.stepEnd == t {
		s.modelBusy = false
		s.r.Batches++
		s.busyTime += t - s.stepStart
		b := s.next - 1
		s.log(Event{At: t, Kind: StepEnd, Batch: b, Loader: b % len(s.w)})
		s.span(ModelTrack, "step", s.stepStart, t, b)
	}
}

// closeBooks closes the books at Duration, cutting activities in
// progress, and sets the result's idle share and queue figures.
func (s *state) closeBooks() {
	c := s.c
	s.now = c.Duration
	s.accountQueue()
	for i := range s.w {
		if w := &s.w[i]; w.busy {
			s.r.Loading++
			s.span(LoaderTrack(i), "load", w.start, c.Duration, w.cur)
		}
	}
	if s.modelBusy {
		s.busyTime += c.Duration - s.stepStart
		s.span(ModelTrack, "step", s.stepStart, c.Duration, s.next-1)
	}
	s.r.Queued = len(s.ready)
	s.r.ModelIdle = 1 - float64(s.busyTime)/float64(c.Duration)
	s.r.MeanQueueLength = s.queueArea / float64(c.Duration)
}

func (s *state) span(track, label string, start, end time.Duration, b int) {
	s.r.Timeline.Spans = append(s.r.Timeline.Spans, timeline.Span{
		Track: track, Label: label, Start: start, End: end, Batch: b, Color: b % len(s.w),
	})
}

// String describes the configuration in the CLI's terms.
func (c Config) String() string {
	dist := c.LoadDist
	if dist == "" {
		dist = Constant
	}
	s := fmt.Sprintf("%d loaders, load %v", c.Loaders, c.Load)
	if dist != Constant || c.LoadStddev != 0 {
		s += fmt.Sprintf(" %s±%v", dist, c.LoadStddev)
	}
	s += fmt.Sprintf(", step %v", c.Step)
	if c.StepStddev != 0 {
		s += fmt.Sprintf("±%v", c.StepStddev)
	}
	return s + fmt.Sprintf(", %v, prefetch %d, seed %d", c.Duration, c.Prefetch, c.Seed)
}
