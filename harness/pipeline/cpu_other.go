//go:build !linux

package pipeline

import "time"

// cpuSupported says whether threadCPU works here: per-thread CPU clocks
// are read on Linux only.
const cpuSupported = false

func threadCPU() time.Duration { return 0 }
