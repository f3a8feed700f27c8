package workloads

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// CachingYardstick is Caching's last step, the yardstick: the document's
// own code (peers/torch/ladder.py, PyTorch's DataLoader) run on the
// emulated device after ours, at step (a)'s setting and every level (see
// PeerLadder for what it tells). First, unless it is a quick run, a
// calibration of this machine against the document's host.
type CachingYardstick struct {
	// Peer is the document's script and the Python that runs it; without
	// either the yardstick does not run.
	Peer peer.Peer
	// Calibrate measures this machine against the document's host first
	// (CachingCalibrationBatches at each of raw and none); a quick run
	// does not, since the calibration loads the document's full-size
	// batches.
	Calibrate bool
	// NotRun says why the yardstick does not run, "" when it does; Checked
	// says Caching.Prepare (or Run) has decided it.
	NotRun  string
	Checked bool
}

// CachingCalibrationBatches is the batches the yardstick's calibration
// loads at each level.
const CachingCalibrationBatches = DefaultPeerLadderCalibration

// The yardstick's keys in 003's result file, and their values: each key
// is Measured, or NotMeasured followed by why.
const (
	KeyTorchLadder = "torch-ladder"
	KeyCalibration = "calibration"
	Measured       = "measured"
	NotMeasured    = "not measured: "
)

// Prepare decides whether the yardstick runs (Yardstick.NotRun,
// Yardstick.Checked): on the emulated device only, with a script and a
// Python that imports torch. Units counts its units once prepared; Run
// prepares an experiment that was not.
func (c Caching) Prepare(ctx context.Context) Caching {
	y := &c.Yardstick
	y.Checked, y.NotRun = true, ""
	switch {
	case !c.Emulated:
		y.NotRun = "the run's device is not the emulated one; on a GPU the GPU report sets ladder.py --device cuda beside ours"
	case y.Peer.Python == "" || y.Peer.Script == "":
		y.NotRun = "no script of the document's code was given"
	default:
		if err := y.Peer.Check(ctx); err != nil {
			if errors.Is(err, peer.ErrNotInstalled) {
				y.NotRun = fmt.Sprintf("%v (install Debian's python3-torch, python3-torchvision, python3-scipy and python3-pil, e.g. `make peer`, and run again)", err)
			} else {
				y.NotRun = err.Error()
			}
		}
	}
	return c
}

// yardstickUnits is the yardstick's units of Env.Start: the calibration
// (begun and ended even when skipped) and one per round; none when it
// does not run or is not yet prepared.
func (c Caching) yardstickUnits() int {
	if !c.Yardstick.Checked || c.Yardstick.NotRun != "" {
		return 0
	}
	return c.Ladder.Count + 1
}

// YardstickExperiment is the yardstick's ladder: the script alone
// (PeerLadder.ScriptOnly), at step (a)'s raw size, crop, batch, workers
// and measured steps, on the emulated device at the experiment's step,
// each of the document's levels (level.Document) device first, as the
// script runs them, Ladder.Count rounds.
func (c Caching) YardstickExperiment() PeerLadder {
	p := c.Ladder.Pipeline
	dev := device.DefaultEmulated()
	dev.Step = c.Step
	levels := level.Descending(level.Document)
	return PeerLadder{ScriptOnly: true, Config: peer.LadderConfig{Peer: c.Yardstick.Peer, Levels: levels, Count: c.Ladder.Count,
		Settings: peer.LadderSettings{Width: p.Dataset.Width, Height: p.Dataset.Height, Crop: p.Transforms.Crop, Batch: p.Batch,
			Workers: c.Workers, Steps: c.Ladder.Train.Steps, Seed: loader.DefaultConfig().Dataset.Seed, Device: dev}}}
}

// runYardstick runs the yardstick (its PeerLadder's MeasureEach), its
// outcome so far to each after the calibration and each run; it returns
// its outcome, the calibration in it, and its lines of the result file
// (KeyTorchLadder, KeyCalibration, the calibration's, the script's
// command line and versions). One that does not run says why in them; a
// script that was found and then fails fails the run: a half-measured
// column is not reported.
func (c Caching) runYardstick(ctx context.Context, env Env, each func(PeerLadderOutcome) error) (PeerLadderOutcome, []resultfile.Config, error) {
	y := c.Yardstick
	if y.NotRun != "" {
		return PeerLadderOutcome{}, []resultfile.Config{{Key: KeyTorchLadder, Value: NotMeasured + y.NotRun},
			{Key: KeyCalibration, Value: NotMeasured + "the document's code did not run"}}, nil
	}
	var out []resultfile.Config
	var cal *PeerLadderCalibration
	env.start("(yardstick) calibration")
	if !y.Calibrate {
		out = append(out, resultfile.Config{Key: KeyCalibration, Value: NotMeasured + "a quick run does not calibrate (it loads the document's full-size batches)"})
	} else {
		// The calibration is for the report: the script runs at the
		// experiment's step, as ours did.
		got, err := CalibratePeerLadder(ctx, y.Peer, CachingCalibrationBatches)
		if err != nil {
			return PeerLadderOutcome{}, nil, fmt.Errorf("the yardstick's calibration: %w", err)
		}
		cal = &got
		if err := each(PeerLadderOutcome{Calibration: cal}); err != nil {
			return PeerLadderOutcome{Calibration: cal}, nil, err
		}
		out = append(out, resultfile.Config{Key: KeyCalibration, Value: Measured})
		out = append(out, cal.Settings()...)
	}
	exp := c.YardstickExperiment()
	sub := Env{Start: func(name string) { env.start("(yardstick) " + name) }}
	res, err := exp.MeasureEach(ctx, sub, func(sofar PeerLadderOutcome) error {
		sofar.Calibration = cal
		return each(sofar)
	})
	res.Calibration = cal
	if err != nil {
		return res, nil, fmt.Errorf("the yardstick: %w", err)
	}
	first := peer.LadderOutput{Config: res.PeerConfig}
	return res, append(out,
		resultfile.Config{Key: KeyTorchLadder, Value: Measured},
		resultfile.Config{Key: "torch-ladder-command", Value: y.Peer.Python + " " + y.Peer.Script + " " + strings.Join(exp.Config.Settings.LadderArgs(exp.Config.Levels), " ")},
		resultfile.Config{Key: "torch-version", Value: first.Get("torch")},
		resultfile.Config{Key: "torch-python", Value: first.Get("python")},
		resultfile.Config{Key: "torch-threads", Value: first.Get("torch-threads")},
	), nil
}
