package pipeline

import (
	"context"
	"errors"
	"io"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func square(_ context.Context, it Item[int]) (int, error) { return it.Value * it.Value, nil }

func TestMapDeliversEveryItem(t *testing.T) {
	for _, tc := range []struct{ n, workers, capacity int }{
		{0, 1, 1}, {1, 1, 1}, {100, 1, 1}, {100, 4, 2}, {1000, 8, 16},
	} {
		p := New(context.Background())
		src, err := Source(p, "index", tc.n, tc.capacity, func(i int) int { return i })
		if err != nil {
			t.Fatal(err)
		}
		sq, err := Map(p, "square", src, tc.workers, tc.capacity, square)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for {
			it, err := sq.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if it.Value != it.Index*it.Index {
				t.Errorf("item %d carries %d", it.Index, it.Value)
			}
			got = append(got, it.Index)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		sort.Ints(got)
		if len(got) != tc.n {
			t.Fatalf("%+v: got %d items", tc, len(got))
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("%+v: item %d missing", tc, i)
			}
		}
		st := p.Stats()
		if len(st.Stages) != 2 || st.Stages[1].Tasks != int64(tc.n) || st.Queues[1].Items != int64(tc.n) {
			t.Errorf("%+v: stats %+v", tc, st)
		}
	}
}

func TestAggregateBatchesInOrder(t *testing.T) {
	p := New(context.Background())
	src, _ := Source(p, "index", 10, 4, func(i int) int { return i })
	sq, _ := Map(p, "square", src, 3, 4, square)
	// collect into pairs, emitted in index order whatever the arrival order.
	pending := map[int][]int{}
	next := 0
	b, err := Aggregate(p, "pairs", sq, 2, func(_ context.Context, it Item[int], e *Emitter[[]int]) error {
		k := it.Index / 2
		pending[k] = append(pending[k], it.Value)
		for len(pending[next]) == 2 {
			if !e.Emit(Item[[]int]{Index: next, Value: pending[next]}) {
				return nil
			}
			delete(pending, next)
			next++
		}
		return nil
	}, func(_ context.Context, e *Emitter[[]int]) error {
		if len(pending) != 0 {
			return errors.New("incomplete pair")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; ; k++ {
		it, err := b.Next(context.Background())
		if err == io.EOF {
			if k != 5 {
				t.Errorf("got %d pairs, want 5", k)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Index != k {
			t.Errorf("pair %d arrived as %d", k, it.Index)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFirstErrorNamesStageAndItem(t *testing.T) {
	boom := errors.New("boom")
	p := New(context.Background())
	src, _ := Source(p, "index", 1000, 4, func(i int) int { return i })
	sq, _ := Map(p, "square", src, 4, 4, square)
	bad, _ := Map(p, "check", sq, 2, 4, func(_ context.Context, it Item[int]) (int, error) {
		if it.Index == 37 {
			return 0, boom
		}
		return it.Value, nil
	})
	var err error
	for err == nil {
		_, err = bad.Next(context.Background())
	}
	var se *StageError
	if !errors.As(err, &se) || se.Stage != "check" || se.Index != 37 || !errors.Is(err, boom) {
		t.Fatalf("Next error = %v, want stage check item 37", err)
	}
	if cerr := p.Close(); !errors.Is(cerr, boom) {
		t.Errorf("Close = %v, want the stage error", cerr)
	}
	if f := p.Stats().Stages[2].Failures; f != 1 {
		t.Errorf("failures = %d, want 1", f)
	}
}

func TestCancelStopsEverything(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := New(ctx)
	src, _ := Source(p, "index", 1<<30, 2, func(i int) int { return i })
	sq, _ := Map(p, "square", src, 4, 2, square)
	if _, err := sq.Next(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := sq.Next(context.Background()); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close after cancel = %v, want nil (no stage failed)", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestCloseWithoutDraining(t *testing.T) {
	p := New(context.Background())
	src, _ := Source(p, "index", 1<<30, 2, func(i int) int { return i })
	_, _ = Map(p, "square", src, 3, 2, square)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// goleak in TestMain checks that no worker survived.
}

// TestBoundedInFlight checks that a consumer that does not read holds the
// number of produced items to the queue capacities plus the workers.
func TestBoundedInFlight(t *testing.T) {
	var made atomic.Int64
	p := New(context.Background())
	src, _ := Source(p, "index", 1<<20, 3, func(i int) int { made.Add(1); return i })
	out, _ := Map(p, "square", src, 2, 5, square)
	_, _ = out.Next(context.Background())
	time.Sleep(50 * time.Millisecond)
	n := made.Load()
	// 1 consumed + 5 in the output queue + 2 in workers + 3 in the source
	// queue + 1 being put by the source.
	if n > 12 {
		t.Errorf("%d items produced with a stalled consumer; the queues should hold at most 12", n)
	}
	_ = p.Close()
}

func TestConsumerContext(t *testing.T) {
	p := New(context.Background())
	src, _ := Source(p, "index", 1, 1, func(i int) int { return i })
	slow, _ := Map(p, "slow", src, 1, 1, func(ctx context.Context, it Item[int]) (int, error) {
		<-ctx.Done()
		return 0, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := slow.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with a cancelled context = %v", err)
	}
	_ = p.Close()
}

func TestBadArguments(t *testing.T) {
	p := New(context.Background())
	defer p.Close()
	if _, err := Source(p, "s", 1, 0, func(i int) int { return i }); err == nil {
		t.Error("zero capacity accepted")
	}
	if _, err := Source(p, "s", -1, 1, func(i int) int { return i }); err == nil {
		t.Error("negative length accepted")
	}
	src, _ := Source(p, "s", 1, 1, func(i int) int { return i })
	if _, err := Map(p, "m", src, 0, 1, square); err == nil {
		t.Error("zero workers accepted")
	}
	if _, err := Map(p, "m", src, -3, 1, square); err == nil {
		t.Error("negative workers accepted")
	}
}

// TestOccupancy checks that the statistics tell a slow producer from a
// slow consumer: the only behaviour the verdict relies on.
func TestOccupancy(t *testing.T) {
	run := func(produce, consume time.Duration) QueueStats {
		p := New(context.Background())
		src, _ := Source(p, "index", 20, 4, func(i int) int { return i })
		out, _ := Map(p, "work", src, 1, 4, func(_ context.Context, it Item[int]) (int, error) {
			time.Sleep(produce)
			return it.Value, nil
		})
		for {
			if _, err := out.Next(context.Background()); err != nil {
				break
			}
			time.Sleep(consume)
		}
		_ = p.Close()
		return p.Stats().Queues[1]
	}
	slowProducer := run(5*time.Millisecond, 0)
	slowConsumer := run(0, 5*time.Millisecond)
	if !(slowProducer.Occupancy < slowConsumer.Occupancy) {
		t.Errorf("occupancy: slow producer %.2f, slow consumer %.2f; want the first lower", slowProducer.Occupancy, slowConsumer.Occupancy)
	}
	if !(slowProducer.AvgGetWait > slowConsumer.AvgGetWait) {
		t.Errorf("get wait: slow producer %v, slow consumer %v", slowProducer.AvgGetWait, slowConsumer.AvgGetWait)
	}
	if !(slowConsumer.AvgPutWait > slowProducer.AvgPutWait) {
		t.Errorf("put wait: slow consumer %v, slow producer %v", slowConsumer.AvgPutWait, slowProducer.AvgPutWait)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.9, 900 * time.Microsecond}, {0.99, 990 * time.Microsecond}} {
		got := h.quantile(tc.q)
		if rel := float64(got-tc.want) / float64(tc.want); rel > 0.07 || rel < -0.07 {
			t.Errorf("quantile(%v) = %v, want %v ±7%%", tc.q, got, tc.want)
		}
	}
	for ns := uint64(0); ns < 1<<20; ns = ns*3/2 + 1 {
		b := bucketOf(ns)
		mid := bucketMid(b)
		if rel := (mid - float64(ns)) / float64(ns+1); rel > 0.07 || rel < -0.07 {
			t.Errorf("bucket of %d has middle %.0f", ns, mid)
		}
	}
	var empty histogram
	if empty.quantile(0.5) != 0 {
		t.Error("empty histogram quantile not 0")
	}
}

func TestRecorder(t *testing.T) {
	rec := NewRecorder()
	p := New(context.Background())
	p.Record(rec)
	src, _ := Source(p, "index", 50, 4, func(i int) int { return i })
	sq, _ := Map(p, "square", src, 3, 4, square)
	for {
		if _, err := sq.Next(context.Background()); err != nil {
			break
		}
	}
	_ = p.Close()
	tracks := rec.Tracks()
	if len(tracks) != 3 {
		t.Fatalf("%d tracks, want one per worker (3)", len(tracks))
	}
	n := 0
	for _, tr := range tracks {
		for _, s := range tr.Spans {
			if s.End < s.Start {
				t.Errorf("span %+v ends before it starts", s)
			}
		}
		n += len(tr.Spans)
	}
	if n != 50 {
		t.Errorf("%d spans, want 50", n)
	}
	var off *Recorder
	off.Track("x", 0).Add(1, time.Now(), time.Now()) // a nil recorder is a no-op
}

// BenchmarkTrackAdd is the cost of recording one task's span: what a
// worker pays per item with a Recorder set (the end-to-end comparison is
// BenchmarkLoader/.../record=true in package ladder).
func BenchmarkTrackAdd(b *testing.B) {
	tr := NewRecorder().Track("load", 0)
	t0 := time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tr.Add(i, t0, t0)
		i++
		if len(tr.Spans) == 1<<20 {
			tr.Spans = tr.Spans[:0] // keep memory flat over long runs
		}
	}
}

// TestWindowBoundsTheSource checks that a windowed source makes no more
// items than the window allows until tokens come back, and that the wait
// is not counted as the source's task time.
func TestWindowBoundsTheSource(t *testing.T) {
	var made atomic.Int64
	w, err := NewWindow(5, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := New(context.Background())
	src, _ := WindowedSource(p, "index", 100, 50, w, func(i int) int { made.Add(1); return i })
	for range 3 {
		if _, err := src.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if n := made.Load(); n != 3 {
		t.Errorf("%d items made with 3 free tokens", n)
	}
	w.Release(4) // the 2 held and 2 of the 3 taken
	if _, err := src.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); made.Load() < 7 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n := made.Load(); n != 7 {
		t.Errorf("%d items made after releasing 4 tokens, want 7", n)
	}
	_ = p.Close()
	st := p.Stats()
	if st.Stages[0].Total >= 20*time.Millisecond {
		t.Errorf("source task time %v includes the window wait", st.Stages[0].Total)
	}
	if st.Queues[0].AvgPutWait == 0 {
		t.Error("the window wait is not counted as put wait")
	}
	for _, bad := range [][2]int{{0, 0}, {3, 3}, {3, -1}} {
		if _, err := NewWindow(bad[0], bad[1]); err == nil {
			t.Errorf("NewWindow(%d, %d) accepted", bad[0], bad[1])
		}
	}
}
