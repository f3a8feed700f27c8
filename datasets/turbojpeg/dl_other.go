//go:build !linux

package turbojpeg

import (
	"errors"
	"runtime"
)

var errOS = errors.New("loaded on Linux only (on " + runtime.GOOS + ")")

func dlopen(string) (uintptr, error)         { return 0, errOS }
func dlsym(uintptr, string) (uintptr, error) { return 0, errOS }
func ccall(uintptr) uintptr                  { panic("turbojpeg: no calls without Linux") }
func callArgs(uintptr, []uintptr) uintptr    { panic("turbojpeg: no calls without Linux") }
func bytesAddr([]byte) uintptr               { return 0 }
func int32Addr(*int32) uintptr               { return 0 }
func keepAlive([]byte)                       {}
func cString(uintptr) string                 { return "" }
func cInt32s(uintptr, int) []int32           { return nil }
func loadedPath(name string) string          { return name }
