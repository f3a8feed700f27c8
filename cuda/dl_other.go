//go:build !linux

package cuda

func dlopen(string) (uintptr, error)            { return 0, ErrUnsupported }
func dlsym(uintptr, string) (uintptr, error)    { return 0, ErrUnsupported }
func ccall(fn uintptr, args ...uintptr) uintptr { panic("cuda: no driver calls without Linux") }

func ccallArgs(fn uintptr, args []uintptr) uintptr { panic("cuda: no driver calls without Linux") }
