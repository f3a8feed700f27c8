//go:build peersenv && linux

// Tests of the launchers that need the pinned peers environment
// (accelerate launch, torch 2): run by `make test-ownloop-torch2`, with
// HEADSPACE_OWNLOOP_PYTHON naming its python; without it they fail.

package ownloop_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// accelerate is script under `accelerate launch --multi_gpu
// --num_processes 2` (the peers environment's accelerate, beside its
// python): 2 ranks of torch.distributed.run on the CPU (gloo), on a free
// port.
func accelerate(t testing.TB, script string, args ...string) ownloop.Command {
	t.Helper()
	if os.Getenv(ownloop.TestPythonEnv) == "" {
		t.Fatalf("%s is not set: run these tests with make test-ownloop-torch2 (after make peers-env)", ownloop.TestPythonEnv)
	}
	bin := filepath.Join(filepath.Dir(python), "accelerate")
	if out, err := exec.Command(python, "-c", "import accelerate").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import accelerate (make peers-env installs it): %v\n%s", python, err, out)
	}
	argv := append([]string{bin, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
		"--dynamo_backend", "no", "--main_process_port", freePort(t), script}, args...)
	c, err := ownloop.ParseCommand(argv)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// example copies examples/own-loop's script name into a directory of
// the test's own (its path names the test's processes: noneLeft).
func example(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "own-loop", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAccelerateRanks: an Accelerate loop (Accelerator().prepare of the
// model, the optimiser and the DataLoader: DataLoaderShard) under
// accelerate launch with 2 ranks, the script unchanged: each rank
// measured, its training loader the one the script made, iterated by
// DataLoaderShard, every rank switched to cached batches at the same
// step, its workers' batches timed, and nothing left running.
func TestAccelerateRanks(t *testing.T) {
	script := example(t, "train_accelerate.py")
	s := settings(12, 8)
	cmd := accelerate(t, script, "--epochs", "3", "--samples", "512", "--getitem-ms", "2", "--workers", "1")
	var out bytes.Buffer
	run, err := ownloop.Exec(context.Background(), cmd, s, &out, nil)
	noneLeft(t, script)
	if err != nil {
		t.Fatalf("Exec: %v\n%s", err, out.String())
	}
	if run.World != 2 || len(run.Ranks) != 2 || !run.Done {
		t.Fatalf("world %d, %d ranks, done %v: want 2 ranks, done\n%s", run.World, len(run.Ranks), run.Done, out.String())
	}
	for r, rr := range run.Ranks {
		if rr == nil || len(rr.Steps) != s.Total() || ownloop.SwitchStep(rr) != s.ReturnCachesAfter {
			t.Fatalf("rank %d: %+v: want %d steps, the switch at %d", r, rr, s.Total(), s.ReturnCachesAfter)
		}
		ld, ok := rr.Target()
		if !ok || !ld.Measured.GetItem || ld.Workers != 1 || !strings.Contains(ld.String(), "DataLoaderShard (accelerate)") || !strings.Contains(ld.String(), "train_accelerate.py:") {
			t.Errorf("rank %d: training loader %v (%+v): want the script's, iterated by DataLoaderShard, its __getitem__ timed in 1 worker", r, ld, ld)
		}
		if len(rr.Batches) == 0 {
			t.Errorf("rank %d: no batch timed in its worker", r)
		}
		for _, b := range rr.Batches {
			if b.Samples != 16 || b.GetItem < 16*2*time.Millisecond {
				t.Errorf("rank %d: batch %+v: want 16 samples, __getitem__ no shorter than their sleeps", r, b)
			}
		}
	}
	nr, err := ownloop.AnalyzeRanks(cmd, s, run, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !nr.Lockstep() {
		t.Errorf("switch steps %v, want every rank at %d", nr.Switch, s.ReturnCachesAfter)
	}
	var text bytes.Buffer
	nr.WriteText(&text)
	if !strings.Contains(text.String(), "node: 2 ranks (accelerate launch)") {
		t.Errorf("the report does not name accelerate launch:\n%s", text.String())
	}
}

// TestAccelerateFaults: under accelerate launch as under torchrun, a
// rank that raises is named after its traceback, a rank that hangs
// before its collective is named from the ranks' stacks, a cancelled
// run (SIGINT's context) returns at once; in each, the launcher, the
// ranks and their workers are gone. The hang's bound on Exec's return is
// liveness (the hang is an hour), not speed.
func TestAccelerateFaults(t *testing.T) {
	t.Run("raises", func(t *testing.T) {
		script := ddp(t)
		var out bytes.Buffer
		_, err := ownloop.Exec(context.Background(), accelerate(t, script, "--getitem-ms", "0", "--step-ms", "0", "--fail-rank", "1", "--fail-at", "5"), settings(20, 10), &out, nil)
		noneLeft(t, script)
		var rf *ownloop.RanksFailed
		if !errors.As(err, &rf) || rf.Rank != 1 || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Exec = %v, want rank 1 failed, one line\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), "rank 1's own failure at step 5") {
			t.Errorf("rank 1's traceback is not in the output:\n%s", out.String())
		}
	})
	t.Run("hangs", func(t *testing.T) {
		script := ddp(t)
		s := settings(20, 10)
		s.FirstBatchTimeout = 60 * time.Second
		start := time.Now()
		var out bytes.Buffer
		_, err := ownloop.Exec(context.Background(), accelerate(t, script, "--getitem-ms", "0", "--step-ms", "1", "--hang-rank", "1", "--hang-at", "4"), s, &out, nil)
		took := time.Since(start)
		noneLeft(t, script)
		var h *ownloop.RanksHung
		if !errors.As(err, &h) || !slices.Equal(h.Stuck, []int{1}) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Exec = %v, want rank 1 named as hanging, one line\n%s", err, out.String())
		}
		if took > 10*time.Minute {
			t.Errorf("Exec took %v: the hang was not acted on", took)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		script := ddp(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := ownloop.Exec(ctx, accelerate(t, script, "--getitem-ms", "5", "--step-ms", "20"), settings(3000, 10), &bytes.Buffer{}, func(st ownloop.Step) {
			if st.Index == 3 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Exec = %v, want context.Canceled", err)
		}
		noneLeft(t, script)
	})
}
