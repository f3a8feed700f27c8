package workloads

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/level"
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
	// cmd is what the command's flags set beside these.
	cmd peerLadderCommand
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
// Python) are known once it has run: they are the PeerConfig of the
// PeerLadderOutcome that Measure returns.
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
// document's host: a PeerLadderOutcome's Calibration.
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
// Settings: what Measure measures after calibrating.
func (p PeerLadder) Calibrated(c PeerLadderCalibration) PeerLadder {
	p.Config.Settings.Device.Step = c.Step
	p.calibration = &c
	return p
}

// PeerLadderOutcome is what a PeerLadder measured: the calibration it
// made first, if it calibrated, then every run in the order they ran,
// with the script's configuration lines (peer.LadderResult).
type PeerLadderOutcome struct {
	// Calibration is the calibration made before the runs; nil when there
	// was none. Its lines are the result file's (PeerLadder.Calibrated's
	// Settings), not its records': a decoded outcome has none, nor
	// PeerConfig.
	Calibration *PeerLadderCalibration
	peer.LadderResult
}

// Measure is MeasureEach with no callback, or a command's run
// (measureRun).
func (p PeerLadder) Measure(ctx context.Context, env Env) (PeerLadderOutcome, error) {
	if p.cmd.run != nil {
		return p.measureRun(ctx, env, p.cmd.run)
	}
	return p.MeasureEach(ctx, env, nil)
}

// MeasureEach checks that the script runs (where it is to: a
// *peer.RunError, or an error wrapping peer.ErrNotInstalled), calibrates
// if asked and runs the sweep at the calibrated step, and returns what
// it measured, also before an error. each, if not nil, receives the
// outcome so far: after the calibration, if it calibrates (no runs yet),
// then after each run, so that a caller (`headspace peer --ladder`, 003's
// yardstick) can save all of it at every run; an error from each stops
// the sweep and is returned.
func (p PeerLadder) MeasureEach(ctx context.Context, env Env, each func(PeerLadderOutcome) error) (PeerLadderOutcome, error) {
	var out PeerLadderOutcome
	if err := p.Validate(); err != nil {
		return out, err
	}
	if each == nil {
		each = func(PeerLadderOutcome) error { return nil }
	}
	c := p.Config
	if p.ScriptOnly || p.CalibrationBatches > 0 || slices.Contains(c.Impls, peer.Torch) || c.Impls == nil {
		if err := c.Peer.Check(ctx); err != nil {
			return out, err
		}
	}
	if p.CalibrationBatches > 0 {
		env.start("calibration")
		cal, err := CalibratePeerLadder(ctx, c.Peer, p.CalibrationBatches)
		if err != nil {
			return out, err
		}
		out.Calibration = &cal
		if err := each(out); err != nil {
			return out, err
		}
		c = p.Calibrated(cal).Config
	}
	if !p.ScriptOnly {
		env.start(p.Name())
		res, err := peer.LadderSweep(ctx, c, func(_ peer.LadderMeasurement, sofar peer.LadderResult) error {
			out.LadderResult = sofar
			return each(out)
		})
		out.LadderResult = res
		return out, err
	}
	levels := c.LevelOrder()
	for run := range max(c.Count, 1) {
		env.start(fmt.Sprintf("the document's code, run %d/%d", run+1, max(c.Count, 1)))
		o, err := c.Peer.RunLadder(ctx, c.Settings, levels)
		if err != nil {
			return out, fmt.Errorf("the document's code (%s): %w", c.Peer.Script, err)
		}
		if out.PeerConfig == nil {
			out.PeerConfig = o.Config
		}
		for _, m := range o.Results {
			out.Measurements = append(out.Measurements, m)
			if err := each(out); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// Run measures the yardstick (Measure) and returns its records
// (PeerLadderCodec).
func (p PeerLadder) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[PeerLadderOutcome](ctx, p, env)
}

// Codec is PeerLadderCodec.
func (PeerLadder) Codec() Codec[PeerLadderOutcome] { return PeerLadderCodec }

var _ Typed[PeerLadderOutcome] = PeerLadder{}

// PeerLadderCodec is a PeerLadder's records codec: a record a run, in
// the order they ran, BenchmarkPeerLadder/impl=…/level=…/workers=…, its
// measured steps the iterations, with steps/s and samples/s
// (peer.LadderMeasurement.Benchmark). A run's batch is read back as
// samples/s over steps/s (0 where steps/s is 0); a run of an
// implementation not in peer.LadderImpls does not decode. The
// calibration and the script's configuration lines are the result
// file's, not its records': a decoded outcome has neither.
var PeerLadderCodec = Codec[PeerLadderOutcome]{
	Experiment: "PeerLadder",
	Keys:       map[string][]string{"PeerLadder": {"impl", "level", "workers"}},
	encode: func(o PeerLadderOutcome) []*benchfmt.Result {
		return recordsOf(o.Measurements, peer.LadderMeasurement.Benchmark)
	},
	decode: func(recs []Record) (PeerLadderOutcome, error) {
		ms, err := decodeEach(recs, func(rec Record) (peer.LadderMeasurement, error) {
			name := fullName(rec.Result)
			l, err := level.Parse(rec.Keys["level"])
			if err != nil {
				return peer.LadderMeasurement{}, fmt.Errorf("%s: %w", name, err)
			}
			workers, err := rec.count("workers", false)
			if err != nil {
				return peer.LadderMeasurement{}, err
			}
			m := peer.LadderMeasurement{Impl: rec.Keys["impl"], Level: l, Workers: workers, Steps: rec.Iters}
			if !slices.Contains(peer.LadderImpls, m.Impl) {
				return m, fmt.Errorf("%s: unknown impl %q (want one of %s)", name, m.Impl, strings.Join(peer.LadderImpls, ", "))
			}
			v, err := rec.valuesIn("steps/s", "samples/s")
			if err != nil {
				return m, err
			}
			m.StepsPerSec = v[0]
			if m.StepsPerSec > 0 {
				m.Batch = int(math.Round(v[1] / m.StepsPerSec))
			}
			return m, nil
		})
		return PeerLadderOutcome{LadderResult: peer.LadderResult{Measurements: ms}}, err
	},
}
