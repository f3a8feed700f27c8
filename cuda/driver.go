// Package cuda binds the CUDA driver API (libcuda.so.1) at run time with
// github.com/ebitengine/purego: no cgo, no CUDA toolkit at build time, one
// binary that uses a GPU where there is one and says clearly why not where
// there is none.
package cuda

import (
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
)

// Library is the driver's soname.
const Library = "libcuda.so.1"

var (
	loadOnce sync.Once
	loadErr  error
	handle   uintptr
)

// Load opens the driver library once. Without one it returns an error that
// starts "no CUDA driver found (libcuda.so.1): " and carries the loader's reason.
func Load() (uintptr, error) {
	loadOnce.Do(func() {
		h, err := purego.Dlopen(Library, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			loadErr = fmt.Errorf("no CUDA driver found (%s): %w", Library, err)
			return
		}
		handle = h
	})
	return handle, loadErr
}
