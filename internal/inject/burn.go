package inject

import (
	"context"
	"runtime"
	"time"
)

// Burn spins on the calling goroutine, locked to its thread, until that
// thread has used cpu more CPU time, ctx ends, or the CPU time cannot be
// read, and returns the wall time it took. It counts the thread's own CPU
// time (on Linux), so a loader thread running beside it does not end it
// early: the work it adds is what was asked.
func Burn(ctx context.Context, cpu time.Duration) time.Duration {
	return burn(ctx, cpu, threadCPU)
}

func burn(ctx context.Context, cpu time.Duration, read func() (time.Duration, error)) time.Duration {
	if cpu <= 0 {
		return 0
	}
	start := time.Now()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, err := read()
	if err != nil {
		return 0
	}
	x := 1.0
	for {
		for range burnChunk {
			x = x*1.0000001 + 1e-9
		}
		c, err := read()
		if err != nil || c-c0 >= cpu || ctx.Err() != nil {
			break
		}
	}
	sink = x
	return time.Since(start)
}

var sink float64

// burnChunk is how many loop iterations Burn runs between readings of
// the CPU time: a few microseconds, so that a burn of a tenth of a
// millisecond step (a step's injected share) stops within a few percent
// of what was asked.
const burnChunk = 1000
