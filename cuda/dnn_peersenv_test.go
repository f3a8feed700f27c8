//go:build peersenv && linux

// A test against the real cuDNN and cuBLAS of the pinned peers env (make
// peers-env: torch's NVIDIA wheels), run by `make test-peers`
// (HEADSPACE_PEERS_PYTHON names its python; without it it fails). It
// needs no GPU: it opens the libraries, as a lent machine's image has
// them, and never creates a handle.

package cuda_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/harness/realpeer"
)

// TestPeersEnvLibraries: the search finds the wheels' libcudnn and
// libcublas in a Python environment (VIRTUAL_ENV), and they have every
// entry point the DNN calls (LoadDNNFrom opens them with all of them),
// cuDNN at version 9 or later.
func TestPeersEnvLibraries(t *testing.T) {
	py := os.Getenv(realpeer.PythonEnv)
	if py == "" {
		t.Fatalf("%s is not set: run this test with make test-peers (after make peers-env)", realpeer.PythonEnv)
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.prefix)").Output()
	if err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	prefix := strings.TrimSpace(string(out))
	t.Setenv("VIRTUAL_ENV", prefix)
	t.Setenv(cuda.CudnnEnv, "")
	t.Setenv(cuda.CublasEnv, "")
	inEnv := func(c []string) string {
		for _, p := range c {
			if strings.HasPrefix(p, prefix+"/") {
				return p
			}
		}
		return ""
	}
	cudnn, cublas := inEnv(cuda.CudnnCandidates()), inEnv(cuda.CublasCandidates())
	if cudnn == "" || cublas == "" {
		t.Fatalf("no cuDNN (%q) or cuBLAS (%q) among the candidates in %s", cudnn, cublas, prefix)
	}
	if err := cuda.LoadDNNFrom(cudnn, cublas); err != nil {
		t.Fatal(err)
	}
	file, version, blas, ok := cuda.LoadedDNN()
	if !ok || file != cudnn || blas != cublas || version < 90000 {
		t.Errorf("loaded %q version %d, %q (ok %v); want %s, cuDNN 9 or later, %s", file, version, blas, ok, cudnn, cublas)
	}
}
