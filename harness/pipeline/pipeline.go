package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// ErrClosed is the cause given to a pipeline's context when Close stops it.
var ErrClosed = errors.New("pipeline: closed")

// StageError is the first error of a pipeline: which stage failed on which item.
type StageError struct {
	Stage string // the stage's name
	Index int    // the item's index, from the source
	Err   error
}

func (e *StageError) Error() string {
	return fmt.Sprintf("stage %s, item %d: %v", e.Stage, e.Index, e.Err)
}

func (e *StageError) Unwrap() error { return e.Err }

// Pipeline owns the goroutines of a chain of stages and their queues.
type Pipeline struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	err    error
	stages []*stageStats
	queues []*queueStats
	closed bool
	rec    *Recorder
	cpu    bool // MeasureCPU: time each Map and Aggregate task's thread CPU
}

// New returns an empty pipeline whose stages stop when ctx is done.
func New(ctx context.Context) *Pipeline {
	ctx, cancel := context.WithCancelCause(ctx)
	return &Pipeline{ctx: ctx, cancel: cancel}
}

// Record makes every stage added after it record one span per task into r.
func (p *Pipeline) Record(r *Recorder) { p.rec = r }

// ErrNoCPUClock is MeasureCPU's error where threads have no CPU clock to
// read (every system but Linux).
var ErrNoCPUClock = errors.New("pipeline: per-stage CPU time needs a per-thread CPU clock (Linux only)")

// MeasureCPU makes every Map and Aggregate stage added after it measure
// the CPU time of its tasks (StageStats.CPU), besides their wall time: each
// worker goroutine is locked to its OS thread and reads the thread's CPU
// clock around each task. That costs a system call per task and a thread
// hand-off whenever a worker blocks on a queue (BenchmarkMeasureCPU
// measures both), so it is off unless asked for. It returns ErrNoCPUClock,
// and changes nothing, where the clock does not exist.
func (p *Pipeline) MeasureCPU() error {
	if !cpuSupported {
		return ErrNoCPUClock
	}
	p.cpu = true
	return nil
}

// fail records the first error and stops every stage.
func (p *Pipeline) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.cancel(err)
}

// Err is the first error a stage returned, or nil.
func (p *Pipeline) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// stopped is why the pipeline stopped: its first stage error, else its
// context's cause.
func (p *Pipeline) stopped() error {
	if err := p.Err(); err != nil {
		return err
	}
	return context.Cause(p.ctx)
}

// Close stops every stage, waits for all the pipeline's goroutines to return
// and reports the first stage error, if any. It is safe to call twice.
func (p *Pipeline) Close() error {
	p.cancel(ErrClosed)
	p.wg.Wait()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return p.Err()
}

// Stats returns a snapshot of every stage and queue, in the order they were added.
func (p *Pipeline) Stats() Stats {
	now := time.Now()
	p.mu.Lock()
	stages, queues := p.stages, p.queues
	p.mu.Unlock()
	var s Stats
	for _, st := range stages {
		s.Stages = append(s.Stages, st.snapshot())
	}
	for _, q := range queues {
		s.Queues = append(s.Queues, q.snapshot(now))
	}
	return s
}

func (p *Pipeline) addStage(name string, workers, capacity int) (*stageStats, *queueStats) {
	st := &stageStats{name: name, workers: workers, cpu: p.cpu}
	q := newQueueStats(name, capacity, time.Now())
	p.mu.Lock()
	p.stages = append(p.stages, st)
	p.queues = append(p.queues, q)
	p.mu.Unlock()
	return st, q
}

// Item is a value travelling through the pipeline with its index from the source.
type Item[T any] struct {
	Index int
	Value T
}

// Queue is a bounded queue between two stages; the last stage's queue is
// what the consumer reads with Next.
type Queue[T any] struct {
	p     *Pipeline
	ch    chan Item[T]
	stats *queueStats
}

// put sends it, blocking while the queue is full. It reports false when the
// pipeline is stopping.
func (q *Queue[T]) put(it Item[T]) bool { return q.putWaited(it, 0) }

