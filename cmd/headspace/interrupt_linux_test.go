//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildHeadspace builds this command, without the race detector whatever
// the test runs under, so a test can signal a real process whose speed
// is a user's.
func buildHeadspace(t *testing.T) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to build headspace with: %v", err)
		}
	}
	bin := filepath.Join(t.TempDir(), "headspace")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// interrupt sends SIGINT to the started cmd and waits for it (killing it,
// and failing the test, if it still runs 10 s later): its exit status and
// how long it took to exit.
func interrupt(t *testing.T, cmd *exec.Cmd, what string) (code int, took time.Duration) {
	t.Helper()
	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: still running 10 s after SIGINT", what)
	}
	took = time.Since(sent)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Sys().(syscall.WaitStatus).ExitStatus(), took
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return 0, took
}

// rss is process pid's resident memory in bytes.
func rss(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// Issue 21, item 8: SIGINT during the naive transform of a 16384² image
// (805 MB of raw bytes, unpacked into a 1 GiB image as Image.fromarray
// does) stops the run with exit 130 within 3 s of the signal (0.56 s with
// one worker and 0.78 s with two on a quiet 2-core EPYC; the build before
// the fix was still running 15 s after it, so 3 s leaves a loaded machine
// room without letting a run that finishes its sample pass). The time is
// measured from the signal, so a loaded machine's slow start costs nothing; the binary is built without -race. One sample a batch and
// one batch ahead keep the run to the samples in hand, and the loader
// looks at its context before allocating another 805 MB sample.
func TestSIGINTStopsNaiveTransformAt16384(t *testing.T) {
	bin := buildHeadspace(t)
	for _, workers := range []string{"1", "2"} {
		cmd := exec.Command(bin, "ladder", "--levels", "none", "--transforms", "naive", "--raw-size", "16384",
			"--crop", "32", "--batch", "1", "--prefetch", "1", "--workers", workers, "--step", "1ms", "--steps", "2", "--count", "1")
		// GOGC=off: every buffer comes fresh from the system, already
		// zero. With the collector on, a new 805 MB sample may reuse the
		// freed 1 GiB copy, which the runtime must zero first: a memclr
		// of up to a second on a loaded machine that no context check
		// can interrupt. The run is signalled within its first samples,
		// so memory stays at a few GB.
		cmd.Env = append(os.Environ(), "GOGC=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the first raw image is in memory and being
		// transformed (its 805 MB resident), then a little more.
		deadline := time.Now().Add(60 * time.Second)
		for rss(cmd.Process.Pid) < 900<<20 {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("workers %s: the run never held a 16384² image: %s", workers, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		code, took := interrupt(t, cmd, "workers "+workers)
		if code != 130 {
			t.Errorf("workers %s: exit %d, want 130; stderr %q", workers, code, stderr.String())
		}
		if took > 3*time.Second {
			t.Errorf("workers %s: exited %v after SIGINT, want within 3 s", workers, took.Round(time.Millisecond))
		}
		t.Logf("workers %s: exit 130 %v after SIGINT", workers, took.Round(time.Millisecond))
	}
}
