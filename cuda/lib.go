package cuda

import (
	"fmt"
	"unsafe"
)

// driverLib is an opened driver library: the address of every entry point
// the package calls. Versioned names (…_v2) are the ones the CUDA headers
// map the plain names to.
type driverLib struct {
	path   string
	handle uintptr

	cuGetErrorName, cuInit, cuDriverGetVersion                              uintptr
	cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute    uintptr
	cuDeviceTotalMem, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease   uintptr
	cuCtxSetCurrent, cuCtxSynchronize                                       uintptr
	cuMemAlloc, cuMemFree, cuMemHostAlloc, cuMemFreeHost, cuMemsetD8        uintptr
	cuMemcpyHtoDAsync, cuMemcpyDtoHAsync                                    uintptr
	cuStreamCreate, cuStreamDestroy, cuStreamSynchronize, cuStreamWaitEvent uintptr
	cuEventCreate, cuEventDestroy, cuEventRecord, cuEventSynchronize        uintptr
	cuEventQuery, cuEventElapsedTime                                        uintptr
	cuModuleLoadDataEx, cuModuleUnload, cuModuleGetFunction, cuLaunchKernel uintptr

	// CUDA Graphs (driver 11.4 on), optional: 0 where the driver lacks
	// them, and DeviceConfig.Graphs then fails with a one-line error.
	cuStreamBeginCapture, cuStreamEndCapture, cuGraphInstantiate uintptr
	cuGraphLaunch, cuGraphExecDestroy, cuGraphDestroy            uintptr
}

// graphSymbols lists the optional CUDA Graphs entry points.
func (l *driverLib) graphSymbols() []struct {
	name string
	addr *uintptr
} {
	return []struct {
		name string
		addr *uintptr
	}{
		{"cuStreamBeginCapture_v2", &l.cuStreamBeginCapture},
		{"cuStreamEndCapture", &l.cuStreamEndCapture},
		{"cuGraphInstantiateWithFlags", &l.cuGraphInstantiate},
		{"cuGraphLaunch", &l.cuGraphLaunch},
		{"cuGraphExecDestroy", &l.cuGraphExecDestroy},
		{"cuGraphDestroy", &l.cuGraphDestroy},
	}
}

// hasGraphs reports whether every CUDA Graphs entry point resolved.
func (l *driverLib) hasGraphs() bool {
	for _, s := range l.graphSymbols() {
		if *s.addr == 0 {
			return false
		}
	}
	return true
}

// symbols lists the entry points by their exported names.
func (l *driverLib) symbols() []struct {
	name string
	addr *uintptr
} {
	return []struct {
		name string
		addr *uintptr
	}{
		{"cuGetErrorName", &l.cuGetErrorName},
		{"cuInit", &l.cuInit},
		{"cuDriverGetVersion", &l.cuDriverGetVersion},
		{"cuDeviceGetCount", &l.cuDeviceGetCount},
		{"cuDeviceGet", &l.cuDeviceGet},
		{"cuDeviceGetName", &l.cuDeviceGetName},
		{"cuDeviceGetAttribute", &l.cuDeviceGetAttribute},
		{"cuDeviceTotalMem_v2", &l.cuDeviceTotalMem},
		{"cuDevicePrimaryCtxRetain", &l.cuDevicePrimaryCtxRetain},
		{"cuDevicePrimaryCtxRelease_v2", &l.cuDevicePrimaryCtxRelease},
		{"cuCtxSetCurrent", &l.cuCtxSetCurrent},
		{"cuCtxSynchronize", &l.cuCtxSynchronize},
		{"cuMemAlloc_v2", &l.cuMemAlloc},
		{"cuMemFree_v2", &l.cuMemFree},
		{"cuMemHostAlloc", &l.cuMemHostAlloc},
		{"cuMemFreeHost", &l.cuMemFreeHost},
		{"cuMemsetD8_v2", &l.cuMemsetD8},
		{"cuMemcpyHtoDAsync_v2", &l.cuMemcpyHtoDAsync},
		{"cuMemcpyDtoHAsync_v2", &l.cuMemcpyDtoHAsync},
		{"cuStreamCreate", &l.cuStreamCreate},
		{"cuStreamDestroy_v2", &l.cuStreamDestroy},
		{"cuStreamSynchronize", &l.cuStreamSynchronize},
		{"cuStreamWaitEvent", &l.cuStreamWaitEvent},
		{"cuEventCreate", &l.cuEventCreate},
		{"cuEventDestroy_v2", &l.cuEventDestroy},
		{"cuEventRecord", &l.cuEventRecord},
		{"cuEventSynchronize", &l.cuEventSynchronize},
		{"cuEventQuery", &l.cuEventQuery},
		{"cuEventElapsedTime", &l.cuEventElapsedTime},
		{"cuModuleLoadDataEx", &l.cuModuleLoadDataEx},
		{"cuModuleUnload", &l.cuModuleUnload},
		{"cuModuleGetFunction", &l.cuModuleGetFunction},
		{"cuLaunchKernel", &l.cuLaunchKernel},
	}
}

// openLibrary opens the driver library at path and resolves every entry
// point. Open uses Library; tests pass the path of a fake driver.
func openLibrary(path string) (*driverLib, error) {
	h, err := dlopen(path)
	if err != nil {
		return nil, err
	}
	l := &driverLib{path: path, handle: h}
	for _, s := range l.symbols() {
		a, err := dlsym(h, s.name)
		if err != nil {
			return nil, fmt.Errorf("%s has no %s: %w", path, s.name, err)
		}
		*s.addr = a
	}
	for _, s := range l.graphSymbols() {
		*s.addr, _ = dlsym(h, s.name) // optional: see hasGraphs
	}
	return l, nil
}

// check turns a CUresult into nil or an *Error naming call.
func (l *driverLib) check(call string, r uintptr) error {
	code := int(uint32(r)) // CUresult is a C int: the upper half of the register is not ours
	if code == 0 {
		return nil
	}
	return &Error{Call: call, Code: code, Name: l.errorName(code)}
}

// errorName is cuGetErrorName's name for code.
func (l *driverLib) errorName(code int) string {
	var p *byte
	if uint32(ccall(l.cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&p)))) != 0 || p == nil {
		return fmt.Sprintf("CUresult %d", code)
	}
	return cString(p, 256)
}

// cString reads a NUL-terminated C string of at most max bytes at p.
func cString(p *byte, max int) string {
	n := 0
	for n < max && *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