// putWaited is put for a producer that already waited for room elsewhere
// (a window) for the given time.
func (q *Queue[T]) putWaited(it Item[T], wait time.Duration) bool {
	select {
	case q.ch <- it:
	default:
		t0 := time.Now()
		select {
		case q.ch <- it:
			wait += time.Since(t0)
		case <-q.p.ctx.Done():
			return false
		}
	}
	q.stats.put(time.Now(), wait)
	return true
}

// get receives the next item. ok is false when the queue is closed and
// drained, or the pipeline is stopping.
func (q *Queue[T]) get() (it Item[T], ok bool) {
	var wait time.Duration
	select {
	case it, ok = <-q.ch:
	default:
		t0 := time.Now()
		select {
		case it, ok = <-q.ch:
			wait = time.Since(t0)
		case <-q.p.ctx.Done():
			return it, false
		}
	}
	if ok {
		q.stats.get(time.Now(), wait)
	}
	return it, ok
}

// Next returns the next item for the pipeline's consumer: io.EOF once the
// last stage has finished and the queue is drained, the pipeline's first
// stage error if a stage failed, or ctx's error.
func (q *Queue[T]) Next(ctx context.Context) (Item[T], error) {
	var wait time.Duration
	var it Item[T]
	var ok bool
	if q.p.ctx.Err() != nil {
		return it, q.p.stopped()
	}
	if err := ctx.Err(); err != nil {
		return it, err
	}
	select {
	case it, ok = <-q.ch:
	default:
		t0 := time.Now()
		select {
		case it, ok = <-q.ch:
			wait = time.Since(t0)
		case <-q.p.ctx.Done():
			return it, q.p.stopped()
		case <-ctx.Done():
			return it, ctx.Err()
		}
	}
	if !ok {
		if q.p.Err() != nil || q.p.ctx.Err() != nil {
			return it, q.p.stopped()
		}
		return it, io.EOF
	}
	q.stats.get(time.Now(), wait)
	return it, nil
}

func positive(what string, n int) error {
	if n <= 0 {
		return fmt.Errorf("pipeline: %s %d must be positive", what, n)
	}
	return nil
}

// Source adds the first stage: it emits items 0..n-1, item i being gen(i),
// into a queue of the given capacity.
func Source[T any](p *Pipeline, name string, n, capacity int, gen func(i int) T) (*Queue[T], error) {
	return WindowedSource(p, name, n, capacity, nil, gen)
}

// Window bounds how many items are in flight between a source and the
// stage that returns them: the source takes a token per item and waits
// while none is left; Release gives tokens back. It is DataLoader's
// prefetch_factor made general.
type Window struct{ ch chan struct{} }

// NewWindow returns a window of size tokens, held of which are taken at
// once (to be returned by a later Release: a narrower window at start).
func NewWindow(size, held int) (*Window, error) {
	if size <= 0 || held < 0 || held >= size {
		return nil, fmt.Errorf("pipeline: window of %d with %d held: want 0 <= held < size", size, held)
	}
	w := &Window{ch: make(chan struct{}, size)}
	for range held {
		w.ch <- struct{}{}
	}
	return w, nil
}

// Release returns n tokens. Only the stage that consumes the window's items
// calls it, never more often than items (and held tokens) were taken.
func (w *Window) Release(n int) {
	for range n {
		<-w.ch
	}
}

// WindowedSource is Source with a window (nil for none): the source waits
// for a token before making each item. That wait is flow control, not work:
// it counts as the queue's put wait, not as the stage's task time.
func WindowedSource[T any](p *Pipeline, name string, n, capacity int, w *Window, gen func(i int) T) (*Queue[T], error) {
	if err := positive("source capacity", capacity); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("pipeline: source length %d is negative", n)
	}
	st, qs := p.addStage(name, 1, capacity)
	out := &Queue[T]{p: p, ch: make(chan Item[T], capacity), stats: qs}
	p.wg.Go(func() {
		defer func() { close(out.ch); qs.close(time.Now()) }()
		for i := range n {
			var waited time.Duration
			if w != nil {
				select {
				case w.ch <- struct{}{}:
				default:
					t := time.Now()
					select {
					case w.ch <- struct{}{}:
						waited = time.Since(t)
					case <-p.ctx.Done():
						return
					}
				}
			}
			t0 := time.Now()
			v := gen(i)
			st.record(time.Since(t0), false)
			if !out.putWaited(Item[T]{Index: i, Value: v}, waited) {
				return
			}
		}
	})
	return out, nil
}

