//go:build unix && !linux

package ownloop

import "syscall"

// groupAttr starts the command in its own process group; there is no
// Pdeathsig outside Linux.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
