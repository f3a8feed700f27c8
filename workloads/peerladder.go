package workloads

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// PeerLadder is the yardstick of document 003: the document's own
// training script (peers/torch/ladder.py: its FakeDataset, transforms and
// DataLoader) and our ladder at every caching level, on the same emulated
// device, so that a report can tell the method's reproduction (the
// document's code here against the document) from our implementation's
// gain (ours against the document's code here).
//
// By default it alternates (peer.LadderSweep): for each round and level
// every implementation of Config.Impls runs once, back to back, the order
// rotated, the script once per level; this is `headspace peer --ladder`.
// With ScriptOnly it runs the script alone, every level in one run of it,
// Config.Count times: `headspace reproduce`'s 003, whose ours are the
// ladder's own steps (a) and (b) in the same run.
type PeerLadder struct {
	Config peer.LadderConfig
	// ScriptOnly runs only the document's code, all of Config.Levels in
	// one run of the script per round (Config.Impls is ignored).
	ScriptOnly bool
	// CalibrationBatches, if positive, makes Run first measure this
	// machine against the document's host for the document's code (its
	// DataLoader at raw and none, that many batches each) and train at
	// the calibrated step: the document's 290ms over that ratio.
	CalibrationBatches int
	// calibration is the calibration Run made, once Calibrated gives it.
	calibration *PeerLadderCalibration
}

// DefaultPeerLadderCalibration is the batches a calibration loads at each
// of raw and none: the document's 4 workers make their first 4 at once,
// untimed, so at least 6.
const DefaultPeerLadderCalibration = 12

// DefaultPeerLadder is the document's pipeline (peer.DefaultLadderSettings:
// 1024² raw images cropped to 256, batches of 256, 8 measured steps) on
// the emulated device at the document's step, one worker per core, every
// level and implementation, three rounds, with the given Python running
// the given script.
func DefaultPeerLadder(python, script string) PeerLadder {
	return PeerLadder{Config: peer.LadderConfig{
		Peer:     peer.Peer{Python: python, Script: script},
		Settings: peer.DefaultLadderSettings(DocumentDevice(), runtime.GOMAXPROCS(0)),
		Count:    3,
	}}
}

// QuickPeerLadder is every code path in seconds: one round of one
// measured step on tiny images, one worker, at QuickStep.
func QuickPeerLadder(python, script string) PeerLadder {
	p := DefaultPeerLadder(python, script)
	dev := DocumentDevice()
	dev.Step = QuickStep
	p.Config.Settings = peer.LadderSettings{Width: 96, Height: 96, Crop: 32, Batch: 8, Workers: 1, Steps: 1, Seed: 1, Device: dev}
	p.Config.Count = 1
	return p
}

// Name is "PeerLadder": BenchmarkPeerLadder/impl=…/level=…/workers=….
func (PeerLadder) Name() string { return "PeerLadder" }

// Document is "003": its training script, in PyTorch.
func (PeerLadder) Document() string { return "003" }

// Validate reports the first problem with p, before anything runs.
func (p PeerLadder) Validate() error {
	if p.CalibrationBatches != 0 && p.CalibrationBatches < 6 {
		return fmt.Errorf("calibration batches %d: want at least 6 (the first 4, one per worker, are not timed)", p.CalibrationBatches)
	}
	return p.Config.Validate()
}

// Settings is the configuration block of the yardstick's result file:
// the settings both sides run at (the emulated step the calibrated one
// once Calibrated gives it), the rounds, where the step comes from, and
// the calibration's lines. The script's own lines (torch's version, its
// Python) are known once it has run: Run passes them, in each
// peer.LadderResult, to env.Details.
func (p PeerLadder) Settings() []resultfile.Config {
	source := "given"
	if p.CalibrationBatches > 0 {
		source = "calibrated"
	}
	out := append(p.Config.Settings.Config(),
		resultfile.Config{Key: "rounds", Value: strconv.Itoa(max(p.Config.Count, 1))},
		resultfile.Config{Key: "step-source", Value: source})
	if p.calibration != nil {
		out = append(out, p.calibration.Settings()...)
	}
	return out
}

