//go:build linux

package pipeline

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuSupported says whether threadCPU works here.
const cpuSupported = true

// threadCPU is the CPU time of the calling OS thread so far
// (CLOCK_THREAD_CPUTIME_ID: user and system time), or 0 if the clock
// cannot be read. The goroutine must be locked to its thread.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
