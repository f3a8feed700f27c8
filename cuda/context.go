package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/headspace-bench/headspace/internal/nativelib"
)

// Info describes a device and its driver.
type Info struct {
	Ordinal       int
	Name          string // e.g. "NVIDIA H100 80GB HBM3"
	DriverVersion int    // cuDriverGetVersion: 1000×major + 10×minor
	Major, Minor  int    // compute capability
	SMs           int    // multiprocessors
	TotalMem      int64  // bytes of device memory
	PCIBusID      string // domain:bus:device.function, as sysfs names it
	// LinkSpeed and LinkWidth are the PCIe link as Linux's sysfs reports it
	// (the driver API does not), e.g. "32.0 GT/s PCIe" and "16"; empty
	// where unknown.
	LinkSpeed, LinkWidth string
}

// Driver is the driver version as "major.minor".
func (i Info) Driver() string {
	return fmt.Sprintf("%d.%d", i.DriverVersion/1000, i.DriverVersion%1000/10)
}

// JITTarget is the architecture the driver JIT-compiles PTX for on this
// device, e.g. "sm_90".
func (i Info) JITTarget() string { return fmt.Sprintf("sm_%d%d", i.Major, i.Minor) }

// Context is one device's primary context, with the driver thread on which
// all its calls run. A Context is safe for use by several goroutines: their
// calls are serialised on its thread.
type Context struct {
	lib  *driverLib
	th   *thread
	dev  uintptr // CUdevice
	ctx  uintptr // CUcontext (the primary context)
	info Info
	done atomic.Bool

	// dnn is the cuDNN and cuBLAS a plan's library ops call (nil: LoadDNN's;
	// tests set a fake), dnnAlgos the algorithms the searches found, by
	// shape and precision: one search a shape on the Context. Only the
	// driver thread uses them.
	dnn      *dnnLib
	dnnAlgos map[convKey]convAlgos

	// a holds the arguments of the per-step calls (see ccallArgs); ms
	// receives cuEventElapsedTime's result. Only the driver thread uses them.
	a  [11]uintptr
	ms float32
}

// hot calls fn with the arguments args, without allocating: the per-step
// calls go through it. Every pointer among args must be to memory that
// cannot move (C memory, or Go heap memory its caller keeps alive).
func (c *Context) hot(fn uintptr, args ...uintptr) uintptr {
	n := copy(c.a[:], args)
	return nativelib.CallArgs(fn, c.a[:n])
}

// Open initialises the driver and retains the primary context of the
// device with the given ordinal (0 for the first GPU). Without a driver the
// error starts "no CUDA driver found (libcuda.so.1): ". The driver's
// initialisation (cuInit, then the device's description and context) can
// hang in a broken driver; when ctx ends first Open returns an error
// wrapping ctx's, at once, and leaves the stuck call behind on its own
// thread (see newThread), so SIGINT still stops the program.
func Open(ctx context.Context, ordinal int) (*Context, error) {
	l, err := load()
	if err != nil {
		return nil, err
	}
	return openContext(ctx, l, ordinal)
}

// openContext opens a device on an opened library (the real one, or in
// tests the fake).
func openContext(ctx context.Context, l *driverLib, ordinal int) (*Context, error) {
	c := &Context{lib: l, info: Info{Ordinal: ordinal}}
	th, err := newThread(ctx, c.setup, func() { nativelib.Call(l.cuDevicePrimaryCtxRelease, c.dev) })
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, fmt.Errorf("cuda: opening device %d: the driver's initialisation had not returned when it was abandoned: %w", ordinal, err)
		}
		return nil, err
	}
	c.th = th
	c.info.LinkSpeed, c.info.LinkWidth = pciLink(c.info.PCIBusID)
	return c, nil
}

