//go:build !unix

package whatif

import (
	"errors"
	"time"
)

// ProcessCPU is this process's CPU time so far; on this system it is not
// read, and a profile's host share stays 0.
func ProcessCPU() (time.Duration, error) {
	return 0, errors.New("whatif: process CPU time is read on Unix systems only")
}
