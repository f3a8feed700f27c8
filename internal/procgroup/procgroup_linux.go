package procgroup

import "syscall"

// Group starts a command in its own process group, killed by the kernel
// when headspace dies.
func Group() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Orphanless starts a command that the kernel kills when headspace dies.
func Orphanless() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
