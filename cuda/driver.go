// Package cuda binds the CUDA driver API (libcuda.so.1) at run time with
// github.com/ebitengine/purego (through internal/nativelib, as nvJPEG is
// bound too): no cgo, no CUDA toolkit at build time, one binary that uses
// a GPU where there is one and says clearly why not where there is none.
//
// Every driver call runs on one goroutine locked to its OS thread, the
// thread on which the device's primary context is current; every CUresult
// is checked and turned into an *Error that names the call and CUDA's name
// for the result. On top of the binding the package provides a
// device.Device that runs a Plan (buffers and kernel launches, the Net's
// training step) on the GPU, the bandwidth measurements of
// `headspace cuda check`, and the execution of kernel Checks.
//
// The binding is Linux-only; elsewhere Open and Load return an error that
// says so.
package cuda

import (
	"errors"
	"fmt"
	"sync"
)

// Library is the driver's soname.
const Library = "libcuda.so.1"

// ErrUnsupported is returned by Load and Open where the binding does not
// exist (every OS but Linux).
var ErrUnsupported = errors.New("CUDA is supported on Linux only")

var (
	loadOnce sync.Once
	loadLib  *driverLib
	loadErr  error
)

// Load opens the driver library once and resolves every entry point the
// package uses. Without a driver it returns an error that starts
// "no CUDA driver found (libcuda.so.1): " and carries the loader's reason.
func Load() error {
	_, err := load()
	return err
}

// LoadFrom is Load with the driver library at path instead of
// libcuda.so.1: for a driver outside the loader's search path, and for
// the tests of code above this package with a fake driver (built from
// testdata/fakecuda.c, which computes nothing: never a source of
// figures). It must come before any Load or Open, and fails after one.
func LoadFrom(path string) error {
	if !loadOnceFrom(path) {
		loaded := Library
		if loadLib != nil {
			loaded = loadLib.path
		}
		return fmt.Errorf("cuda: LoadFrom(%s) after the driver was loaded (%s)", path, loaded)
	}
	return loadErr
}

// loadOnceFrom opens the driver library at path unless one was opened (or
// tried) before, and reports whether it did.
func loadOnceFrom(path string) (ran bool) {
	loadOnce.Do(func() {
		ran = true
		loadLib, loadErr = openLibrary(path)
		if loadErr != nil {
			loadErr = fmt.Errorf("no CUDA driver found (%s): %w", path, loadErr)
		}
	})
	return ran
}

func load() (*driverLib, error) {
	loadOnceFrom(Library)
	return loadLib, loadErr
}

// Error is a CUresult other than CUDA_SUCCESS.
type Error struct {
	Call string // the driver entry point, e.g. "cuMemAlloc_v2"
	Code int    // the CUresult
	Name string // CUDA's name for it, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Log  string // the JIT's error log, for cuModuleLoadDataEx
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Log != "" {
		s += ": JIT log: " + e.Log
	}
	return s
}

// CUresult values the package tests for.
const (
	errOutOfMemory = 2   // CUDA_ERROR_OUT_OF_MEMORY
	errNotReady    = 600 // CUDA_ERROR_NOT_READY
)

// IsOutOfMemory reports whether err is a CUDA_ERROR_OUT_OF_MEMORY.
func IsOutOfMemory(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == errOutOfMemory
}
