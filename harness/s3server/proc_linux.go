package s3server

import "syscall"

// childAttr makes the kernel kill the server when headspace dies
// (Pdeathsig), so a killed run leaves no server behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
