//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// alive says whether process pid exists (signal 0 delivers nothing; EPERM
// means it exists under another user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
