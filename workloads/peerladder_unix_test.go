//go:build unix

package workloads

import (
	"context"
	"github.com/headspace-bench/headspace/harness/blocks/level"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/engines/peer"
)

// TestPeerLadderScriptOnly (where /bin/sh runs the fake script): 003's way, the script alone, every level in
// one run of it per round, device first; with a calibration, the
// experiment trains at the calibrated step and its Settings say so.
func TestPeerLadderScriptOnly(t *testing.T) {
	// The peer engine's stand-in for peers/torch/ladder.py: its
	// calibration says a machine at half the document's speed (580ms).
	script := filepath.Join("..", "harness", "engines", "peer", "testdata", "fakeladder.sh")
	p := QuickPeerLadder("/bin/sh", script)
	p.ScriptOnly, p.Config.Count, p.CalibrationBatches = true, 2, 6
	p.Config.Levels = []level.Level{level.None, level.Device}
	var cal []PeerLadderCalibration
	var last peer.LadderResult
	var starts []string
	env := Env{Start: func(name string) { starts = append(starts, name) }}
	env.Details.Calibration = func(c PeerLadderCalibration) { cal = append(cal, c) }
	env.Details.PeerLadderSoFar = func(r peer.LadderResult) { last = r }
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
	for k, v := range map[string]string{"emulated-step": "580ms", "step-source": "calibrated", "calibration-ratio": "0.5000", "calibrated-step": "580ms", "rounds": "2"} {
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
