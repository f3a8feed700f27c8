//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// tunable copies testdata/tunable.py into a directory of the test's own
// (noneLeft).
func tunable(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/tunable.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tunable.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunAtAppliesSettings checks the hook runs the training loader at
// a tune candidate's settings, the script unchanged, reports the
// script's own, and times the steps after the warm-up; and that a
// candidate whose workers fail is the script's failure.
func TestRunAtAppliesSettings(t *testing.T) {
	needTorch(t)
	script := tunable(t)
	cmd := command(t, script, "--getitem-ms", "1", "--step-ms", "1")
	pf, err := exec.Command(python, "-c", "import torch.utils.data as d; print(d.DataLoader([0]).prefetch_factor)").Output()
	if err != nil {
		t.Fatal(err)
	}
	ownPrefetch := strings.TrimSpace(string(pf))
	for _, tc := range []struct {
		ls      *ownloop.LoaderSettings
		workers int
		line    string
	}{
		// The script's own: torch 2 has no prefetch_factor without
		// workers (None), torch 1.13 keeps its default of 2.
		{nil, 0, "loader: num_workers=0 prefetch_factor=" + ownPrefetch + " pin_memory=False persistent_workers=False start=default"},
		{&ownloop.LoaderSettings{Workers: 2, Prefetch: 3, Persistent: true, Start: "forkserver"}, 2,
			"loader: num_workers=2 prefetch_factor=3 pin_memory=False persistent_workers=True start=forkserver"},
		{&ownloop.LoaderSettings{Workers: 1}, 1, "loader: num_workers=1 prefetch_factor=2 pin_memory=False persistent_workers=False start=default"},
	} {
		var out bytes.Buffer
		tm, err := ownloop.RunAt(context.Background(), cmd, 1, tc.ls, 6, 2*time.Minute, &out)
		if err != nil {
			t.Fatalf("%+v: %v\n%s", tc.ls, err, out.String())
		}
		if !strings.Contains(out.String(), tc.line) {
			t.Errorf("%+v: the script ran its loader as\n%s\nwant %q", tc.ls, out.String(), tc.line)
		}
		ld, _ := tm.Run.Target()
		if tm.Workers != tc.workers || ld.Own != (ownloop.LoaderSettings{Workers: 0, Prefetch: 0}) {
			t.Errorf("%+v: ran %d workers, own %+v; want %d and the script's 0", tc.ls, tm.Workers, ld.Own, tc.workers)
		}
		// One step and the prefetched batches left out: 6 timed.
		if len(tm.Steps) != 6 || tm.StepsPerSec() <= 0 || tm.Wall <= 0 {
			t.Errorf("%+v: %d steps timed, %.1f steps/s, wall %v", tc.ls, len(tm.Steps), tm.StepsPerSec(), tm.Wall)
		}
	}
	bad := command(t, script, "--getitem-ms", "1", "--step-ms", "1", "--max-workers", "1")
	var out bytes.Buffer
	_, err = ownloop.RunAt(context.Background(), bad, 1, &ownloop.LoaderSettings{Workers: 2}, 6, 2*time.Minute, &out)
	if err == nil || !strings.Contains(out.String(), "out of memory (--max-workers 1)") {
		t.Errorf("2 workers of at most 1: %v\n%s", err, out.String())
	}
	noneLeft(t, script)
}