// setup runs on the new driver thread: cuInit, the device, its primary
// context made current, and the device's description.
func (c *Context) setup() error {
	l := c.lib
	if err := l.check("cuInit", nativelib.Call(l.cuInit, 0)); err != nil {
		return err
	}
	var n, v int32
	if err := l.check("cuDeviceGetCount", nativelib.Call(l.cuDeviceGetCount, uintptr(unsafe.Pointer(&n)))); err != nil {
		return err
	}
	if c.info.Ordinal < 0 || c.info.Ordinal >= int(n) {
		return fmt.Errorf("cuda: no device %d (the driver sees %d)", c.info.Ordinal, n)
	}
	if err := l.check("cuDriverGetVersion", nativelib.Call(l.cuDriverGetVersion, uintptr(unsafe.Pointer(&v)))); err != nil {
		return err
	}
	c.info.DriverVersion = int(v)
	var dev int32
	if err := l.check("cuDeviceGet", nativelib.Call(l.cuDeviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(c.info.Ordinal))); err != nil {
		return err
	}
	c.dev = uintptr(dev)
	name := make([]byte, 256)
	if err := l.check("cuDeviceGetName", nativelib.Call(l.cuDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), c.dev)); err != nil {
		return err
	}
	c.info.Name = nativelib.CString(&name[0], len(name))
	var mem uint64
	if err := l.check("cuDeviceTotalMem_v2", nativelib.Call(l.cuDeviceTotalMem, uintptr(unsafe.Pointer(&mem)), c.dev)); err != nil {
		return err
	}
	c.info.TotalMem = int64(mem)
	if err := c.readAttributes(); err != nil {
		return err
	}
	if err := l.check("cuDevicePrimaryCtxRetain", nativelib.Call(l.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&c.ctx)), c.dev)); err != nil {
		return err
	}
	if err := l.check("cuCtxSetCurrent", nativelib.Call(l.cuCtxSetCurrent, c.ctx)); err != nil {
		nativelib.Call(l.cuDevicePrimaryCtxRelease, c.dev)
		return err
	}
	return nil
}

// readAttributes reads the device's SM count, compute capability and
// PCI bus id.
func (c *Context) readAttributes() error {
	l := c.lib
	const (
		attrSMs     = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
		attrBus     = 33 // CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
		attrPCIDev  = 34 // CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
		attrDomain  = 50 // CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
		attrCCMajor = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
		attrCCMinor = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	)
	var domain, bus, dev int
	attrs := []struct {
		id  int
		dst *int
	}{{attrSMs, &c.info.SMs}, {attrCCMajor, &c.info.Major}, {attrCCMinor, &c.info.Minor},
		{attrDomain, &domain}, {attrBus, &bus}, {attrPCIDev, &dev}}
	for _, a := range attrs {
		var x int32
		if err := l.check("cuDeviceGetAttribute", nativelib.Call(l.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&x)), uintptr(a.id), c.dev)); err != nil {
			return fmt.Errorf("attribute %d: %w", a.id, err)
		}
		*a.dst = int(x)
	}
	c.info.PCIBusID = fmt.Sprintf("%04x:%02x:%02x.0", domain, bus, dev)
	return nil
}

// pciLink reads the PCIe link of the device at bus id from sysfs; the
// attributes are empty where Linux does not say.
func pciLink(bus string) (speed, width string) {
	dir := filepath.Join("/sys/bus/pci/devices", bus)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	return read("current_link_speed"), read("current_link_width")
}

// Info describes the device.
func (c *Context) Info() Info { return c.info }

// Close releases the primary context and stops the driver thread. Every
// Device on the context must be closed first.
func (c *Context) Close() error {
	if c.done.Swap(true) {
		return nil
	}
	var err error
	c.th.do(func() {
		err = c.lib.check("cuDevicePrimaryCtxRelease_v2", nativelib.Call(c.lib.cuDevicePrimaryCtxRelease, c.dev))
	})
	c.th.stop()
	return err
}

var errClosedContext = errors.New("cuda: the context is closed")

// run runs f on the driver thread and returns its error. It allocates (a
// closure); the per-step paths use prepared method values instead.
func (c *Context) run(f func() error) error {
	if c.done.Load() {
		return errClosedContext
	}
	var err error
	c.th.do(func() { err = f() })
	return err
}

// The calls below run on the driver thread only.

func (c *Context) memAlloc(n int64) (uint64, error) {
	var p uint64
	err := c.lib.check("cuMemAlloc_v2", nativelib.Call(c.lib.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n)))
	return p, err
}

func (c *Context) memFree(p uint64) error {
	return c.lib.check("cuMemFree_v2", nativelib.Call(c.lib.cuMemFree, uintptr(p)))
}

// hostAlloc returns n bytes of page-locked host memory.
func (c *Context) hostAlloc(n int) ([]byte, error) {
	var p unsafe.Pointer
	if err := c.lib.check("cuMemHostAlloc", nativelib.Call(c.lib.cuMemHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n), 0)); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

