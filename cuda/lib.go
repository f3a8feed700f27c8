package cuda

import (
	"fmt"
	"unsafe"

	"github.com/headspace-bench/headspace/internal/nativelib"
)

// driverLib is an opened driver library: the address of every entry point
// the package calls. Versioned names (…_v2) are the ones the CUDA headers
// map the plain names to.
type driverLib struct {
	path string
	lib  *nativelib.Lib

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
func (l *driverLib) graphSymbols() []nativelib.Symbol {
	return []nativelib.Symbol{
		{Name: "cuStreamBeginCapture_v2", Addr: &l.cuStreamBeginCapture},
		{Name: "cuStreamEndCapture", Addr: &l.cuStreamEndCapture},
		{Name: "cuGraphInstantiateWithFlags", Addr: &l.cuGraphInstantiate},
		{Name: "cuGraphLaunch", Addr: &l.cuGraphLaunch},
		{Name: "cuGraphExecDestroy", Addr: &l.cuGraphExecDestroy},
		{Name: "cuGraphDestroy", Addr: &l.cuGraphDestroy},
	}
}

// graphsErr says that the driver lacks CUDA Graphs, nil when every entry
// point of them resolved.
func (l *driverLib) graphsErr() error {
	for _, s := range l.graphSymbols() {
		if *s.Addr == 0 {
			return fmt.Errorf("cuda: CUDA Graphs: the driver (%s) lacks cuStreamBeginCapture_v2 or cuGraphInstantiateWithFlags (driver 11.4 or later)", l.path)
		}
	}
	return nil
}

// symbols lists the entry points by their exported names.
func (l *driverLib) symbols() []nativelib.Symbol {
	return []nativelib.Symbol{
		{Name: "cuGetErrorName", Addr: &l.cuGetErrorName},
		{Name: "cuInit", Addr: &l.cuInit},
		{Name: "cuDriverGetVersion", Addr: &l.cuDriverGetVersion},
		{Name: "cuDeviceGetCount", Addr: &l.cuDeviceGetCount},
		{Name: "cuDeviceGet", Addr: &l.cuDeviceGet},
		{Name: "cuDeviceGetName", Addr: &l.cuDeviceGetName},
		{Name: "cuDeviceGetAttribute", Addr: &l.cuDeviceGetAttribute},
		{Name: "cuDeviceTotalMem_v2", Addr: &l.cuDeviceTotalMem},
		{Name: "cuDevicePrimaryCtxRetain", Addr: &l.cuDevicePrimaryCtxRetain},
		{Name: "cuDevicePrimaryCtxRelease_v2", Addr: &l.cuDevicePrimaryCtxRelease},
		{Name: "cuCtxSetCurrent", Addr: &l.cuCtxSetCurrent},
		{Name: "cuCtxSynchronize", Addr: &l.cuCtxSynchronize},
		{Name: "cuMemAlloc_v2", Addr: &l.cuMemAlloc},
		{Name: "cuMemFree_v2", Addr: &l.cuMemFree},
		{Name: "cuMemHostAlloc", Addr: &l.cuMemHostAlloc},
		{Name: "cuMemFreeHost", Addr: &l.cuMemFreeHost},
		{Name: "cuMemsetD8_v2", Addr: &l.cuMemsetD8},
		{Name: "cuMemcpyHtoDAsync_v2", Addr: &l.cuMemcpyHtoDAsync},
		{Name: "cuMemcpyDtoHAsync_v2", Addr: &l.cuMemcpyDtoHAsync},
		{Name: "cuStreamCreate", Addr: &l.cuStreamCreate},
		{Name: "cuStreamDestroy_v2", Addr: &l.cuStreamDestroy},
		{Name: "cuStreamSynchronize", Addr: &l.cuStreamSynchronize},
		{Name: "cuStreamWaitEvent", Addr: &l.cuStreamWaitEvent},
		{Name: "cuEventCreate", Addr: &l.cuEventCreate},
		{Name: "cuEventDestroy_v2", Addr: &l.cuEventDestroy},
		{Name: "cuEventRecord", Addr: &l.cuEventRecord},
		{Name: "cuEventSynchronize", Addr: &l.cuEventSynchronize},
		{Name: "cuEventQuery", Addr: &l.cuEventQuery},
		{Name: "cuEventElapsedTime", Addr: &l.cuEventElapsedTime},
		{Name: "cuModuleLoadDataEx", Addr: &l.cuModuleLoadDataEx},
		{Name: "cuModuleUnload", Addr: &l.cuModuleUnload},
		{Name: "cuModuleGetFunction", Addr: &l.cuModuleGetFunction},
		{Name: "cuLaunchKernel", Addr: &l.cuLaunchKernel},
	}
}

// openLibrary opens the driver library at path and resolves every entry
// point. Open uses Library; tests pass the path of a fake driver.
func openLibrary(path string) (*driverLib, error) {
	if !nativelib.Supported {
		return nil, ErrUnsupported
	}
	l := &driverLib{path: path}
	lib, err := nativelib.Open(path, l.symbols())
	if err != nil {
		return nil, err
	}
	l.lib = lib
	for _, s := range l.graphSymbols() {
		*s.Addr = lib.Lookup(s.Name) // optional: see graphsErr
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
	if uint32(nativelib.Call(l.cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&p)))) != 0 || p == nil {
		return fmt.Sprintf("CUresult %d", code)
	}
	return nativelib.CString(p, 256)
}
