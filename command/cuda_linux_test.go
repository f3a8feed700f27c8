//go:build linux

package command

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/cuda/cudatest"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/workloads"
)

// TestCUDACheckCommandOnAFakeDriver runs headspace cuda check, made from
// its experiment by CommandOf (issue 53), on the fake driver: the
// console prints each measurement as it is made, the file records the
// GPU's lines (known once the check has opened it) and every
// measurement even when a kernel check fails (the fake's kernels write
// nothing: exit 1 with the *CUDACheckError), and --from prints the same
// copy speeds and Net steps from the file, without the losses no record
// holds.
func TestCUDACheckCommandOnAFakeDriver(t *testing.T) {
	cudatest.Load(t)
	out := filepath.Join(t.TempDir(), "check.txt")
	var run, from strings.Builder
	err := cudaCheckCommand.Run(context.Background(), []string{"--sizes", "1,2", "--reps", "1", "--batch", "2", "--side", "32", "--steps", "2", "--out", out}, &run, io.Discard)
	var failed *workloads.CUDACheckError
	if err != nil && !errors.As(err, &failed) {
		t.Fatalf("cuda check: %v", err)
	}
	recs, rerr := resultfile.Read(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if gpu := recs[0].GetConfig("gpu"); !strings.HasPrefix(gpu, "Fake GPU") || recs[0].GetConfig("device") != "cuda:"+gpu || recs[0].GetConfig("copy-reps") != "1" {
		t.Errorf("the file's lines: gpu %q, device %q, copy-reps %q; want the fake GPU's and 1", gpu, recs[0].GetConfig("device"), recs[0].GetConfig("copy-reps"))
	}
	if err := cudaCheckCommand.Run(context.Background(), []string{"--from", out}, &from, io.Discard); err != nil {
		t.Fatalf("--from: %v", err)
	}
	_, copies, ok := strings.Cut(from.String(), "\ncopy GB/s")
	copies, _, _ = strings.Cut(copies, "\n\n")
	if !ok || strings.Count(copies, "MiB") != 2 || !strings.Contains(run.String(), "\ncopy GB/s"+copies+"\n\n") {
		t.Errorf("--from's copy speeds are not the run's:\nrun:\n%s\nfrom:\n%s", run.String(), from.String())
	}
	for _, l := range strings.Split(from.String(), "\n") {
		if strings.HasPrefix(l, "Net step") && !strings.Contains(run.String(), l+", loss after them ") {
			t.Errorf("--from printed %q, which the run did not", l)
		}
	}
	if n := strings.Count(from.String(), "Net step"); n == 0 || n != strings.Count(run.String(), "Net step") {
		t.Errorf("--from printed %d Net steps, the run %d", n, strings.Count(run.String(), "Net step"))
	}
}