func (c *Context) hostFree(b []byte) error {
	return c.lib.check("cuMemFreeHost", nativelib.Call(c.lib.cuMemFreeHost, uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
}

// memset sets n bytes at p to v, synchronously.
func (c *Context) memset(p uint64, v byte, n int64) error {
	return c.lib.check("cuMemsetD8_v2", nativelib.Call(c.lib.cuMemsetD8, uintptr(p), uintptr(v), uintptr(n)))
}

func (c *Context) htod(dst uint64, src unsafe.Pointer, n int64, stream uintptr) error {
	return c.lib.check("cuMemcpyHtoDAsync_v2", c.hot(c.lib.cuMemcpyHtoDAsync, uintptr(dst), uintptr(src), uintptr(n), stream))
}

func (c *Context) dtoh(dst unsafe.Pointer, src uint64, n int64, stream uintptr) error {
	return c.lib.check("cuMemcpyDtoHAsync_v2", c.hot(c.lib.cuMemcpyDtoHAsync, uintptr(dst), uintptr(src), uintptr(n), stream))
}

// streamCreate makes a stream that does not synchronise with the legacy
// default stream (CU_STREAM_NON_BLOCKING).
func (c *Context) streamCreate() (uintptr, error) {
	var s uintptr
	err := c.lib.check("cuStreamCreate", nativelib.Call(c.lib.cuStreamCreate, uintptr(unsafe.Pointer(&s)), 1))
	return s, err
}

func (c *Context) streamDestroy(s uintptr) error {
	return c.lib.check("cuStreamDestroy_v2", nativelib.Call(c.lib.cuStreamDestroy, s))
}

func (c *Context) streamSync(s uintptr) error {
	return c.lib.check("cuStreamSynchronize", c.hot(c.lib.cuStreamSynchronize, s))
}

// streamWait makes stream s wait for event e.
func (c *Context) streamWait(s, e uintptr) error {
	return c.lib.check("cuStreamWaitEvent", c.hot(c.lib.cuStreamWaitEvent, s, e, 0))
}

// eventCreate makes a timing event that a waiting host thread sleeps on
// (CU_EVENT_BLOCKING_SYNC) rather than spins, leaving the cores to the
// input pipeline.
func (c *Context) eventCreate() (uintptr, error) {
	var e uintptr
	err := c.lib.check("cuEventCreate", nativelib.Call(c.lib.cuEventCreate, uintptr(unsafe.Pointer(&e)), 1))
	return e, err
}

func (c *Context) eventDestroy(e uintptr) error {
	return c.lib.check("cuEventDestroy_v2", nativelib.Call(c.lib.cuEventDestroy, e))
}

func (c *Context) eventRecord(e, s uintptr) error {
	return c.lib.check("cuEventRecord", c.hot(c.lib.cuEventRecord, e, s))
}

func (c *Context) eventSync(e uintptr) error {
	return c.lib.check("cuEventSynchronize", c.hot(c.lib.cuEventSynchronize, e))
}

// eventDone reports whether the work before e has completed.
func (c *Context) eventDone(e uintptr) (bool, error) {
	r := c.hot(c.lib.cuEventQuery, e)
	if int(uint32(r)) == errNotReady {
		return false, nil
	}
	return true, c.lib.check("cuEventQuery", r)
}

// elapsed is the GPU time between two completed events.
func (c *Context) elapsed(start, end uintptr) (time.Duration, error) {
	if err := c.lib.check("cuEventElapsedTime", c.hot(c.lib.cuEventElapsedTime, uintptr(unsafe.Pointer(&c.ms)), start, end)); err != nil {
		return 0, err
	}
	return time.Duration(float64(c.ms) * 1e6), nil
}

// moduleLoad loads PTX (or a cubin) with the JIT's error and info logs; a
// failure's *Error carries the error log.
func (c *Context) moduleLoad(name string, image []byte) (uintptr, error) {
	src := make([]byte, len(image)+1) // NUL-terminated, as the driver reads PTX
	copy(src, image)
	const (
		jitInfoLog      = 3 // CU_JIT_INFO_LOG_BUFFER
		jitInfoLogSize  = 4 // CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
		jitErrorLog     = 5 // CU_JIT_ERROR_LOG_BUFFER
		jitErrorLogSize = 6 // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
		logSize         = 16 << 10
	)
	info, errLog := make([]byte, logSize), make([]byte, logSize)
	opts := []int32{jitInfoLog, jitInfoLogSize, jitErrorLog, jitErrorLogSize}
	vals := []uintptr{uintptr(unsafe.Pointer(&info[0])), logSize, uintptr(unsafe.Pointer(&errLog[0])), logSize}
	var pin runtime.Pinner // the option values hold Go pointers the driver writes through
	pin.Pin(&info[0])
	pin.Pin(&errLog[0])
	defer pin.Unpin()
	var mod uintptr
	r := nativelib.Call(c.lib.cuModuleLoadDataEx, uintptr(unsafe.Pointer(&mod)), uintptr(unsafe.Pointer(&src[0])),
		uintptr(len(opts)), uintptr(unsafe.Pointer(&opts[0])), uintptr(unsafe.Pointer(&vals[0])))
	if err := c.lib.check("cuModuleLoadDataEx", r); err != nil {
		e := err.(*Error)
		e.Log = strings.TrimSpace(nativelib.CString(&errLog[0], logSize))
		return 0, fmt.Errorf("module %s: %w", name, e)
	}
	return mod, nil
}

func (c *Context) moduleUnload(m uintptr) error {
	return c.lib.check("cuModuleUnload", nativelib.Call(c.lib.cuModuleUnload, m))
}

func (c *Context) function(m uintptr, name string) (uintptr, error) {
	cname := append([]byte(name), 0)
	var f uintptr
	if err := c.lib.check("cuModuleGetFunction", nativelib.Call(c.lib.cuModuleGetFunction, uintptr(unsafe.Pointer(&f)), m, uintptr(unsafe.Pointer(&cname[0])))); err != nil {
		return 0, fmt.Errorf("kernel %s: %w", name, err)
	}
	return f, nil
}

// launch starts a kernel; params points to the array of pointers to its
// arguments, kept alive (and pinned) by the caller.
func (c *Context) launch(f uintptr, grid, block [3]uint32, shared uint32, stream uintptr, params unsafe.Pointer) error {
	return c.lib.check("cuLaunchKernel", c.hot(c.lib.cuLaunchKernel, f,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(shared), stream, uintptr(params), 0))
}

func (c *Context) ctxSync() error {
	return c.lib.check("cuCtxSynchronize", nativelib.Call(c.lib.cuCtxSynchronize))
}

// CUDA Graphs, on the driver thread only.

// captureThreadLocal is CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: only this
// thread's calls are checked during a capture (every call of the package
// is on the driver thread).
const captureThreadLocal = 1

// capture records what enqueue puts on stream s into an executable graph:
// cuStreamBeginCapture, enqueue, cuStreamEndCapture, cuGraphInstantiate.
// The launches' arguments are copied into the graph as they are now.
func (c *Context) capture(s uintptr, enqueue func() error) (exec uintptr, err error) {
	l := c.lib
	if err := l.graphsErr(); err != nil {
		return 0, err
	}
	if err := l.check("cuStreamBeginCapture_v2", nativelib.Call(l.cuStreamBeginCapture, s, captureThreadLocal)); err != nil {
		return 0, err
	}
	eerr := enqueue()
	var graph uintptr
	if err := l.check("cuStreamEndCapture", nativelib.Call(l.cuStreamEndCapture, s, uintptr(unsafe.Pointer(&graph)))); err != nil || eerr != nil {
		if graph != 0 {
			err = errors.Join(err, l.check("cuGraphDestroy", nativelib.Call(l.cuGraphDestroy, graph)))
		}
		return 0, errors.Join(eerr, err)
	}
	err = l.check("cuGraphInstantiateWithFlags", nativelib.Call(l.cuGraphInstantiate, uintptr(unsafe.Pointer(&exec)), graph, 0))
	return exec, errors.Join(err, l.check("cuGraphDestroy", nativelib.Call(l.cuGraphDestroy, graph)))
}

func (c *Context) graphLaunch(exec, s uintptr) error {
	return c.lib.check("cuGraphLaunch", c.hot(c.lib.cuGraphLaunch, exec, s))
}

func (c *Context) graphExecDestroy(exec uintptr) error {
	return c.lib.check("cuGraphExecDestroy", nativelib.Call(c.lib.cuGraphExecDestroy, exec))
}
