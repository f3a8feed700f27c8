package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// adoptOrphans makes this test process the reaper of its descendants'
// orphans (PR_SET_CHILD_SUBREAPER), so Chromium's helper processes, whose
// parent exits first, come back to the test to be waited for instead of
// lingering as zombies.
func adoptOrphans(t testing.TB) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Logf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
}

// noProcessesWith fails unless, within 10 s, no process's command line
// contains marker (the browser's fresh user-data-dir), reaping the
// orphans it adopted meanwhile.
func noProcessesWith(t testing.TB, marker string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		children := true
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.ECHILD {
				children = false // every child reaped: no zombie stays behind
			}
			if pid <= 0 || err != nil {
				break
			}
		}
		var left []string
		paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err == nil && strings.Contains(string(b), marker) {
				left = append(left, filepath.Base(filepath.Dir(p)))
			}
		}
		if len(left) == 0 && !children {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("chromium processes left behind: pids %s (children left: %v)", strings.Join(left, ", "), children)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
