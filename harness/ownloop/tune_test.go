//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"errors"
	"math"
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

// TestRunAtRanks runs a tune candidate on a node's 2 ranks (torchrun's,
// and a script's own torch.multiprocessing.spawn): the hook applies it to
// every rank's training loader, the script's own reported by each; the
// node's timing is its slowest rank's; and a candidate whose workers fail
// in the ranks is the node's failure, naming the rank.
func TestRunAtRanks(t *testing.T) {
	script := ddp(t)
	args := []string{"--getitem-ms", "1", "--step-ms", "1", "--batch", "4", "--workers", "0"}
	for _, cmd := range []ownloop.Command{torchrun(t, script, args...), spawned(t, script, args...)} {
		var out bytes.Buffer
		ls := &ownloop.LoaderSettings{Workers: 1, Prefetch: 3}
		tm, err := ownloop.RunAt(context.Background(), cmd, 1, ls, 6, 2*time.Minute, &out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out.String())
		}
		if tm.Ranks != 2 || len(tm.Run.Ranks) != 2 || tm.Workers != 1 || tm.Rank < 0 || tm.Rank > 1 {
			t.Fatalf("%s: %d ranks, the slowest %d, %d workers; want 2 ranks at 1 worker", cmd, tm.Ranks, tm.Rank, tm.Workers)
		}
		slowest := math.Inf(1)
		for r, rr := range tm.Run.Ranks {
			ld, ok := rr.Target()
			if !ok || ld.Workers != 1 || ld.PrefetchFactor != 3 || ld.Own != (ownloop.LoaderSettings{}) {
				t.Errorf("%s: rank %d's loader %+v (found %v): want 1 worker, prefetch 3, the script's own 0 workers", cmd, r, ld, ok)
			}
			var sum time.Duration
			n := 0
			for _, st := range rr.Steps {
				if st.Index >= max(1, ld.Warmup) {
					sum += st.Time
					n++
				}
			}
			if n == 0 {
				t.Fatalf("%s: rank %d timed no step", cmd, r)
			}
			slowest = min(slowest, float64(n)*float64(time.Second)/float64(sum))
		}
		if got := tm.StepsPerSec(); math.Abs(got-slowest) > 1e-9*slowest || len(tm.Steps) != 6 {
			t.Errorf("%s: the node's %.3f steps/s over %d steps, want the slowest rank's %.3f over 6", cmd, got, len(tm.Steps), slowest)
		}
	}
	var out bytes.Buffer
	_, err := ownloop.RunAt(context.Background(), torchrun(t, script, append(args, "--max-workers", "1")...), 1, &ownloop.LoaderSettings{Workers: 2}, 6, 2*time.Minute, &out)
	var rf *ownloop.RanksFailed
	if !errors.As(err, &rf) || !strings.Contains(out.String(), "out of memory (--max-workers 1)") {
		t.Errorf("2 workers a rank of at most 1: %v, want a rank failed\n%s", err, out.String())
	}
	noneLeft(t, script)
}
