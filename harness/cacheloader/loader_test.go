package cacheloader_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/harness/cacheloader"
)

// fakeLoader hands out n batches with Index 0..n-1 and counts the calls made
// to it. It fails the test on a double release or on Next after Close.
type fakeLoader struct {
	t        testing.TB
	n        int
	failAt   int   // Next number (from 0) that returns failErr; -1 for none
	failErr  error // returned by that Next
	closeErr error

	mu       sync.Mutex
	nexts    int
	released []int // Index of each released batch, in order
	out      map[*batching.Batch]bool
	closes   int
	block    chan struct{} // when set, Next blocks until Close closes it
}

func newFake(t testing.TB, n int) *fakeLoader {
	return &fakeLoader{t: t, n: n, failAt: -1, out: map[*batching.Batch]bool{}}
}

func (f *fakeLoader) Next(ctx context.Context) (*batching.Batch, error) {
	f.mu.Lock()
	i := f.nexts
	f.nexts++
	closed, block := f.closes > 0, f.block
	f.mu.Unlock()
	if closed {
		f.t.Error("src.Next after src.Close")
	}
	if block != nil {
		<-block
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if i == f.failAt {
		return nil, f.failErr
	}
	if i >= f.n {
		return nil, io.EOF
	}
	b := &batching.Batch{Index: i}
	f.mu.Lock()
	f.out[b] = true
	f.mu.Unlock()
	return b, nil
}

func (f *fakeLoader) Release(b *batching.Batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.out[b] {
		f.t.Errorf("src.Release of batch %d, which is not out", b.Index)
		return
	}
	f.out[b] = false
	f.released = append(f.released, b.Index)
}

func (f *fakeLoader) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
	if f.block != nil {
		close(f.block)
		f.block = nil
	}
	return f.closeErr
}

func (f *fakeLoader) counts() (nexts int, released []int, closes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nexts, slices.Clone(f.released), f.closes
}

// drain calls Next up to limit times, releasing every batch as a training
// loop does, and returns the batches received and the error that stopped it.
func drain(t *testing.T, l *cacheloader.Loader, limit int) ([]*batching.Batch, error) {
	t.Helper()
	var got []*batching.Batch
	for range limit {
		b, err := l.Next(context.Background())
		if err != nil {
			return got, err
		}
		got = append(got, b)
		l.Release(b)
	}
	return got, nil
}

// indexes are the batches' Index fields, in order.
func indexes(bs []*batching.Batch) []int {
	var out []int
	for _, b := range bs {
		out = append(out, b.Index)
	}
	return out
}

