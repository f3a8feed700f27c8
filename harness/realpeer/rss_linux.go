//go:build linux

package realpeer

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// samplePeak samples the summed resident memory of every process in the
// process group pgid every period until stop closes, and returns its peak
// in bytes.
func samplePeak(pgid int, every time.Duration, stop <-chan struct{}) int64 {
	page := int64(os.Getpagesize())
	var peak int64
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if s := groupResident(pgid) * page; s > peak {
			peak = s
		}
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}

// groupResident is the summed resident pages of the processes of group
// pgid (/proc/PID/stat's pgrp, /proc/PID/statm's resident).
func groupResident(pgid int) int64 {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pgrp, ok := procPgrp(pid); !ok || pgrp != pgid {
			continue
		}
		if data, err := os.ReadFile("/proc/" + e.Name() + "/statm"); err == nil {
			if f := strings.Fields(string(data)); len(f) > 1 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				sum += n
			}
		}
	}
	return sum
}

// procPgrp is pid's process group, from /proc/PID/stat (the fields after
// the command's closing parenthesis: state, ppid, pgrp).
func procPgrp(pid int) (int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parsePgrp(string(data))
}

// parsePgrp reads the pgrp field of a /proc/PID/stat line.
func parsePgrp(stat string) (int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 3 {
		return 0, false
	}
	n, err := strconv.Atoi(f[2])
	return n, err == nil
}
