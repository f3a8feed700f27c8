package ownloop

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// killTree kills every descendant of pid that /proc shows, those in
// sessions or process groups of their own included, and every process
// whose environment holds mark (RunMark=…: those that outlived their
// parent too): where the command runs without a PID namespace of its own
// (procgroup.Contained), the process group alone would leave them running.
func killTree(pid int, mark string) {
	if pid <= 0 {
		return
	}
	self := os.Getpid()
	for range 3 { // children made while the tree was read
		kids := map[int][]int{}
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			p, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid …: comm may hold spaces and parentheses.
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if len(f) < 2 {
				continue
			}
			if pp, err := strconv.Atoi(f[1]); err == nil {
				kids[pp] = append(kids[pp], p)
			}
			if mark != "" && p != self && p != pid && marked(p, mark) {
				kids[pid] = append(kids[pid], p)
			}
		}
		var found []int
		todo := []int{pid}
		for len(todo) > 0 {
			p := todo[0]
			todo = todo[1:]
			for _, k := range kids[p] {
				found = append(found, k)
				todo = append(todo, k)
			}
		}
		if len(found) == 0 {
			return
		}
		for _, k := range found {
			syscall.Kill(k, syscall.SIGKILL)
		}
	}
}

// namespaced says a starts a command in namespaces of its own.
func namespaced(a *syscall.SysProcAttr) bool { return a != nil && a.Cloneflags != 0 }

// marked says process p's environment holds the line mark.
func marked(p int, mark string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "environ"))
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if kv == mark {
			return true
		}
	}
	return false
}
