//go:build !linux

package procloader

import "os"

// growPipe keeps the system's pipe buffer: F_SETPIPE_SZ is Linux's.
func growPipe(*os.File) {}
