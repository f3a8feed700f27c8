//go:build unix

package procgroup

import (
	"os"
	"syscall"
)

// Kill kills the process group of p, a leader started with Group: the
// leader is not yet reaped, so its group id is still its own pid.
func Kill(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
