//go:build unix

package workloads

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/engines/ladder"
	"github.com/headspace-bench/headspace/harness/engines/peer"
)

// fakeLadderScript stands in for peers/torch/ladder.py, run by /bin/sh:
// it prints one result per level it is given, at the step it is given;
// --calibrate says a 20ms step.
const fakeLadderScript = `levels=device steps=2 workers=1 step=290ms
while [ $# -gt 0 ]; do
	case $1 in
	--levels) levels=$2; shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	--workers) workers=$2; shift 2 ;;
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
	echo "BenchmarkTorchLadder/level=$l/workers=$workers $((steps - 1)) 2 steps/s"
done
`

// TestPeerLadderScriptOnly (where /bin/sh runs the fake script): 003's way, the script alone, every level in
// one run of it per round, device first; with a calibration, the
// experiment trains at the calibrated step and its Settings say so.
func TestPeerLadderScriptOnly(t *testing.T) {
	script := filepath.Join(t.TempDir(), "ladder.sh")
	if err := os.WriteFile(script, []byte(fakeLadderScript), 0o644); err != nil {
		t.Fatal(err)
	}
	p := QuickPeerLadder("/bin/sh", script)
	p.ScriptOnly, p.Config.Count, p.CalibrationBatches = true, 2, 6
	p.Config.Levels = []ladder.Level{ladder.None, ladder.Device}
	var cal []PeerLadderCalibration
	var last peer.LadderResult
	var starts []string
	env := Env{Start: func(name string) { starts = append(starts, name) }}
	On(&env, func(c PeerLadderCalibration) { cal = append(cal, c) })
	On(&env, func(r peer.LadderResult) { last = r })
	recs, err := p.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range recs {
		names = append(names, string(r.Name))
	}
	want := strings.Repeat("BenchmarkPeerLadder/impl=torch/level=device/workers=1|BenchmarkPeerLadder/impl=torch/level=none/workers=1|", 2)
	if strings.Join(names, "|")+"|" != want {
		t.Errorf("records %q, want device then none, twice", names)
	}
	if got := strings.Join(starts, "|"); got != "calibration|the document's code, run 1/2|the document's code, run 2/2" {
		t.Errorf("units %q", got)
	}
	if len(cal) != 1 || len(last.Measurements) != 4 || (peer.LadderOutput{Config: last.PeerConfig}).Get("torch") != "0.0.0-fake" {
		t.Fatalf("calibrations %v, last result %+v", cal, last)
	}
	cfg := map[string]string{}
	for _, c := range p.Calibrated(cal[0]).Settings() {
		cfg[c.Key] = c.Value
	}
	for k, v := range map[string]string{"emulated-step": "20ms", "step-source": "calibrated", "calibration-ratio": "14.5", "calibrated-step": "20ms", "rounds": "2"} {
		if cfg[k] != v {
			t.Errorf("setting %s = %q, want %q", k, cfg[k], v)
		}
	}
	if !strings.HasSuffix(cfg["calibration-command"], "--calibrate --calibration-batches 6") {
		t.Errorf("calibration-command %q", cfg["calibration-command"])
	}
	if _, ok := cfg["torch"]; ok {
		t.Error("the calibration's torch line is in the settings: only its calibrat* lines belong there")
	}
	p.CalibrationBatches = 5
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "at least 6") {
		t.Errorf("5 calibration batches: %v", err)
	}
}
