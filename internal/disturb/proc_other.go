//go:build !linux

package disturb

import "time"

// threadDelays: run-queue delay is read on Linux only.
func threadDelays() (map[int]time.Duration, bool) { return nil, false }

// cpuPressure: CPU pressure is read on Linux only.
func cpuPressure() (time.Duration, bool) { return 0, false }

// cpuTicks: /proc/stat is read on Linux only.
func cpuTicks() (busy, all uint64, ok bool) { return 0, 0, false }