func TestLoaderTable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n        int
		cfg      cacheloader.Config
		limit    int
		want     []int
		wantErr  error // nil: the limit was reached
		nexts    int   // calls to src.Next
		switchAt int   // the position of the first batch from the caches
	}{
		{
			name: "0..6, 3 caches after 5", n: 7,
			cfg:   cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5},
			limit: 12, want: []int{0, 1, 2, 3, 4, 0, 1, 2, 0, 1, 2, 0}, nexts: 5, switchAt: 5,
		},
		{
			name: "0..4, 3 caches", n: 5,
			cfg:   cacheloader.Config{NumCaches: 3},
			limit: 9, want: []int{0, 1, 2, 0, 1, 2, 0, 1, 2}, nexts: 3, switchAt: 3,
		},
		{
			name: "stop after 10", n: 7,
			cfg:   cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 10},
			limit: 100, want: []int{0, 1, 2, 3, 4, 0, 1, 2, 0, 1}, wantErr: io.EOF, nexts: 5, switchAt: 5,
		},
		{
			name: "stop when the caches would start", n: 7,
			cfg:   cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 5},
			limit: 100, want: []int{0, 1, 2, 3, 4}, wantErr: io.EOF, nexts: 5, switchAt: 5,
		},
		{
			name: "src shorter than ReturnCachesAfter", n: 4,
			cfg:   cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 10},
			limit: 10, want: []int{0, 1, 2, 3, 0, 1, 2, 0, 1, 2}, nexts: 5, switchAt: 4,
		},
		{
			name: "src shorter than NumCaches, stop after 7", n: 2,
			cfg:   cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 7},
			limit: 100, want: []int{0, 1, 0, 1, 0, 1, 0}, wantErr: io.EOF, nexts: 3, switchAt: 2,
		},
		{
			name: "empty src", n: 0,
			cfg:   cacheloader.Config{NumCaches: 3},
			limit: 100, want: nil, wantErr: io.EOF, nexts: 1, switchAt: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFake(t, tc.n)
			l, err := cacheloader.NewLoader(src, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			bs, err := drain(t, l, tc.limit)
			if got := indexes(bs); !slices.Equal(got, tc.want) || err != tc.wantErr {
				t.Errorf("got %v, %v; want %v, %v", got, err, tc.want, tc.wantErr)
			}
			if err != nil {
				// The end is sticky and does not touch src again.
				if _, err2 := l.Next(context.Background()); err2 != err {
					t.Errorf("Next after the end = %v, want %v", err2, err)
				}
			}
			nexts, _, _ := src.counts()
			if nexts != tc.nexts {
				t.Errorf("src.Next called %d times, want %d", nexts, tc.nexts)
			}
			// Before switchAt each batch is src's own; from it on, each is
			// a cached one: the same pointer as the first batches, cycling.
			for i, b := range bs {
				if i < tc.switchAt && slices.Contains(bs[:i], b) {
					t.Errorf("batch %d, before the switch, is one handed out before", i)
				}
				if i >= tc.switchAt && b != bs[(i-tc.switchAt)%min(tc.cfg.NumCaches, tc.switchAt)] {
					t.Errorf("batch %d, after the switch, is not cache %d", i, (i-tc.switchAt)%min(tc.cfg.NumCaches, tc.switchAt))
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Every batch src handed out is back, each once.
			_, released, closes := src.counts()
			slices.Sort(released)
			if want := intsTo(min(tc.n, tc.nexts)); !slices.Equal(released, want) || closes != 1 {
				t.Errorf("released %v, closed %d times; want %v, once", released, closes, want)
			}
		})
	}
}

func intsTo(n int) []int {
	var out []int
	for i := range n {
		out = append(out, i)
	}
	return out
}

