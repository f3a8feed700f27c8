//go:build linux

package disturb

import (
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// threadDelays reads each thread's run-queue delay from
// /proc/self/task/*/schedstat; false when there is none to read.
func threadDelays() (map[int]time.Duration, bool) {
	dir, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, false
	}
	out := make(map[int]time.Duration, len(dir))
	for _, e := range dir {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited
		}
		d, err := parseSchedstat(string(b))
		if err != nil {
			continue
		}
		out[tid] = d
	}
	return out, len(out) > 0
}

// cpuPressure reads the machine's total CPU stall time ("some").
func cpuPressure() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	d, err := parsePressure(string(b))
	return d, err == nil
}

// cpuTicks reads /proc/stat's busy and total ticks.
func cpuTicks() (busy, all uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	busy, all, err = parseStat(string(b))
	return busy, all, err == nil
}
