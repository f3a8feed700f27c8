//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 32, item 14: a CUDA driver that never returns from cuInit (package
// cuda's fake driver, cuda/testdata/fakecuda.c, built as libcuda.so.1 and
// found through LD_LIBRARY_PATH, with FAKECUDA_HANG_INIT set) must not
// make `cuda check` or `ladder --device cuda` deaf to SIGINT and SIGTERM:
// each exits 130 ("interrupted") once signalled. The build before the fix
// waited in cuInit for ever; the bound here (10 s from the signal) only
// tells an exit from a hang, and the time taken is logged.
func TestSignalStopsAHungCUDAInit(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("the fake CUDA driver needs the C compiler cc (part of this project's machines): %v", err)
	}
	bin := buildHeadspace(t)
	lib := t.TempDir()
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", filepath.Join(lib, "libcuda.so.1"), "../../cuda/testdata/fakecuda.c").CombinedOutput(); err != nil {
		t.Fatalf("cc fakecuda.c: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		sig  os.Signal
	}{
		{"cuda check, SIGINT", []string{"cuda", "check", "--sizes", "1", "--reps", "1", "--batch", "2", "--side", "32", "--steps", "1"}, os.Interrupt},
		{"cuda check, SIGTERM", []string{"cuda", "check", "--sizes", "1", "--reps", "1", "--batch", "2", "--side", "32", "--steps", "1"}, syscall.SIGTERM},
		{"ladder --device cuda, SIGINT", append([]string{"ladder", "--device", "cuda", "--levels", "device", "--workers", "1", "--transforms", "fast"}, tinyLadder...), os.Interrupt},
	} {
		reached := filepath.Join(t.TempDir(), "in-cuInit")
		cmd := exec.Command(bin, tc.args...)
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+lib, "FAKECUDA_HANG_INIT="+reached)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		kill := func(format string, args ...any) {
			cmd.Process.Kill()
			<-done
			t.Fatalf(tc.name+": "+format+"; stderr %q", append(args, stderr.String())...)
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(reached); err == nil {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("%s: exited (%v) before reaching cuInit; stderr %q", tc.name, err, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				kill("never reached the fake's cuInit")
			}
		}
		sent := time.Now()
		if err := cmd.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			kill("still running 10 s after %v, stuck in cuInit", tc.sig)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).ExitStatus() != 130 {
			t.Errorf("%s: %v, want exit 130; stderr %q", tc.name, err, stderr.String())
		}
		if want := "headspace " + tc.args[0] + ": interrupted\n"; stderr.String() != want {
			t.Errorf("%s: stderr %q, want %q", tc.name, stderr.String(), want)
		}
		t.Logf("%s: %v, %v after the signal", tc.name, strings.TrimSpace(stderr.String()), time.Since(sent).Round(time.Millisecond))
	}
}
