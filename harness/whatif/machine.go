package whatif

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/stat's counters: USER_HZ, 100 on every
// Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// ParseProcStat reads the busy time of all CPUs together from the first
// line of Linux's /proc/stat ("cpu user nice system idle iowait irq
// softirq steal …"): every field but idle and iowait.
func ParseProcStat(data []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, errors.New("/proc/stat: the first line is not the cpu total")
	}
	var busy int64
	for i, s := range f[1:] {
		if i >= 8 { // guest and guest_nice are counted in user and nice already
			break
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("/proc/stat: field %d %q is not a count", i+1, s)
		}
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if busy > (1<<62)/int64(clockTick) {
			return 0, fmt.Errorf("/proc/stat: counts out of range")
		}
		busy += v
	}
	return time.Duration(busy) * clockTick, nil
}

// MachineBusy is the busy CPU time of the whole machine so far, every
// process's (Linux only).
func MachineBusy() (time.Duration, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("machine CPU time: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("machine CPU time: %w", err)
	}
	return ParseProcStat(line)
}
