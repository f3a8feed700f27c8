package machine

import (
	"os"
	"strconv"
	"strings"
)

// Memory is the memory available to new allocations without swapping, in
// bytes: MemAvailable of /proc/meminfo. ok is false where it cannot be
// read (outside Linux), and callers then skip checks that need it.
func Memory() (bytes int64, ok bool) { return memAvailable("/proc/meminfo") }

func memAvailable(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		rest, found := strings.CutPrefix(line, "MemAvailable:")
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
