package node

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is /proc/stat's unit, USER_HZ: 100 on every Linux
// architecture Go supports.
const clockTick = 10 * time.Millisecond

// CPUTimes is the machine's busy CPU time so far, every process's, split
// by priority: Normal at nice 0 or below (user, system, irq, softirq,
// steal) and Niced (the nice field: processes at a positive nice value).
type CPUTimes struct {
	Normal, Niced time.Duration
}

// ReadCPUTimes reads CPUTimes from /proc/stat (Linux only; an error
// elsewhere).
func ReadCPUTimes() (CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, fmt.Errorf("machine CPU time: %w", err)
	}
	return ParseCPUTimes(b)
}

// ParseCPUTimes reads the first line of /proc/stat ("cpu user nice
// system idle iowait irq softirq steal …").
func ParseCPUTimes(data []byte) (CPUTimes, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return CPUTimes{}, errors.New("/proc/stat: the first line is not the cpu total")
	}
	var v [8]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/int64(clockTick)/int64(len(v)) { // the sum fits a Duration
			return CPUTimes{}, fmt.Errorf("/proc/stat: field %d %q is not a count", i+1, f[i+1])
		}
		v[i] = n
	}
	normal := v[0] + v[2] + v[5] + v[6] + v[7] // user system irq softirq steal
	return CPUTimes{Normal: time.Duration(normal) * clockTick, Niced: time.Duration(v[1]) * clockTick}, nil
}

// Competing is the CPU time of the interval from a to b that competed
// with processes at this priority: with niced false (this process at
// nice 0) the normal time only, as CFS gives a nice-0 task about nine
// times a nice-10 task's share; niced, all of it.
func Competing(a, b CPUTimes, niced bool) time.Duration {
	d := b.Normal - a.Normal
	if niced {
		d += b.Niced - a.Niced
	}
	return max(d, 0)
}

// Runnable samples the machine's runnable tasks (/proc/stat's
// procs_running: running or waiting for a CPU, every process's) every
// interval until stop, which returns their mean, less the sampler
// itself, and whether any sample was read (Linux only).
func Runnable(every time.Duration) (stop func() (mean float64, ok bool)) {
	done := make(chan struct{})
	result := make(chan [2]float64, 1)
	go func() {
		var sum, n float64
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if v, err := procsRunning(); err == nil {
				sum += v - 1 // this goroutine's thread is running
				n++
			}
			select {
			case <-done:
				result <- [2]float64{sum, n}
				return
			case <-t.C:
			}
		}
	}()
	return func() (float64, bool) {
		close(done)
		r := <-result
		if r[1] == 0 {
			return 0, false
		}
		return max(r[0]/r[1], 0), true
	}
}

// procsRunning reads /proc/stat's procs_running.
func procsRunning() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "procs_running "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, errors.New("/proc/stat: no procs_running line")
}
