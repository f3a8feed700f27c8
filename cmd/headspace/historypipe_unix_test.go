//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// free ends a command's wait on the named pipe at path, until it
// returns its result on done: a reader and a writer that open the pipe
// without blocking and close it again, every 50 ms.
func free[T any](path string, done <-chan T) T {
	for {
		select {
		case r := <-done:
			return r
		case <-time.After(50 * time.Millisecond):
		}
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
}

// TestHistoryIndexNamedPipe: a machine folder's .index that is a named
// pipe is refused by add and latest with exit 2 and one line naming it,
// at once, and left as it is: its open or read, which would wait for a
// writer that never comes (and so ignore SIGINT and SIGTERM), never
// happens. Should a command wait on it, the test opens and closes the
// pipe after a minute (free) so that the command returns and the test
// fails rather than hangs.
func TestHistoryIndexNamedPipe(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	if code, out, stderr := runCLI("history", "add", "--store", store, historyRun(t, src, 0, 100, "")); code != 0 {
		t.Fatalf("add: exit %d, %q %q", code, out, stderr)
	}
	index := filepath.Join(store, "emulated-test-cpu-2c-70f22c8f", ".index")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(index, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"add", []string{"history", "add", "--store", store, historyRun(t, src, 1, 100, "")}},
		{"latest", []string{"history", "latest", "--store", store, historyRun(t, src, 2, 100, "")}},
	} {
		type result struct {
			code           int
			stdout, stderr string
		}
		done := make(chan result, 1)
		go func() {
			code, out, stderr := runCLI(tc.args...)
			done <- result{code, out, stderr}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(time.Minute):
			t.Errorf("%s: waited on the named pipe for a minute", tc.name)
			r = free(index, done)
		}
		if r.code != 2 || !strings.Contains(r.stderr, index+" is not a regular file (a named pipe)") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and one line naming the pipe", tc.name, r.code, r.stdout, r.stderr)
		}
		if fi, err := os.Lstat(index); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("%s: the index is no longer the named pipe (%v, %v)", tc.name, fi, err)
		}
	}
}