// Map adds a stage of workers goroutines, each taking items from in and
// putting fn's result into the returned queue of the given capacity. Items
// leave in completion order, keeping their index. The first error stops the
// pipeline as a *StageError naming this stage and the item.
func Map[In, Out any](p *Pipeline, name string, in *Queue[In], workers, capacity int, fn func(ctx context.Context, it Item[In]) (Out, error)) (*Queue[Out], error) {
	if err := positive(name+" workers", workers); err != nil {
		return nil, err
	}
	if err := positive(name+" capacity", capacity); err != nil {
		return nil, err
	}
	st, qs := p.addStage(name, workers, capacity)
	out := &Queue[Out]{p: p, ch: make(chan Item[Out], capacity), stats: qs}
	var done sync.WaitGroup
	for w := range workers {
		done.Add(1)
		p.wg.Go(func() {
			defer done.Done()
			if st.cpu {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			track := p.rec.track(name, w)
			pprof.Do(p.ctx, pprof.Labels("stage", name), func(ctx context.Context) {
				for {
					it, ok := in.get()
					if !ok {
						return
					}
					var v Out
					if err := st.task(ctx, track, it.Index, func() (err error) {
						v, err = fn(ctx, it)
						return err
					}); err != nil {
						p.fail(err)
						return
					}
					if !out.put(Item[Out]{Index: it.Index, Value: v}) {
						return
					}
				}
			})
		})
	}
	p.wg.Go(func() {
		done.Wait()
		close(out.ch)
		qs.close(time.Now())
	})
	return out, nil
}

// Emitter passes an Aggregate stage's outputs downstream.
type Emitter[Out any] struct {
	out *Queue[Out]
}

// Emit puts one item into the stage's output queue. It returns false when
// the pipeline is stopping; the stage function should then return.
func (e *Emitter[Out]) Emit(it Item[Out]) bool { return e.out.put(it) }

// Aggregate adds a single-goroutine stage that may emit any number of items
// per input (batching: many samples in, one batch out). fn is called for
// every input; flush, if not nil, once after the last, to emit what is left.
// Errors stop the pipeline as a *StageError naming the stage and the item
// (index -1 for flush).
func Aggregate[In, Out any](p *Pipeline, name string, in *Queue[In], capacity int,
	fn func(ctx context.Context, it Item[In], e *Emitter[Out]) error,
	flush func(ctx context.Context, e *Emitter[Out]) error) (*Queue[Out], error) {
	if err := positive(name+" capacity", capacity); err != nil {
		return nil, err
	}
	st, qs := p.addStage(name, 1, capacity)
	out := &Queue[Out]{p: p, ch: make(chan Item[Out], capacity), stats: qs}
	e := &Emitter[Out]{out: out}
	p.wg.Go(func() {
		defer func() { close(out.ch); qs.close(time.Now()) }()
		if st.cpu {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
		track := p.rec.track(name, 0)
		pprof.Do(p.ctx, pprof.Labels("stage", name), func(ctx context.Context) {
			for {
				it, ok := in.get()
				if !ok {
					break
				}
				if err := st.task(ctx, track, it.Index, func() error { return fn(ctx, it, e) }); err != nil {
					p.fail(err)
					return
				}
				if ctx.Err() != nil {
					return
				}
			}
			if flush != nil && ctx.Err() == nil {
				if err := flush(ctx, e); err != nil {
					p.fail(&StageError{Stage: name, Index: -1, Err: err})
				}
			}
		})
	})
	return out, nil
}
