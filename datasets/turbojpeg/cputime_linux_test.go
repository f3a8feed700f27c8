//go:build linux

package turbojpeg

import "golang.org/x/sys/unix"

// processCPU is the CPU time the process has used, user and system, in
// nanoseconds (0 where unknown): a figure that a busy shared machine
// disturbs less than wall time.
func processCPU() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
