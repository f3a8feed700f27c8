package gpugoals

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// python is Debian's, which make test-deps gives torch and torchvision.
const python = "/usr/bin/python3"

// runScript runs peers/torch/name with args on the CPU and returns its
// stdout; it fails the test where Debian's torch is missing.
func runScript(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	if err := exec.Command(python, "-c", "import torch, torchvision").Run(); err != nil {
		t.Fatalf("%s cannot import torch and torchvision (make test-deps installs Debian's python3-torch and python3-torchvision): %v", python, err)
	}
	cmd := exec.Command(python, append([]string{filepath.Join("../../peers/torch", name)}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir(), "OMP_NUM_THREADS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return out
}

// PyTorch's Net step at matched math (peers/torch/netstep.py), a tiny run
// on the CPU: a line per run and mode, read as the suite's file; Goals
// takes no CPU line as a GPU's figure, and the same lines said to come
// from the GPU are the matched peers of cuda check's steps.
func TestNetStepScript(t *testing.T) {
	out := runScript(t, "netstep.py", "--device", "cpu", "--batch", "2", "--side", "16", "--steps", "2", "--count", "2")
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(FileTorchNetStep, out)
	rs, err := resultfile.Read(filepath.Join(dir, FileTorchNetStep))
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]int{}
	for _, r := range rs {
		name := string(r.Name)
		if !strings.HasPrefix(name, "TorchNetStep/batch=2/side=16/tf32=") || r.Iters != 2 {
			t.Errorf("line %s × %d: want TorchNetStep/batch=2/side=16/tf32=… × 2", name, r.Iters)
		}
		if v, ok := resultfile.Value(r, "ns/op"); !ok || v <= 0 {
			t.Errorf("%s: ns/op %v", name, v)
		}
		if got := r.GetConfig("cudnn-benchmark"); got != "true" {
			t.Errorf("%s: cudnn-benchmark %q, want true", name, got)
		}
		mode := name[strings.LastIndex(name, "=")+1:]
		mode, _, _ = strings.Cut(mode, "-")
		modes[mode]++
	}
	if modes["off"] != 2 || modes["on"] != 2 {
		t.Errorf("runs by mode %v, want 2 off and 2 on", modes)
	}
	write(FileCheck, []byte("BenchmarkCUDAStep/batch=2/side=16 1 1e6 step-ns\nBenchmarkCUDAStep/batch=2/side=16/precision=tf32 1 5e5 step-ns\n"))
	matched := func() (n int) {
		rep, err := Goals(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range rep.Goals {
			if strings.Contains(g.Name, "at matched math") && g.Measured {
				n++
			}
		}
		return n
	}
	if n := matched(); n != 0 {
		t.Errorf("%d matched-math goals measured from a CPU run, want 0", n)
	}
	write(FileTorchNetStep, bytes.ReplaceAll(out, []byte("torch-device: cpu"), []byte("torch-device: cuda")))
	if n := matched(); n != 2 {
		t.Errorf("%d matched-math goals measured, want 2 (fp32 and tf32; no Graphs lines)", n)
	}
}

// netstep.py refuses bad arguments with exit 2 and a line naming the flag.
func TestNetStepScriptRefuses(t *testing.T) {
	for _, args := range [][]string{{"--side", "12"}, {"--tf32", "maybe"}, {"--count", "0"}, {"--warmup", "0"}} {
		cmd := exec.Command(python, append([]string{"../../peers/torch/netstep.py", "--device", "cpu"}, args...)...)
		cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !(errors.As(err, &ee) && ee.ExitCode() == 2) || !strings.Contains(string(out), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("netstep.py %v: %v\n%s\nwant exit 2 naming %s", args, err, out, args[0])
		}
	}
}
