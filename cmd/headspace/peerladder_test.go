package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/level"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/workloads"
)

// fakeLadder is a stand-in for peers/torch/ladder.py, run by /bin/sh: 2
// steps/s at every level but none's 1; --calibrate says this machine is
// at 14.5 times the document's speed (a 20ms step).
const fakeLadder = `#!/bin/sh
levels=device steps=2 workers=1 batch=1 step=290ms
while [ $# -gt 0 ]; do
	case $1 in
	--levels) levels=$2; shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	--workers) workers=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--step) step=$2; shift 2 ;;
	--check) echo "torch: 0.0.0-fake"; exit 0 ;;
	--calibrate) echo "torch: 0.0.0-fake"; echo "calibration-ratio: 14.5"; echo "calibrated-step: 20ms"; exit 0 ;;
	--*) shift 2 ;;
	*) exit 2 ;;
	esac
done
echo "torch: 0.0.0-fake"
echo "torch-device: emulated"
echo "emulated-step: $step"
for l in $(echo "$levels" | tr , ' '); do
	s=2; [ "$l" = none ] && s=1
	echo "BenchmarkTorchLadder/level=$l/workers=$workers $((steps - 1)) $s steps/s"
done
`

func TestPeerLadderWritesOneFile(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-ladder.sh")
	if err := os.WriteFile(script, []byte(fakeLadder), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results", "yardstick.txt")
	code, stdout, stderr := runCLI("peer", "--ladder", "--python", "/bin/sh", "--script", script, "--levels", "device,none",
		"--raw-size", "64", "--crop", "32", "--batch", "4", "--workers", "2", "--steps", "2", "--step", "calibrated",
		"--count", "1", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{"calibration: this machine runs the document's loader at 14.500", "emulated step 20ms", "torch ÷ device", "0.50"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout)
		}
	}
	rs, err := resultfile.Read(out)
	if err != nil || len(rs) != 6 {
		t.Fatalf("read %s: %d results, %v; want 6 (3 implementations × 2 levels)", out, len(rs), err)
	}
	cfg := map[string]string{}
	for _, c := range rs[0].Config {
		cfg[c.Key] = string(c.Value)
	}
	for k, v := range map[string]string{"emulated-step": "20ms", "calibration-ratio": "14.5", "step-source": "calibrated", "torch": "0.0.0-fake", "device": "emulated"} {
		if cfg[k] != v {
			t.Errorf("configuration %s = %q, want %q", k, cfg[k], v)
		}
	}
	if !strings.Contains(cfg["calibration-command"], "--calibrate") || !strings.Contains(cfg["command"], "--ladder") {
		t.Errorf("configuration %v: want the calibration's command and the command", cfg)
	}
}

func TestPeerLadderBadInputExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"peer", "--ladder", "--batches", "3"}, "--batches does not apply to --ladder"},
		{[]string{"peer", "--ladder", "--report", "x.md"}, "--report does not apply to --ladder"},
		{[]string{"peer", "--ladder", "--workers", "1,2"}, "one worker count"},
		{[]string{"peer", "--ladder", "--step", "fast"}, `--step "fast"`},
		{[]string{"peer", "--ladder", "--levels", "disk"}, "disk"},
		{[]string{"peer", "--ladder", "--levels", "encoded"}, "dataset on disk"},
		{[]string{"peer", "--ladder", "--steps", "0"}, "--steps"},
		{[]string{"peer", "--ladder", "--impls", "jax"}, `--impls: unknown "jax"`},
		{[]string{"peer", "--ladder", "--calibration-batches", "5"}, "--calibration-batches"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestLadderScriptDefaultsAreOurs: ladder.py's defaults, used when it runs
// alone, are the figures headspace passes it: the emulated device's
// bandwidths, the document's step and its raw and none steps/s.
func TestLadderScriptDefaultsAreOurs(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch, torchvision, scipy, PIL").Run(); err != nil {
		t.Fatalf("%s cannot import torch, torchvision, scipy and PIL (make test installs them: TEST_DEBS): %v", python, err)
	}
	cmd := exec.Command(python, "../../peers/torch/ladder.py", "--device", "emulated", "--check")
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			got[k] = v
		}
	}
	emu := device.DefaultEmulated()
	for k, v := range map[string]string{
		"emulated-pinned-gbps":   fmt.Sprint(emu.PinnedBandwidth / 1e9),
		"emulated-pageable-gbps": fmt.Sprint(emu.PageableBandwidth / 1e9),
		"document-step":          workloads.DocumentStep.String(),
		"document-raw-steps/s":   fmt.Sprint(workloads.LadderDocument[level.Raw]),
		"document-none-steps/s":  fmt.Sprint(workloads.LadderDocument[level.None]),
	} {
		if got[k] != v {
			t.Errorf("ladder.py's %s = %q, headspace's %q", k, got[k], v)
		}
	}
}

// TestPeerLadderKeepsRunsOnFailure: when the script fails at a later
// level, the result file holds the runs before it.
func TestPeerLadderKeepsRunsOnFailure(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fake-ladder.sh")
	failing := strings.Replace(fakeLadder, `echo "torch: 0.0.0-fake"
echo "torch-device: emulated"`, `case $levels in none) echo "Traceback: boom" >&2; exit 1 ;; esac
echo "torch: 0.0.0-fake"
echo "torch-device: emulated"`, 1)
	if failing == fakeLadder {
		t.Fatal("the fake script was not made to fail")
	}
	if err := os.WriteFile(script, []byte(failing), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "yardstick.txt")
	code, _, stderr := runCLI("peer", "--ladder", "--python", "/bin/sh", "--script", script, "--levels", "device,none",
		"--raw-size", "64", "--crop", "32", "--batch", "4", "--workers", "2", "--steps", "1", "--step", "1ms", "--count", "1", "--out", out)
	if code == 0 || !strings.Contains(stderr, "boom") || !strings.Contains(stderr, "results so far") {
		t.Fatalf("exit %d, stderr %q: want a failure naming the script's error and the runs kept", code, stderr)
	}
	rs, err := resultfile.Read(out)
	if err != nil || len(rs) < 3 {
		t.Fatalf("read %s: %d results, %v; want at least the 3 runs at level device", out, len(rs), err)
	}
}
