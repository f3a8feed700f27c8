package ownloop

import "os"

// TestPythonEnv names the interpreter the own-loop tests (this package's
// and cmd/headspace's) run their training scripts with: `make
// test-ownloop-torch2` sets it to the pinned peers environment's python
// (torch 2); unset, they use Debian's /usr/bin/python3 with
// python3-torch (torch 1.13, the oldest supported).
const TestPythonEnv = "HEADSPACE_OWNLOOP_PYTHON"

// TestPython is the tests' interpreter: $HEADSPACE_OWNLOOP_PYTHON, else
// /usr/bin/python3. The tests run torchrun from its directory.
func TestPython() string {
	if p := os.Getenv(TestPythonEnv); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// TestLauncher is how the tests start ranks, and the launcher's name as
// the report gives it: Debian's torchrun with /usr/bin/python3, and
// TestPython's `python -m torch.distributed.run` where
// $HEADSPACE_OWNLOOP_PYTHON names another (a virtual environment's
// torchrun names its python by the path the environment was made at).
func TestLauncher() ([]string, string) {
	if os.Getenv(TestPythonEnv) == "" {
		return []string{"torchrun"}, "torchrun"
	}
	return []string{TestPython(), "-m", "torch.distributed.run"}, "torch.distributed.run"
}
