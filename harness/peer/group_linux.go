package peer

import "syscall"

// groupAttr starts the script in its own process group, killed by the
// kernel when headspace dies (Pdeathsig).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
