//go:build linux

package disturb

import (
	"encoding/binary"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// counters are perf_event_open instruction counters, one per thread alive
// when they were opened (user space only, which an unprivileged process
// may count at perf_event_paranoid 2). Threads the Go runtime starts
// later are not counted; nil when the system refuses any counter.
type counters struct{ fds []int }

func openCounters() *counters {
	dir, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_HARDWARE,
		Config: unix.PERF_COUNT_HW_INSTRUCTIONS,
		Bits:   unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	c := &counters{}
	for _, e := range dir {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fd, err := unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			c.close()
			return nil
		}
		c.fds = append(c.fds, fd)
	}
	if len(c.fds) == 0 {
		return nil
	}
	return c
}

// close sums the counters and closes them; false when there were none
// or one could not be read.
func (c *counters) close() (uint64, bool) {
	if c == nil {
		return 0, false
	}
	var sum uint64
	ok := true
	buf := make([]byte, 8)
	for _, fd := range c.fds {
		if n, err := unix.Read(fd, buf); err != nil || n != 8 {
			ok = false
		} else {
			sum += binary.NativeEndian.Uint64(buf)
		}
		unix.Close(fd)
	}
	c.fds = nil
	return sum, ok
}
