package disturb

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseSchedstat reads the run-queue delay, the second of the three
// numbers of a /proc/<pid>/task/<tid>/schedstat file (time on the CPU,
// time waiting on a run queue, timeslices run; nanoseconds).
func parseSchedstat(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, fmt.Errorf("schedstat %q: want three numbers", s)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("schedstat %q: run delay is not a count of nanoseconds", s)
	}
	return time.Duration(ns), nil
}

// parsePressure reads the "some" line's total= (microseconds) from the
// contents of /proc/pressure/cpu.
func parsePressure(s string) (time.Duration, error) {
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				us, err := strconv.ParseUint(v, 10, 63)
				if err != nil {
					return 0, fmt.Errorf("cpu pressure: total=%q is not a count of microseconds", v)
				}
				return time.Duration(us) * time.Microsecond, nil
			}
		}
	}
	return 0, fmt.Errorf("cpu pressure: no \"some … total=\" line")
}

// parseStat reads the first line of /proc/stat, "cpu  user nice system
// idle iowait irq softirq steal …" in clock ticks: the ticks of all CPUs
// in all and those idle (idle and iowait).
func parseStat(s string) (busy, all uint64, err error) {
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: first line %q is not the cpu total", line)
	}
	var idle uint64
	for i, v := range f[1:] {
		if i >= 8 { // guest and guest_nice are already in user and nice
			break
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %q is not a count of ticks", v)
		}
		all += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return all - idle, all, nil
}
