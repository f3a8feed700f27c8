package node

import (
	"os/exec"
	"syscall"
)

// peerAttr is nil on Windows: no process groups to kill.
func peerAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the peer's process.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
