//go:build !linux

package nativelib

// Supported reports whether this build can load native libraries.
const Supported = false

func dlopen(string) (uintptr, error)         { return 0, ErrUnsupported }
func dlsym(uintptr, string) (uintptr, error) { return 0, ErrUnsupported }

// Call panics: no library is ever opened without Linux.
func Call(fn uintptr, args ...uintptr) uintptr { panic("nativelib: no native calls without Linux") }

// CallArgs panics: no library is ever opened without Linux.
func CallArgs(fn uintptr, args []uintptr) uintptr {
	panic("nativelib: no native calls without Linux")
}

// Bind panics: no library is ever opened without Linux.
func Bind(fptr any, fn uintptr) { panic("nativelib: no native calls without Linux") }

// NewCallback panics: no library is ever opened without Linux.
func NewCallback(fn any) uintptr { panic("nativelib: no native calls without Linux") }
