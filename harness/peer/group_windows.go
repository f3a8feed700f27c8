package peer

import (
	"os"
	"syscall"
)

// groupAttr is nil on Windows: no process groups to start the script in.
func groupAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the script; its DataLoader workers exit when their
// parent goes.
func killGroup(p *os.Process) error { return p.Kill() }
