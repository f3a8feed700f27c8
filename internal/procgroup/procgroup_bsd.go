//go:build unix && !linux

package procgroup

import "syscall"

// Group starts a command in its own process group.
func Group() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Orphanless is nil: without Pdeathsig a child outlives a killed headspace
// unless it notices on its own (its stdin closed).
func Orphanless() *syscall.SysProcAttr { return nil }

// Contained is Group outside Linux: no PID namespaces.
func Contained() *syscall.SysProcAttr { return Group() }
