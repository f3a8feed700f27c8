package cuda

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
)

// thread is the one goroutine, locked to its OS thread, on which every
// driver call of a Context runs: the CUDA context is current there and
// nowhere else. do hands it a function and waits for it; callers pass
// method values made once, so a call allocates nothing.
type thread struct {
	calls chan func()
	done  chan any // nil, or what the function panicked with
	quit  chan struct{}
	// abandoned is set when the opener stopped waiting for setup: the
	// thread then undoes a setup that succeeds after all, and ends.
	abandoned atomic.Bool
}

// newThread starts the thread and runs setup on it. A driver may never
// return from its initialisation (a hung GPU, a wedged driver): the wait
// for setup ends with ctx, and the thread is abandoned, stuck in the C
// call where nothing can interrupt it; if setup ever returns success, the
// thread runs undo and ends, so nothing it opened stays held.
func newThread(ctx context.Context, setup func() error, undo func()) (*thread, error) {
	t := &thread{calls: make(chan func()), done: make(chan any), quit: make(chan struct{})}
	started := make(chan error, 1) // the thread never waits for an opener that has gone
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine, context and all
		err := setup()
		started <- err
		if err != nil {
			return
		}
		for {
			select {
			case f := <-t.calls:
				t.done <- t.run(f)
			case <-t.quit:
				if t.abandoned.Load() {
					undo()
				}
				return
			}
		}
	}()
	select {
	case err := <-started:
		if err != nil {
			return nil, err
		}
		return t, nil
	case <-ctx.Done():
		t.abandoned.Store(true)
		close(t.quit)
		return nil, ctx.Err()
	}
}

func (t *thread) run(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// do runs f on the thread and returns when it has; a panic in f is
// re-raised here, on the caller's goroutine.
func (t *thread) do(f func()) {
	select {
	case t.calls <- f:
	case <-t.quit:
		panic("cuda: a driver call on a closed context")
	}
	if p := <-t.done; p != nil {
		panic(fmt.Sprintf("cuda: on the driver thread: %v", p))
	}
}

// stop ends the thread; do must not be called after.
func (t *thread) stop() { close(t.quit) }
