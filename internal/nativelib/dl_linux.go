//go:build linux

package nativelib

import (
	"runtime"

	"github.com/ebitengine/purego"
)

// Supported reports whether this build can load native libraries.
const Supported = true

// dlopen and dlsym hold the goroutine on its thread from the call to the
// dlerror purego reads on failure: dlerror's message is the thread's, so
// read on another thread it is empty, or another call's (issue 41).
func dlopen(name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func dlsym(h uintptr, name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlsym(h, name)
}

// Call calls the C function fn with integer and pointer arguments and
// returns its integer result. Pointers converted to uintptr in the call
// expression stay alive, and in place, for the call.
//
//go:uintptrescapes
func Call(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// CallArgs calls fn with args, a slice the caller keeps (on the heap), so
// that a call allocates nothing. Pointers among args must point to memory
// that cannot move: C memory, or Go heap objects the caller keeps alive.
func CallArgs(fn uintptr, args []uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// Bind makes fptr, a pointer to a Go function variable, call the C
// function fn with the C calling convention for its parameter types:
// for entry points with floating-point parameters (a double in a
// register), which Call cannot pass.
func Bind(fptr any, fn uintptr) { purego.RegisterFunc(fptr, fn) }

// NewCallback makes fn (a Go func of integer and pointer arguments, with
// no result or one) callable from C, for the function pointers a library
// calls back (libjpeg's error manager): a C function pointer, made once
// per use for the process's life (purego keeps at most about 2000).
func NewCallback(fn any) uintptr { return purego.NewCallback(fn) }
