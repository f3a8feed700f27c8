//go:build !unix && !windows

package rusage

import (
	"errors"
	"time"
)

// ProcessCPU is this process's CPU time so far; on this system it is not
// read: an error says so.
func ProcessCPU() (time.Duration, error) {
	return 0, errors.New("rusage: process CPU time is read on Unix and Windows only")
}
