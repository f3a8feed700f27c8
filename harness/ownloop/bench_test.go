package ownloop_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// python is the interpreter the own-loop tests run scripts with:
// $HEADSPACE_OWNLOOP_PYTHON (make test-ownloop-torch2 names the pinned
// environment's torch 2), else Debian's with python3-torch (make
// test-deps), the oldest torch supported.
var python = ownloop.TestPython()

// launcher starts torchrun's ranks with python's torch (TestLauncher),
// launcherName is its name in the report.
var launcher, launcherName = ownloop.TestLauncher()

// BenchmarkHookOverhead is what the hook's timed cache iterator adds per
// batch to a training loop, over a plain iteration of the same batches,
// events written included (to /dev/null): hook-ns/batch, the target under
// 50 µs and under 1% of a 10 ms step; and what it adds in a worker to a
// batch of 32 samples of a torchvision-style dataset (__getitem__,
// .loader and .transform timed per sample, collate timed and its event
// written): worker-ns/batch. It runs the hook's --overhead mode with
// Debian's python3; torch is not needed.
func BenchmarkHookOverhead(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ownloop.HookModule+".py"), ownloop.Source, 0o600); err != nil {
		b.Fatal(err)
	}
	const batches = 200000
	var sum, wsum float64
	n := 0
	for b.Loop() {
		cmd := exec.Command(python, "-m", ownloop.HookModule, "--overhead", "200000")
		cmd.Env = append(os.Environ(), "PYTHONPATH="+dir)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%s -m %s --overhead: %v", python, ownloop.HookModule, err)
		}
		var r struct {
			Batches   int     `json:"batches"`
			PerBatch  float64 `json:"per_batch_ns"`
			WorkerPer float64 `json:"worker_per_batch_ns"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.Batches != batches {
			b.Fatalf("--overhead printed %q: %v", out, err)
		}
		sum += r.PerBatch
		wsum += r.WorkerPer
		n++
	}
	b.ReportMetric(sum/float64(n), "hook-ns/batch")
	b.ReportMetric(wsum/float64(n), "worker-ns/batch")
}
