package pipeline

import (
	"context"
	"math"
	"math/bits"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"
)

// histogram is a lock-free log-linear histogram of durations: 8 buckets per
// power of two, so a percentile read from it is within 1/16 (6.25%) of the
// true value. Recording is two atomic adds, so workers never contend on a lock.
// It is the one estimate outside internal/summary, which needs every value:
// a stage sees millions of items, and keeping them would allocate on the hot
// path.
type histogram struct {
	buckets [64 * 8]atomic.Uint64
}

func bucketOf(ns uint64) int {
	if ns < 8 {
		return int(ns)
	}
	e := bits.Len64(ns) - 1        // ns in [2^e, 2^(e+1))
	m := (ns >> (uint(e) - 3)) & 7 // the next three bits
	return (e-2)*8 + int(m)        // e >= 3 here, buckets 8..
}

// bucketMid is the middle of bucket i's range.
func bucketMid(i int) float64 {
	if i < 8 {
		return float64(i)
	}
	e := i/8 + 2
	m := i % 8
	lo := float64(uint64(1)<<uint(e)) * (1 + float64(m)/8)
	width := float64(uint64(1)<<uint(e)) / 8
	return lo + width/2
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.buckets[bucketOf(uint64(d))].Add(1)
}

// quantile returns the q-quantile (0 <= q <= 1), or 0 for an empty histogram.
func (h *histogram) quantile(q float64) time.Duration {
	var total uint64
	var counts [len(h.buckets)]uint64
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	if rank == 0 {
		rank = 1
	}
	var cum uint64
	for i, c := range counts {
		cum += c
		if cum >= rank {
			return time.Duration(bucketMid(i))
		}
	}
	return 0
}

// stageStats is the live, concurrently updated statistics of one stage.
type stageStats struct {
	name      string
	workers   int
	tasks     atomic.Int64
	failures  atomic.Int64
	totalTime atomic.Int64 // ns
	hist      histogram
	cpu       bool         // measure each task's thread CPU time (MeasureCPU)
	cpuTime   atomic.Int64 // ns, summed thread CPU time of the tasks
}

// cpuStart reads the thread's CPU clock before a task, when measuring.
func (s *stageStats) cpuStart() time.Duration {
	if !s.cpu {
		return 0
	}
	return threadCPU()
}

// cpuEnd adds the task's thread CPU time since c0, when measuring.
func (s *stageStats) cpuEnd(c0 time.Duration) {
	if s.cpu {
		s.cpuTime.Add(int64(threadCPU() - c0))
	}
}

// task runs call, one task of the stage on item index: it times it (the
// wall clock, and the thread's CPU clock when measuring) in a trace region
// named for the stage, records it in the statistics and on the worker's
// timeline track, and returns call's error as a *StageError naming the
// stage and the item. The stage workers of Map and Aggregate both run
// their tasks through it.
func (s *stageStats) task(ctx context.Context, track *Track, index int, call func() error) error {
	c0 := s.cpuStart()
	t0 := time.Now()
	region := trace.StartRegion(ctx, s.name)
	err := call()
	region.End()
	t1 := time.Now()
	s.cpuEnd(c0)
	s.record(t1.Sub(t0), err != nil)
	track.add(index, t0, t1)
	if err != nil {
		return &StageError{Stage: s.name, Index: index, Err: err}
	}
	return nil
}

func (s *stageStats) record(d time.Duration, failed bool) {
	s.tasks.Add(1)
	if failed {
		s.failures.Add(1)
	}
	s.totalTime.Add(int64(d))
	s.hist.record(d)
}

// StageStats is a snapshot of one stage's statistics, as SPDL keeps them.
type StageStats struct {
	Name     string        `json:"name"`
	Workers  int           `json:"workers"`
	Tasks    int64         `json:"tasks"`
	Failures int64         `json:"failures"`
	Total    time.Duration `json:"total_ns"` // summed task time over all workers
	// CPU is the summed thread CPU time of the tasks (user and system),
	// measured only when Pipeline.MeasureCPU was on; 0 otherwise. Total −
	// CPU is the time tasks waited: blocked, sleeping, or runnable while
	// other goroutines held the cores.
	CPU     time.Duration `json:"cpu_ns,omitempty"`
	Average time.Duration `json:"average_ns"`
	P50     time.Duration `json:"p50_ns"`
	P90     time.Duration `json:"p90_ns"`
	P99     time.Duration `json:"p99_ns"`
}

