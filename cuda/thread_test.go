package cuda

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestThread(t *testing.T) {
	if _, err := newThread(context.Background(), func() error { return errors.New("no device") }, func() {}); err == nil || err.Error() != "no device" {
		t.Errorf("a failed setup = %v", err)
	}
	th, err := newThread(context.Background(), func() error { return nil }, func() {})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	th.do(func() { n++ })
	th.do(func() { n++ })
	if n != 2 {
		t.Errorf("%d of 2 calls ran", n)
	}
	panics := func(f func()) (p any) {
		defer func() { p = recover() }()
		f()
		return nil
	}
	if p := panics(func() { th.do(func() { panic("boom") }) }); p == nil || !strings.Contains(p.(string), "on the driver thread: boom") {
		t.Errorf("a panic on the thread came back as %v", p)
	}
	th.do(func() { n++ }) // the thread survives it
	th.stop()
	if p := panics(func() { th.do(func() { n++ }) }); p == nil || n != 3 {
		t.Errorf("a call after stop: panic %v, %d calls ran", p, n)
	}
}

// Issue 32, item 14: a setup that never returns (a driver hung in cuInit)
// must not hold its opener: newThread returns ctx's error when ctx ends,
// and a setup that succeeds after all is undone on its thread.
func TestThreadAbandonsAStuckSetup(t *testing.T) {
	release, undone := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := newThread(ctx, func() error { <-release; return nil }, func() { close(undone) })
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("newThread with its setup stuck and ctx cancelled = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("newThread still waiting for a stuck setup 10 s after its context was cancelled")
	}
	close(release)
	select {
	case <-undone:
	case <-time.After(10 * time.Second):
		t.Fatal("a setup that succeeded after its opener left was not undone")
	}
}

// BenchmarkThreadCall is the cost of one round trip to the driver thread,
// which Upload, Step and Free each make once:
// go test -run=^$ -bench=ThreadCall ./cuda
func BenchmarkThreadCall(b *testing.B) {
	th, err := newThread(context.Background(), func() error { return nil }, func() {})
	if err != nil {
		b.Fatal(err)
	}
	defer th.stop()
	f := func() {}
	b.ReportAllocs()
	for b.Loop() {
		th.do(f)
	}
}
