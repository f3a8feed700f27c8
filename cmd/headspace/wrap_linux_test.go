//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneWrappedLoop: tune on a loop over an iterable given to
// headspace_hook.wrap() (no DataLoader, no settings to tune) is refused
// after the profile run in one line, exit 2, with no file and no
// process left.
func TestTuneWrappedLoop(t *testing.T) {
	ownScript(t) // checks torch
	b, err := os.ReadFile("../../harness/ownloop/testdata/wrapped.py")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "wrapped.py")
	if err := os.WriteFile(script, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "tune.txt")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"tune", "--budget", "2m", "--out", out, "--", ownPython, script}, &stdout, &stderr)
	ownLeft(t, script)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	want := "the training loop is an iterable given to headspace_hook.wrap() (Batches), not a DataLoader: it has no loader settings to tune"
	if last := lines[len(lines)-1]; code != 2 || !strings.Contains(last, want) {
		t.Errorf("exit %d, last line %q; want 2 and %q\n%s", code, last, want, stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}
