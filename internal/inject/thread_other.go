//go:build !linux

package inject

import (
	"time"

	"github.com/headspace-bench/headspace/internal/rusage"
)

// threadCPU is, off Linux, the process's CPU time: a burn there also
// counts the work of the threads running beside it, and burns less.
func threadCPU() (time.Duration, error) { return rusage.ProcessCPU() }
