//go:build linux

package cuda

import "github.com/ebitengine/purego"

// dlopen opens a shared library and resolves name in it.
func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// ccall calls the C function fn with integer and pointer arguments and
// returns its integer result. Pointers converted to uintptr in the call
// expression stay alive for the call.
//
//go:uintptrescapes
func ccall(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// ccallArgs calls fn with args, a slice the caller keeps (on the heap),
// so that a call allocates nothing. Pointers among args must point to
// memory that cannot move: C memory, or Go heap objects the caller keeps
// alive.
func ccallArgs(fn uintptr, args []uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
