package turbojpeg

import (
	"runtime"
	"unsafe"

	"github.com/headspace-bench/headspace/internal/nativelib"
)

// The arguments and results of TurboJPEG calls: addresses of Go heap
// memory the caller keeps alive (keepAlive), which the garbage collector
// does not move, and reads of the library's C memory.

func bytesAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
func int32Addr(p *int32) uintptr { return uintptr(unsafe.Pointer(p)) }
func keepAlive(b []byte)         { runtime.KeepAlive(b) }

// cString copies the NUL-terminated C string at p (tjGetErrorStr2's).
func cString(p uintptr) string {
	if p == 0 {
		return "unknown error"
	}
	return nativelib.CStringAt(p, 1024)
}

// cInt32s copies n C ints from p: the scaling factors
// tjGetScalingFactors returns, in the library's static memory.
func cInt32s(p uintptr, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = *(*int32)(unsafe.Add(unsafe.Pointer(nil), p+uintptr(4*i))) //nolint:govet // C memory
	}
	return out
}
