package inject

import (
	"context"
	"time"

	"github.com/headspace-bench/headspace/internal/rusage"
)

// Burn spins on the calling goroutine until this process has used cpu
// more CPU time, ctx ends, or the CPU time cannot be read, and returns
// the wall time it took.
func Burn(ctx context.Context, cpu time.Duration) time.Duration {
	start := time.Now()
	c0, err := rusage.ProcessCPU()
	if err != nil || cpu <= 0 {
		return 0
	}
	x := 1.0
	for i := 0; ; i++ {
		for range 20000 {
			x = x*1.0000001 + 1e-9
		}
		c, err := rusage.ProcessCPU()
		if err != nil || c-c0 >= cpu || ctx.Err() != nil {
			break
		}
	}
	sink = x
	return time.Since(start)
}

var sink float64
