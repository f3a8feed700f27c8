package procgroup

import (
	"os"
	"syscall"
)

// Group is nil on Windows: no process groups to start a command in.
func Group() *syscall.SysProcAttr { return nil }

// Orphanless is nil on Windows: a child outlives a killed headspace unless
// it notices on its own (its stdin closed).
func Orphanless() *syscall.SysProcAttr { return nil }

// Kill kills p; a script's DataLoader workers exit when their parent goes.
func Kill(p *os.Process) error { return p.Kill() }

// Contained is nil on Windows, as Group is.
func Contained() *syscall.SysProcAttr { return nil }
