//go:build unix

package node

import (
	"os/exec"
	"syscall"
)

// peerAttr starts the peer in its own process group, so that its ranks
// and their DataLoader workers are killed with it.
func peerAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the peer's process group.
func killGroup(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
