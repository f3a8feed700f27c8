//go:build unix && !linux

package peer

import "syscall"

// groupAttr starts the script in its own process group; there is no
// Pdeathsig outside Linux.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
