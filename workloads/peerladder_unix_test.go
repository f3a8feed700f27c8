//go:build unix

package workloads

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/peer"
)

// TestPeerLadderScriptOnly (where /bin/sh runs the fake script): 003's way, the script alone, every level in
// one run of it per round, device first; with a calibration, the
// experiment trains at the calibrated step and its Settings say so.
func TestPeerLadderScriptOnly(t *testing.T) {
	// The peer engine's stand-in for peers/torch/ladder.py: its
	// calibration says a machine at half the document's speed (580ms).
	script := filepath.Join("..", "harness", "peer", "testdata", "fakeladder.sh")
	p := QuickPeerLadder("/bin/sh", script)
	p.ScriptOnly, p.Config.Count, p.CalibrationBatches = true, 2, 6
	p.Config.Levels = []level.Level{level.None, level.Device}
	var cal []PeerLadderCalibration
	var sofar []int
	var starts []string
	env := Env{Start: func(name string) { starts = append(starts, name) }}
	last, err := p.MeasureEach(context.Background(), env, func(o PeerLadderOutcome) error {
		if len(o.Measurements) == 0 {
			cal = append(cal, *o.Calibration)
		}
		sofar = append(sofar, len(o.Measurements))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sofar) != "[0 1 2 3 4]" || last.Calibration == nil || !reflect.DeepEqual(*last.Calibration, cal[0]) {
		t.Errorf("each saw %v runs, the outcome's calibration is %v: want the calibration, then each run, the calibration kept", sofar, last.Calibration)
	}
	starts = nil
	recs, err := p.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recs, PeerLadderCodec.Encode(last)) {
		t.Errorf("Run's records are\n%v\nMeasure's outcome encodes as\n%v", recs, PeerLadderCodec.Encode(last))
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

// TestCachingYardstick runs 003's composite with the fake script as the
// document's code: its runs are the last records, one per level and
// round, device first; the calibration and each round are units of
// Start, as Units counts them once Prepare has found the script; and its
// lines of the result file say it was measured and calibrated, with the
// script's command line and versions.
func TestCachingYardstick(t *testing.T) {
	c := QuickCaching()
	c.Ladder.Count = 2
	c.OnDisk.Formats, c.OnDisk.RawSizes = []string{"raw"}, []int{32}
	c.Yardstick = CachingYardstick{Peer: peer.Peer{Python: "/bin/sh", Script: filepath.Join("..", "harness", "peer", "testdata", "fakeladder.sh")}, Calibrate: true}
	c = c.Prepare(context.Background())
	if c.Yardstick.NotRun != "" {
		t.Fatalf("the fake script does not run: %s", c.Yardstick.NotRun)
	}
	dev := DocumentDevice()
	dev.Step = c.Step
	env := Env{Device: Emulated(dev), Dir: t.TempDir()}
	var starts []string
	env.Start = func(name string) { starts = append(starts, name) }
	var cal []PeerLadderCalibration
	var sofar []PeerLadderOutcome
	o, err := c.MeasureEach(context.Background(), env, func(o CachingOutcome) error {
		y := o.Yardstick
		if y.Calibration != nil && len(y.Measurements) == 0 {
			cal = append(cal, *y.Calibration)
		}
		if y.Calibration != nil {
			sofar = append(sofar, y)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, lines := CachingCodec.Encode(o), o.YardstickLines
	if len(starts) != c.Units() {
		t.Errorf("%d units started, Units says %d", len(starts), c.Units())
	}
	if got := strings.Join(starts[len(starts)-3:], "|"); got != "(yardstick) calibration|(yardstick) the document's code, run 1/2|(yardstick) the document's code, run 2/2" {
		t.Errorf("the yardstick's units %q", got)
	}
	levels := c.YardstickExperiment().Config.Levels
	n := len(levels) * c.Ladder.Count
	if len(recs) < n {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs[len(recs)-n:] {
		want := "BenchmarkPeerLadder/impl=torch/level=" + levels[i%len(levels)].String() + "/"
		if !strings.HasPrefix(string(r.Name), want) {
			t.Errorf("yardstick record %d: %s, want %s…", i, r.Name, want)
		}
	}
	got := map[string]string{}
	for _, l := range lines {
		got[l.Key] = l.Value
	}
	for k, v := range map[string]string{KeyTorchLadder: Measured, KeyCalibration: Measured, "calibration-ratio": "0.5000", "torch-version": "0.0.0-fake", "torch-python": "3.0.0-fake"} {
		if got[k] != v {
			t.Errorf("line %s = %q, want %q", k, got[k], v)
		}
	}
	if cmd := got["torch-ladder-command"]; !strings.HasPrefix(cmd, "/bin/sh ") || !strings.Contains(cmd, "--levels device,host,sample,raw,none") {
		t.Errorf("torch-ladder-command %q", cmd)
	}
	if len(cal) != 1 {
		t.Fatalf("%d calibrations, want 1", len(cal))
	}
	// The progress saw the calibration, then each run with it, the last
	// the whole yardstick, whose records are the last ones.
	if len(sofar) != n+1 {
		t.Fatalf("%d outcomes so far, want the calibration and %d runs", len(sofar), n)
	}
	for i, o := range sofar {
		if len(o.Measurements) != i || o.Calibration == nil || !reflect.DeepEqual(*o.Calibration, cal[0]) {
			t.Errorf("outcome so far %d: %d runs, calibration %v; want %d runs and the calibration", i, len(o.Measurements), o.Calibration, i)
		}
	}
	if got := PeerLadderCodec.Encode(sofar[n]); !reflect.DeepEqual(got, recs[len(recs)-n:]) {
		t.Errorf("the yardstick's outcome encodes as\n%v\nits records are\n%v", got, recs[len(recs)-n:])
	}
}
