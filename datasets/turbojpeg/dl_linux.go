//go:build linux

package turbojpeg

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

func dlopen(name string) (uintptr, error) {
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// ccall calls fn with no arguments.
func ccall(fn uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn)
	return r
}

// callArgs calls fn with args, a slice the caller keeps (in a Decoder, on
// the heap), so that a call allocates nothing. The pointers among args
// point to Go heap memory the caller keeps alive (keepAlive), which the
// garbage collector does not move, or to the Decoder itself.
func callArgs(fn uintptr, args []uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

func bytesAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
func int32Addr(p *int32) uintptr { return uintptr(unsafe.Pointer(p)) }
func keepAlive(b []byte)         { runtime.KeepAlive(b) }

// cString copies the NUL-terminated C string at p.
func cString(p uintptr) string {
	if p == 0 {
		return "unknown error"
	}
	var b []byte
	for i := uintptr(0); i < 1024; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(nil), p+i)) //nolint:govet // C memory
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
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

// loadedPath is the file the dynamic loader mapped for name, from
// /proc/self/maps, or name itself.
func loadedPath(name string) string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return name
	}
	defer f.Close()
	base := strings.TrimSuffix(name, ".so.0")
	base = strings.TrimSuffix(base, ".so")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && strings.Contains(fields[5], base+".so") {
			return fields[5]
		}
	}
	return name
}
