//go:build unix

package peer

import (
	"os"
	"syscall"
)

// killGroup kills the script's process group: the leader is not yet
// reaped, so its group id is still its own pid.
func killGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
