//go:build unix && !linux

package ownloop

import "syscall"

// killTree is nothing outside Linux (no /proc to read the tree from): the
// process group is killed alone.
func killTree(pid int, mark string) {}

// namespaced is false outside Linux: no namespaces.
func namespaced(a *syscall.SysProcAttr) bool { return false }