// PeerLadderCalibration is a calibration of this machine against the
// document's host: what Run passes to env.Details before the first run
// when it calibrates.
type PeerLadderCalibration struct {
	peer.Calibration
	// Command is the calibration's command line.
	Command string
}

// CalibratePeerLadder runs the document's script p with --calibrate,
// loading batches batches at each of raw and none.
func CalibratePeerLadder(ctx context.Context, p peer.Peer, batches int) (PeerLadderCalibration, error) {
	cal, err := p.Calibrate(ctx, batches)
	if err != nil {
		return PeerLadderCalibration{}, err
	}
	return PeerLadderCalibration{Calibration: cal,
		Command: fmt.Sprintf("%s %s --device emulated --calibrate --calibration-batches %d", p.Python, p.Script, batches)}, nil
}

// Settings is the calibration's configuration lines: the script's
// calibration-* and calibrated-* lines, then calibration-command.
func (c PeerLadderCalibration) Settings() []resultfile.Config {
	var out []resultfile.Config
	for _, kv := range c.Config {
		if strings.HasPrefix(kv.Key, "calibrat") {
			out = append(out, kv)
		}
	}
	return append(out, resultfile.Config{Key: "calibration-command", Value: c.Command})
}

// Calibrated is p at the calibration's step, with the calibration in its
// Settings: what Run measures after calibrating.
func (p PeerLadder) Calibrated(c PeerLadderCalibration) PeerLadder {
	p.Config.Settings.Device.Step = c.Step
	p.calibration = &c
	return p
}

// Run checks that the script runs (where it is to: a *peer.RunError, or
// an error wrapping peer.ErrNotInstalled), calibrates if asked (the
// PeerLadderCalibration to env.Details), and runs the sweep. Each run is a
// record BenchmarkPeerLadder/impl=…/level=…/workers=…; before each goes to
// env.Result, env.Details receives its peer.LadderMeasurement and the
// peer.LadderResult so far (with the script's configuration lines), so a
// caller can save everything measured so far at every record.
func (p PeerLadder) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c := p.Config
	if p.ScriptOnly || p.CalibrationBatches > 0 || slices.Contains(c.Impls, peer.Torch) || c.Impls == nil {
		if err := c.Peer.Check(ctx); err != nil {
			return nil, err
		}
	}
	if p.CalibrationBatches > 0 {
		env.start("calibration")
		cal, err := CalibratePeerLadder(ctx, c.Peer, p.CalibrationBatches)
		if err != nil {
			return nil, err
		}
		send(env.Details.Calibration, cal)
		c = p.Calibrated(cal).Config
	}
	var out []*benchfmt.Result
	keep := env.collect(&out)
	each := func(m peer.LadderMeasurement, sofar peer.LadderResult) error {
		send(env.Details.PeerLadder, m)
		send(env.Details.PeerLadderSoFar, sofar)
		return keep(m.Benchmark())
	}
	if !p.ScriptOnly {
		env.start(p.Name())
		_, err := peer.LadderSweep(ctx, c, each)
		return out, err
	}
	levels := c.LevelOrder()
	var res peer.LadderResult
	for run := range max(c.Count, 1) {
		env.start(fmt.Sprintf("the document's code, run %d/%d", run+1, max(c.Count, 1)))
		o, err := c.Peer.RunLadder(ctx, c.Settings, levels)
		if err != nil {
			return out, fmt.Errorf("the document's code (%s): %w", c.Peer.Script, err)
		}
		if res.PeerConfig == nil {
			res.PeerConfig = o.Config
		}
		for _, m := range o.Results {
			res.Measurements = append(res.Measurements, m)
			if err := each(m, res); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}
