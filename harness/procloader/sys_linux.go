package procloader

import (
	"os"
	"syscall"
)

// growPipe asks for a 1 MiB pipe buffer (F_SETPIPE_SZ), so a batch crosses
// in fewer wake-ups; the default 64 KiB is kept if that is refused.
func growPipe(f *os.File) {
	const fSetPipeSz = 1031
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, 1<<20)
	})
}