func (s *stageStats) snapshot() StageStats {
	out := StageStats{
		Name:     s.name,
		Workers:  s.workers,
		Tasks:    s.tasks.Load(),
		Failures: s.failures.Load(),
		Total:    time.Duration(s.totalTime.Load()),
		CPU:      time.Duration(s.cpuTime.Load()),
		P50:      s.hist.quantile(0.5),
		P90:      s.hist.quantile(0.9),
		P99:      s.hist.quantile(0.99),
	}
	if out.Tasks > 0 {
		out.Average = out.Total / time.Duration(out.Tasks)
	}
	return out
}

// queueStats is the live statistics of one queue. A mutex guards it: a
// queue sees one put and one get per item, items here take micro- to
// milliseconds, and exact empty-interval accounting needs the two to agree.
type queueStats struct {
	mu         sync.Mutex
	name       string
	capacity   int
	created    time.Time
	puts, gets int64
	putWait    time.Duration
	getWait    time.Duration
	depth      int       // items put and not yet got
	emptySince time.Time // valid while depth == 0
	emptyTotal time.Duration
	closed     time.Time // when the producer closed it, zero while open
	drained    time.Time // when it was closed and empty: the end of its life
}

func newQueueStats(name string, capacity int, now time.Time) *queueStats {
	return &queueStats{name: name, capacity: capacity, created: now, emptySince: now}
}

func (q *queueStats) put(now time.Time, wait time.Duration) {
	q.mu.Lock()
	q.puts++
	q.putWait += wait
	if q.depth == 0 {
		q.emptyTotal += now.Sub(q.emptySince)
	}
	q.depth++
	q.mu.Unlock()
}

func (q *queueStats) get(now time.Time, wait time.Duration) {
	q.mu.Lock()
	q.gets++
	q.getWait += wait
	q.depth--
	if q.depth == 0 {
		q.emptySince = now
		if !q.closed.IsZero() {
			q.drained = now
		}
	}
	q.mu.Unlock()
}

func (q *queueStats) close(now time.Time) {
	q.mu.Lock()
	if q.closed.IsZero() {
		q.closed = now
		if q.depth == 0 {
			q.drained = now
		}
	}
	q.mu.Unlock()
}

// QueueStats is a snapshot of one queue's statistics.
type QueueStats struct {
	Name     string        `json:"name"`
	Capacity int           `json:"capacity"`
	Items    int64         `json:"items"`      // items put
	Elapsed  time.Duration `json:"elapsed_ns"` // from creation until closed and drained (or now)
	// AvgPutWait is how long a producer waited, on average, for room:
	// high when the consumer is the slow side.
	AvgPutWait time.Duration `json:"avg_put_wait_ns"`
	// AvgGetWait is how long a consumer waited, on average, for an item:
	// high when the producer is the slow side.
	AvgGetWait time.Duration `json:"avg_get_wait_ns"`
	// Occupancy is SPDL's occupancy rate, the data readiness of the queue:
	// 1 − the fraction of Elapsed during which the queue was empty.
	Occupancy float64 `json:"occupancy"`
}

// QPS is items per second over the queue's life.
func (q QueueStats) QPS() float64 {
	if q.Elapsed <= 0 {
		return 0
	}
	return float64(q.Items) / q.Elapsed.Seconds()
}

func (q *queueStats) snapshot(now time.Time) QueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	end := now
	if !q.drained.IsZero() {
		end = q.drained
	}
	empty := q.emptyTotal
	if q.depth == 0 && end.After(q.emptySince) {
		empty += end.Sub(q.emptySince)
	}
	out := QueueStats{Name: q.name, Capacity: q.capacity, Items: q.puts, Elapsed: end.Sub(q.created)}
	if q.puts > 0 {
		out.AvgPutWait = q.putWait / time.Duration(q.puts)
	}
	if q.gets > 0 {
		out.AvgGetWait = q.getWait / time.Duration(q.gets)
	}
	if out.Elapsed > 0 {
		out.Occupancy = 1 - float64(empty)/float64(out.Elapsed)
		out.Occupancy = math.Max(0, math.Min(1, out.Occupancy))
	}
	return out
}

// Stats is a snapshot of a pipeline: its stages and queues from source to
// sink. Queues[i] is the output queue of Stages[i].
type Stats struct {
	Stages []StageStats `json:"stages"`
	Queues []QueueStats `json:"queues"`
}
