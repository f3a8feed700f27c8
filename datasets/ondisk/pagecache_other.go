//go:build !linux

package ondisk

import (
	"context"
	"fmt"
	"runtime"
)

// EvictAvailable reports whether Evict works on this system.
const EvictAvailable = false

// Evict is available on Linux only; here it returns an error.
func Evict(ctx context.Context, dir string) (CacheStats, error) {
	return CacheStats{}, fmt.Errorf("ondisk: page-cache eviction is not available on %s", runtime.GOOS)
}

// Resident is available on Linux only; here it returns an error.
func Resident(dir string) (resident, total int64, err error) {
	return 0, 0, fmt.Errorf("ondisk: page-cache residency is not available on %s", runtime.GOOS)
}
