package ownloop

import "syscall"

// groupAttr starts the command in its own process group, killed by the
// kernel when headspace dies (Pdeathsig).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
