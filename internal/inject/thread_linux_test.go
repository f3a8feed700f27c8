package inject

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestBurnCountsItsOwnThread: a burn adds the CPU time asked for on its
// own thread, even while another thread of the process is busy (a
// loader's worker beside the training loop); counting the process's CPU
// time, as it once did, it stopped once the two together had used it.
func TestBurnCountsItsOwnThread(t *testing.T) {
	var stop atomic.Bool
	var spun atomic.Int64
	done := make(chan struct{})
	go func() { // the busy neighbour thread
		defer close(done)
		runtime.LockOSThread()
		n := 0
		for !stop.Load() {
			for range 1000 {
				n++
			}
		}
		spun.Store(int64(n))
	}()
	defer func() { stop.Store(true); <-done }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const want = 200 * time.Millisecond
	c0, err := threadCPU()
	if err != nil {
		t.Fatal(err)
	}
	Burn(context.Background(), want)
	c1, err := threadCPU()
	if err != nil {
		t.Fatal(err)
	}
	if got := c1 - c0; got < want {
		t.Errorf("the burning thread used %v, want at least the %v asked", got, want)
	}
}
