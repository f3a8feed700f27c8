//go:build linux

package ondisk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EvictAvailable reports whether Evict works on this system.
const EvictAvailable = true

// Evict drops the dataset's files (files, skipping those of a dataset the
// user brings that cannot be opened) from the page cache, so the next
// reads go to storage: each file is synced (dirty pages cannot be dropped)
// and then advised away with posix_fadvise(POSIX_FADV_DONTNEED). The kernel
// drops only clean pages that no other process has mapped or locked, so
// a file another process holds mapped stays (partly) cached; Resident
// tells how much remained. It is available on Linux only.
func Evict(ctx context.Context, dir string) (CacheStats, error) {
	return eachFileOf(ctx, dir, "evict", evictFile)
}

func evictFile(p string) (int64, error) {
	f, err := OpenRegular(p)
	if err != nil {
		return 0, openErr{fmt.Errorf("ondisk: evict: %w", err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("ondisk: evict: %w", err)
	}
	// Dirty pages cannot be dropped: write them first. On a read-only
	// file system there are none, and fsync may refuse; go on.
	if err := f.Sync(); err != nil && !errors.Is(err, unix.EROFS) && !errors.Is(err, unix.EINVAL) {
		return 0, fmt.Errorf("ondisk: evict: %s: sync: %w", p, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, fmt.Errorf("ondisk: evict: %s: posix_fadvise: %w", p, err)
	}
	return fi.Size(), nil
}

// Resident reports how many bytes of the dataset's files (files) are in the page
// cache (by mmap and mincore, a page at a time) out of their total size.
func Resident(dir string) (resident, total int64, err error) {
	page := int64(os.Getpagesize())
	st, err := eachFileOf(context.Background(), dir, "resident", func(p string) (int64, error) {
		r, t, err := residentFile(p, page)
		total += t
		return r, err
	})
	if err != nil {
		return 0, 0, err
	}
	return st.Bytes, total, nil
}

func residentFile(p string, page int64) (int64, int64, error) {
	f, err := OpenRegular(p)
	if err != nil {
		return 0, 0, openErr{fmt.Errorf("ondisk: resident: %w", err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("ondisk: resident: %w", err)
	}
	size := fi.Size()
	if size == 0 {
		return 0, 0, nil
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, fmt.Errorf("ondisk: resident: %s: mmap: %w", p, err)
	}
	defer unix.Munmap(mem)
	vec := make([]byte, (size+page-1)/page)
	if err := mincore(mem, vec); err != nil {
		return 0, 0, fmt.Errorf("ondisk: resident: %s: mincore: %w", p, err)
	}
	var r int64
	for k, v := range vec {
		if v&1 != 0 {
			r += min(page, size-int64(k)*page)
		}
	}
	return r, size, nil
}

// mincore is mincore(2); x/sys/unix has no wrapper for it.
func mincore(mem, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return e
	}
	return nil
}
