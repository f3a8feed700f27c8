//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLadderOnCuDNN runs `ladder --device cuda --backend cudnn|auto` end
// to end on package cuda's fake driver (cuda/testdata/fakecuda.c as
// libcuda.so.1) and fake cuDNN and cuBLAS (fakednn.c through
// HEADSPACE_CUDNN and HEADSPACE_CUBLAS): the run trains on the library
// ops and its result file says the backend and the libraries; without
// the libraries cudnn is an error naming the missing one, and auto
// falls back to the kernels and says so. The fake computes nothing a GPU
// would time, so the test checks what the run makes, never a figure.
func TestLadderOnCuDNN(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("the fake CUDA driver needs the C compiler cc (part of this project's machines): %v", err)
	}
	bin := buildHeadspace(t)
	lib := t.TempDir()
	for _, f := range [][2]string{{"libcuda.so.1", "fakecuda.c"}, {"libfakednn.so", "fakednn.c"}} {
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", filepath.Join(lib, f[0]), "../../cuda/testdata/"+f[1]).CombinedOutput(); err != nil {
			t.Fatalf("cc %s: %v\n%s", f[1], err, out)
		}
	}
	dnn := filepath.Join(lib, "libfakednn.so")
	missing := filepath.Join(lib, "libcudnn.so.404")
	for _, tc := range []struct {
		backend, cudnn string
		want           []string
		fails          string
	}{
		{"cudnn", dnn, []string{"\nbackend: cudnn\n", "\ncudnn: " + dnn + "\n", "\ncudnn-version: 9.1.0\n", "\ncublas: " + dnn + "\n"}, ""},
		{"auto", missing, []string{"\nbackend: kernels\n", "\ncudnn: not loaded: no cuDNN library found"}, ""},
		{"cudnn", missing, nil, "the Net on cuDNN and cuBLAS: no cuDNN library found"},
	} {
		out, calls := filepath.Join(t.TempDir(), "ladder.txt"), filepath.Join(t.TempDir(), "fakednn.log")
		cmd := exec.Command(bin, "ladder", "--device", "cuda", "--backend", tc.backend, "--levels", "device,host", "--workers", "1",
			"--raw-size", "48", "--crop", "16", "--batch", "2", "--steps", "2", "--count", "1", "--quiet-wait", "0", "--out", out)
		// Only the named files: the machine's own cuDNN is never found.
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+lib, "HEADSPACE_CUDNN="+tc.cudnn, "HEADSPACE_CUBLAS="+dnn, "VIRTUAL_ENV=", "HOME="+t.TempDir(), "FAKEDNN_LOG="+calls)
		b, err := cmd.CombinedOutput()
		if tc.fails != "" {
			if err == nil || !strings.Contains(string(b), tc.fails) {
				t.Errorf("--backend %s without cuDNN: %v, output %s; want a failure saying %q", tc.backend, err, b, tc.fails)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ladder --backend %s: %v\n%s", tc.backend, err, b)
		}
		file, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range append(tc.want, "BenchmarkLadder/level=device/", "BenchmarkLadder/level=host/", "\ngpu: Fake GPU") {
			if !strings.Contains(string(file), want) {
				t.Errorf("--backend %s: the result file lacks %q:\n%s", tc.backend, want, file)
			}
		}
		// The steps called cuDNN (the fake's log), or nothing did.
		log, _ := os.ReadFile(calls)
		onCudnn := strings.Contains(string(log), "cudnnConvolutionForward") && strings.Contains(string(log), "cudnnConvolutionBackwardBias") &&
			strings.Contains(string(log), "cudnnActivationBackward")
		if onCudnn != (tc.cudnn == dnn) {
			t.Errorf("--backend %s: the fake cuDNN's calls:\n%s\nwant the step's convolutions there: %v", tc.backend, log, tc.cudnn == dnn)
		}
	}
}