func TestLoaderRelease(t *testing.T) {
	src := newFake(t, 10)
	l, err := cacheloader.NewLoader(src, cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Hold the batches, release them later and out of order.
	var held []*batching.Batch
	for range 5 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	for _, i := range []int{4, 0, 3, 1, 2} {
		l.Release(held[i])
	}
	if _, released, _ := src.counts(); !slices.Equal(released, []int{4, 3}) {
		t.Errorf("released to src %v, want only the uncached [4 3]", released)
	}
	// Replayed batches are the cached ones, by pointer.
	for i := range 7 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if b != held[i%3] {
			t.Errorf("replayed batch %d is not the cached pointer", i)
		}
		l.Release(b)
		l.Release(b) // still a no-op
	}
	if nexts, released, closes := src.counts(); nexts != 5 || len(released) != 2 || closes != 0 {
		t.Errorf("src: %d Next, %v released, %d Close; want 5, [4 3], 0", nexts, released, closes)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, released, closes := src.counts(); !slices.Equal(released, []int{4, 3, 0, 1, 2}) || closes != 1 {
		t.Errorf("after Close: released %v, closed %d times; want [4 3 0 1 2], once", released, closes)
	}
	// A late Release of a cached batch does not release it twice.
	l.Release(held[0])
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, released, closes := src.counts(); len(released) != 5 || closes != 1 {
		t.Errorf("after second Close: released %v, closed %d times", released, closes)
	}
	if _, err := l.Next(context.Background()); !errors.Is(err, cacheloader.ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
}

func TestLoaderSourceErrors(t *testing.T) {
	errBoom := errors.New("stage decode: item 1: boom")
	src := newFake(t, 10)
	src.failAt, src.failErr = 1, errBoom
	l, err := cacheloader.NewLoader(src, cacheloader.Config{NumCaches: 2, ReturnCachesAfter: 4})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := drain(t, l, 10)
	if got := indexes(bs); err != errBoom || !slices.Equal(got, []int{0}) {
		t.Errorf("got %v, %v; want [0], the source's error as is", got, err)
	}
	// The error switched nothing: the next batch is src's next, not cache 0.
	if b, err := l.Next(context.Background()); err != nil || b.Index != 2 || b == bs[0] {
		t.Errorf("Next after the error = %v, %v; want src's batch 2", b, err)
	} else {
		l.Release(b)
	}
	src.closeErr = errors.New("close failed")
	if err := l.Close(); err != src.closeErr {
		t.Errorf("Close = %v, want the source's error", err)
	}
	if err := l.Close(); err != src.closeErr {
		t.Errorf("second Close = %v, want the first one's result", err)
	}
}

func TestLoaderContext(t *testing.T) {
	src := newFake(t, 10)
	l, _ := cacheloader.NewLoader(src, cacheloader.Config{NumCaches: 2})
	defer l.Close()
	if _, err := drain(t, l, 4); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("replay with a cancelled context: %v, want context.Canceled", err)
	}
	// A failed Next counts nothing: the next replay is cache 0 again.
	if b, err := l.Next(context.Background()); err != nil || b.Index != 0 {
		t.Errorf("replay after the cancelled Next = %v, %v; want cache 0", b, err)
	}
}

func TestLoaderConfigErrors(t *testing.T) {
	for _, cfg := range []cacheloader.Config{
		{},
		{NumCaches: -1},
		{NumCaches: 3, ReturnCachesAfter: 2},
		{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 4},
		{NumCaches: 3, StopAfter: -1},
	} {
		src := newFake(t, 10)
		if l, err := cacheloader.NewLoader(src, cfg); !errors.Is(err, cacheloader.ErrConfig) || l != nil {
			t.Errorf("%+v: %v, %v; want nil, ErrConfig", cfg, l, err)
		}
		if nexts, _, closes := src.counts(); nexts != 0 || closes != 0 {
			t.Errorf("%+v: src used at construction", cfg)
		}
	}
	if _, err := cacheloader.NewLoader(nil, cacheloader.Config{NumCaches: 1}); !errors.Is(err, cacheloader.ErrConfig) {
		t.Errorf("nil src: %v, want ErrConfig", err)
	}
}

// TestLoaderConcurrentRelease releases from another goroutine, as an upload
// completion would, while the training loop keeps calling Next.
func TestLoaderConcurrentRelease(t *testing.T) {
	src := newFake(t, 100)
	l, _ := cacheloader.NewLoader(src, cacheloader.Config{NumCaches: 4, ReturnCachesAfter: 20, StopAfter: 200})
	done := make(chan *batching.Batch, 8)
	var wg sync.WaitGroup
	wg.Go(func() {
		for b := range done {
			l.Release(b)
		}
	})
	n := 0
	for {
		b, err := l.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		done <- b
	}
	close(done)
	wg.Wait()
	if n != 200 {
		t.Errorf("%d batches, want 200", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, released, _ := src.counts(); len(released) != 20 {
		t.Errorf("%d batches back to src, want 20", len(released))
	}
}

// TestLoaderCloseDuringNext closes the loader while src.Next is blocked: the
// batch src then produces is released to it rather than handed out.
func TestLoaderCloseDuringNext(t *testing.T) {
	src := newFake(t, 10)
	src.block = make(chan struct{})
	l, _ := cacheloader.NewLoader(src, cacheloader.Config{NumCaches: 2})
	errc := make(chan error, 1)
	go func() {
		_, err := l.Next(context.Background())
		errc <- err
	}()
	for {
		if nexts, _, _ := src.counts(); nexts == 1 {
			break
		}
		runtime.Gosched()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, cacheloader.ErrClosed) {
		t.Errorf("Next = %v, want ErrClosed", err)
	}
	if _, released, _ := src.counts(); !slices.Equal(released, []int{0}) {
		t.Errorf("released %v, want [0]", released)
	}
}

// BenchmarkLoaderReplay measures Next in the replay phase.
func BenchmarkLoaderReplay(b *testing.B) {
	src := newFake(b, 16)
	l, err := cacheloader.NewLoader(src, cacheloader.Config{NumCaches: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	for range 16 {
		if _, err := l.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		bt, err := l.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		l.Release(bt)
	}
}
