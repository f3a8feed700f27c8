//go:build unix

package node

import "syscall"

// Niced says whether this process runs at a positive nice value.
func Niced() bool {
	// getpriority(2) returns 20 - nice through the raw system call on
	// Linux; syscall.Getpriority returns that raw value there.
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return false
	}
	return nicenessOf(p) > 0
}
