//go:build linux

// Package cudatest gives tests package cuda's fake driver and fake
// libraries (cuda/testdata/*.c), built with the machine's C compiler, so
// that a GPU command's whole path runs without a GPU: what it makes is
// checked, never a figure. Only tests import it.
package cudatest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/cuda"
)

// loaded is the fake driver this test binary loaded, once: package cuda
// loads one driver per process.
var loaded struct {
	once sync.Once
	so   string
	err  error
}

// Load builds cuda/testdata/fakecuda.c and loads it as the driver, and
// the fake cuDNN and cuBLAS (fakednn.c, one library), so that cuDNN's
// path runs whatever the machine has installed; once per test binary.
// It returns the driver's path.
func Load(t testing.TB) string {
	t.Helper()
	loaded.once.Do(func() {
		dir, err := os.MkdirTemp("", "headspace-fakecuda-")
		if err != nil {
			loaded.err = err
			return
		}
		// Loaded, the library needs no file: remove it at once.
		defer os.RemoveAll(dir)
		loaded.so, loaded.err = Build(dir, "fakecuda")
		if loaded.err == nil {
			loaded.err = cuda.LoadFrom(loaded.so)
		}
		var dnn string
		if loaded.err == nil {
			dnn, loaded.err = Build(dir, "fakednn")
		}
		if loaded.err == nil {
			loaded.err = cuda.LoadDNNFrom(dnn, dnn)
		}
	})
	if loaded.err != nil {
		t.Fatal(loaded.err)
	}
	return loaded.so
}

// Build builds cuda/testdata/<name>.c into dir/lib<name>.so.
func Build(dir, name string) (string, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("the fake %s needs the C compiler cc (part of this project's machines): %v", name, err)
	}
	_, here, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(here), "..", "testdata", name+".c")
	so := filepath.Join(dir, "lib"+name+".so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", so, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the fake %s: %v\n%s", name, err, out)
	}
	return so, nil
}
