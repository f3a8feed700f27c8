package peer_test

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/blocks/results"
)

// The document's training script at each caching level
// (peers/torch/ladder.py): its syntax, and a tiny CPU run with Debian's
// torch (make test-deps installs it; without it the test fails).
const ladderScript = "../../../peers/torch/ladder.py"

func TestLadderScriptCompiles(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s is not installed (make test-deps installs Debian's python3): %v", python, err)
	}
	cmd := exec.Command(python, "-m", "py_compile", ladderScript)
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("py_compile %s: %v\n%s", ladderScript, err, out)
	}
}

// TestLadderScriptRunsOnCPU trains the tiny Net (crop 16, four pools) three
// steps at every level and reads the output as benchstat would.
func TestLadderScriptRunsOnCPU(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch, torchvision, scipy, PIL").Run(); err != nil {
		t.Fatalf("%s cannot import torch, torchvision, scipy and PIL (make test-deps installs them): %v", python, err)
	}
	cmd := exec.Command(python, ladderScript, "--device", "cpu", "--raw-size", "32x24", "--crop", "16",
		"--batch", "4", "--steps", "3", "--workers", "1")
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir(), "OMP_NUM_THREADS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ladder.py: %v\n%s", err, stderr.String())
	}
	rd := benchfmt.NewReader(bytes.NewReader(out), "ladder.py")
	var levels []string
	config := map[string]string{}
	for rd.Scan() {
		switch r := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Errorf("%v", r)
		case *benchfmt.Result:
			for _, c := range r.Config {
				config[c.Key] = string(c.Value)
			}
			base, parts := r.Name.Parts()
			if string(base) != "TorchLadder" || len(parts) < 2 || string(parts[1]) != "/workers=1" || r.Iters != 2 {
				t.Errorf("result %s with %d iterations, want TorchLadder/level=…/workers=1 with 2", r.Name, r.Iters)
				continue
			}
			levels = append(levels, strings.TrimPrefix(string(parts[0]), "/level="))
			for _, unit := range []string{"ns/op", "steps/s", "samples/s"} {
				v, ok := results.Value(r, unit)
				if !ok || !(v > 0) || math.IsInf(v, 0) {
					t.Errorf("%s: %s = %v (present %v), want a positive number", r.Name, unit, v, ok)
				}
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(levels, ","); got != "device,host,sample,raw,none" {
		t.Errorf("levels %q, want device,host,sample,raw,none", got)
	}
	if config["torch-device"] != "cpu" || config["net-depth"] != "4" || config["crop"] != "16" {
		t.Errorf("configuration %v: want torch-device cpu, net-depth 4, crop 16", config)
	}
}
