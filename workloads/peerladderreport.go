package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// peerLadderCommand is what peer --ladder's flags set beside the
// comparison (read by Prepare), the command line, --from's file, and a
// command's run.
type peerLadderCommand struct {
	workers       []int
	step          string
	calibration   int
	out           func() string
	command, from string
	run           *peerLadderRun
}

// peerLadderRun is a command's run of a PeerLadder: where its lines go,
// the experiment as it runs (calibrated once it has calibrated) and the
// script's lines, which its file's lines are made of.
type peerLadderRun struct {
	stdout, log io.Writer
	exp         PeerLadder
	peerConfig  []resultfile.Config
}

// The bound of --ladder's own flag beside the loaders'.
var _ = cli.Declare(map[string]cli.Bound{"peer calibration-batches": {Lo: 6, Hi: 1000}})

// Flags are peer --ladder's, bound to p's fields, the registry's
// Default size their defaults (every level and implementation).
func (p *PeerLadder) Flags(fs *flag.FlagSet) {
	c, s := &p.Config, &p.Config.Settings
	c.Impls, c.Levels = peer.LadderImpls, level.Document
	p.cmd.out, p.cmd.workers = flagValue(fs, "out"), []int{s.Workers}
	fs.Bool("ladder", false, "compare training loops at every caching level on the emulated device (the document's ladder.py against ours) instead of loaders")
	fs.StringVar(&c.Peer.Python, "python", c.Peer.Python, "Python `interpreter` with torch, torchvision, scipy and PIL")
	fs.StringVar(&c.Peer.Script, "script", c.Peer.Script, "the PyTorch peer `script`")
	loader.WorkersListVar(fs, &p.cmd.workers, "the loaders' worker `count` (one; default: one per core)")
	fs.Var(listFlag{"impls", &c.Impls, peer.LadderImpls}, "impls", "comma-separated `implementations`")
	fs.Func("levels", "with --ladder: comma-separated `levels` (default device,host,sample,raw,none)", func(v string) (err error) {
		c.Levels, err = level.ParseList(v)
		return err
	})
	fs.IntVar(&s.Batch, "batch", s.Batch, "samples per `batch` (the document's 256)")
	fs.Var(sizeFlag{"raw-size", &s.Width, &s.Height}, "raw-size", "raw image `size`, N or WxH")
	fs.IntVar(&s.Crop, "crop", s.Crop, "random crop `side`")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "dataset and transform `seed`")
	fs.IntVar(&c.Count, "count", c.Count, "`rounds`: runs of every implementation at every level")
	fs.IntVar(&s.Steps, "steps", s.Steps, "with --ladder: measured training `steps` a run, after one warm-up step")
	fs.StringVar(&p.cmd.step, "step", DocumentStep.String(), "with --ladder: the emulated device's step `time`, or calibrated (the document's 290ms over this machine's calibration ratio)")
	fs.IntVar(&p.cmd.calibration, "calibration-batches", DefaultPeerLadderCalibration, "with --ladder --step calibrated: `batches` the calibration loads at each of raw and none (at least 6: the first 4, one per worker, are not timed)")
}

// Outputs makes --out's folder now rather than after minutes of runs.
func (p *PeerLadder) Outputs() ([]string, error) { return nil, mkdirs(p.cmd.out()) }

// Invoked keeps the command line, for the file, and --from's file.
func (p *PeerLadder) Invoked(commandLine, from string) { p.cmd.command, p.cmd.from = commandLine, from }

// Prepare checks the comparison, sets the emulated device's step (or
// the calibration), and has the file's lines asked for as they are
// when the run saves its file: the machine's, the comparison's (the
// calibration's once made), the command line, the script's.
func (p *PeerLadder) Prepare(_ context.Context, stdout, stderr io.Writer) (Setup, error) {
	if len(p.cmd.workers) != 1 {
		return Setup{}, cli.Usagef("--workers %s: --ladder runs one worker count", joinInts(p.cmd.workers))
	}
	s := &p.Config.Settings
	s.Workers = p.cmd.workers[0]
	if err := cli.FirstErr(cli.InRange("--count", p.Config.Count, 1, cli.MaxCount), cli.InRange("--steps", s.Steps, 1, cli.MaxSteps)); err != nil {
		return Setup{}, err
	}
	s.Device = DocumentDevice()
	if p.cmd.step == "calibrated" {
		p.CalibrationBatches = p.cmd.calibration
	} else if d, err := time.ParseDuration(p.cmd.step); err != nil || d < 0 || d > time.Minute {
		return Setup{}, cli.Usagef("--step %q: want a duration from 0 to 1m, or calibrated", p.cmd.step)
	} else {
		s.Device.Step = d
	}
	if err := p.Validate(); err != nil {
		return Setup{}, cli.UsageError{Msg: err.Error()}
	}
	run := &peerLadderRun{stdout: stdout, log: stderr, exp: *p}
	p.cmd.run = run
	return Setup{Device: func() string { return "emulated" }, Lines: func() []resultfile.Config {
		return peer.FileConfig(append(run.exp.Settings(), resultfile.Config{Key: "command", Value: p.cmd.command}), run.peerConfig)
	}}, nil
}

// measureRun is a command's Measure: the calibration said on stdout as
// it is made, each run's line on stderr and the whole file saved after
// every run, so that a failed sweep keeps what it measured.
func (p PeerLadder) measureRun(ctx context.Context, env Env, run *peerLadderRun) (PeerLadderOutcome, error) {
	if p.CalibrationBatches > 0 {
		fmt.Fprintf(run.log, "calibrating: the document's DataLoader at raw and none, %d batches each\n", p.CalibrationBatches)
	}
	o, err := p.MeasureEach(ctx, env, func(so PeerLadderOutcome) error {
		run.peerConfig = so.PeerConfig
		if len(so.Measurements) == 0 {
			cal := *so.Calibration
			run.exp = p.Calibrated(cal)
			fmt.Fprintf(run.stdout, "calibration: this machine runs the document's loader at %.3f of the document's host; step %v\n\n", cal.Ratio, cal.Step)
			return nil
		}
		m := so.Measurements[len(so.Measurements)-1]
		fmt.Fprintf(run.log, "%s: %.3f steps/s\n", m.BenchName(), m.StepsPerSec)
		return env.save(PeerLadderCodec.Encode(so))
	})
	if err != nil && p.cmd.out() != "" && len(o.Measurements) > 0 {
		fmt.Fprintf(run.log, "results so far: %s (%d runs)\n", p.cmd.out(), len(o.Measurements))
	}
	return o, withHint(err, peerInstallHint)
}

// Report prints the table of a run's outcome, at its settings (its
// calibrated step). A file's is not rebuilt: the settings the table
// states are not read back from its lines.
func (p *PeerLadder) Report(o PeerLadderOutcome, w io.Writer) error {
	if p.cmd.from != "" {
		return cli.Usagef("--from %s: a peer --ladder file: its table is not rebuilt from a file", p.cmd.from)
	}
	exp := *p
	if p.cmd.run != nil {
		exp = p.cmd.run.exp
	}
	return exp.Config.WriteText(w, o.LadderResult)
}
