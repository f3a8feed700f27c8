//go:build !linux

package procloader

import (
	"os"
	"syscall"
)

// childAttr is nil: outside Linux there is no Pdeathsig, so a worker whose
// parent is killed outright exits when it next reads its closed stdin.
func childAttr() *syscall.SysProcAttr { return nil }

// growPipe keeps the system's pipe buffer: F_SETPIPE_SZ is Linux's.
func growPipe(*os.File) {}
