package ownloop_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/harness/engines/ownloop"
)

// BenchmarkHookOverhead is what the hook's timed cache iterator adds per
// batch to a training loop, over a plain iteration of the same batches,
// events written included (to /dev/null): hook-ns/batch, the target under
// 50 µs and under 1% of a 10 ms step. It runs the hook's --overhead mode
// with Debian's python3; torch is not needed.
func BenchmarkHookOverhead(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ownloop.HookModule+".py"), ownloop.Source, 0o600); err != nil {
		b.Fatal(err)
	}
	const batches = 200000
	var sum float64
	n := 0
	for b.Loop() {
		cmd := exec.Command(python, "-m", ownloop.HookModule, "--overhead", "200000")
		cmd.Env = append(os.Environ(), "PYTHONPATH="+dir)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%s -m %s --overhead: %v", python, ownloop.HookModule, err)
		}
		var r struct {
			Batches  int     `json:"batches"`
			PerBatch float64 `json:"per_batch_ns"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.Batches != batches {
			b.Fatalf("--overhead printed %q: %v", out, err)
		}
		sum += r.PerBatch
		n++
	}
	b.ReportMetric(sum/float64(n), "hook-ns/batch")
}
