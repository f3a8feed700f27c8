package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// peerLadderMode is peer --ladder: its run is its own (runPeerLadder),
// not yet the generic path: it saves its whole file after every run,
// prints the calibration as it is made, and its file has no --from.
func peerLadderMode() Mode {
	return Mode{Flag: "ladder", Name: "--ladder", Layout: workloads.PeerLadderCodec.Layout(), Runs: []string{workloads.PeerLadder{}.Name()},
		Flags: func(fs *flag.FlagSet) { new(peerLadderFlags).register(fs) },
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			fs := cli.NewFlagSet("peer", "", stdout)
			var lf peerLadderFlags
			lf.register(fs)
			if err := cli.ParseFlags(fs, args); err != nil {
				return err
			}
			return runPeerLadder(ctx, fs, &lf, args, stdout, stderr)
		}}
}

// The bound of --ladder's own flag beside the loaders'.
var _ = cli.Declare(map[string]cli.Bound{"peer calibration-batches": {Lo: 6, Hi: 1000}})

// peerLadderFlags are the flags of `headspace peer --ladder`.
type peerLadderFlags struct {
	on          bool
	levels      string
	steps       int
	step        string
	calibration int
}

func (f *peerLadderFlags) register(fs *flag.FlagSet) {
	d := peer.DefaultSettings()
	fs.String("python", workloads.PeerPython, "Python `interpreter` with torch, torchvision, scipy and PIL")
	fs.String("script", peer.LadderScript, "the PyTorch peer `script`")
	loader.WorkersFlag(fs, true, "the loaders' worker `count` (one; default: one per core)")
	fs.String("impls", strings.Join(peer.LadderImpls, ","), "comma-separated `implementations`")
	fs.Int("batch", d.Batch, "samples per `batch` (the document's 256)")
	fs.String("raw-size", fmt.Sprintf("%dx%d", d.Width, d.Height), "raw image `size`, N or WxH")
	fs.Int("crop", d.Crop, "random crop `side`")
	fs.Uint64("seed", d.Seed, "dataset and transform `seed`")
	fs.Int("count", 3, "`rounds`: runs of every implementation at every level")
	fs.String("out", "", "benchmark-format result `file`, every run (written atomically as each run ends)")
	fs.BoolVar(&f.on, "ladder", false, "compare training loops at every caching level on the emulated device (the document's ladder.py against ours) instead of loaders")
	fs.StringVar(&f.levels, "levels", "", "with --ladder: comma-separated `levels` (default device,host,sample,raw,none)")
	fs.IntVar(&f.steps, "steps", 8, "with --ladder: measured training `steps` a run, after one warm-up step")
	fs.StringVar(&f.step, "step", workloads.DocumentStep.String(), "with --ladder: the emulated device's step `time`, or calibrated (the document's 290ms over this machine's calibration ratio)")
	fs.IntVar(&f.calibration, "calibration-batches", 12, "with --ladder --step calibrated: `batches` the calibration loads at each of raw and none (at least 6: the first 4, one per worker, are not timed)")
}

// runPeerLadder is `headspace peer --ladder`.
func runPeerLadder(ctx context.Context, fs *flag.FlagSet, lf *peerLadderFlags, args []string, stdout, stderr io.Writer) error {
	exp, err := peerLadderExperiment(fs, lf)
	if err != nil {
		return err
	}
	out := fs.Lookup("out").Value.String()
	if out != "" {
		// Make its folder now rather than fail after minutes of runs.
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
	}
	var environment []resultfile.Config
	var o workloads.PeerLadderOutcome // so far, while it runs
	settings := func() []resultfile.Config {
		cfg := append(append(environment, exp.Settings()...), resultfile.Config{Key: "command", Value: cli.CommandLine("headspace peer", args)})
		return peer.FileConfig(cfg, o.PeerConfig)
	}
	_, err = driver.Run(ctx, driver.Job{Settings: settings, Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
		// Read before the runs (they start Python; the tree must be read as it
		// was when the measurement began).
		environment = machine.Environment("emulated")
		if lf.step == "calibrated" {
			fmt.Fprintf(stderr, "calibrating: the document's DataLoader at raw and none, %d batches each\n", lf.calibration)
		}
		// Every run is saved as soon as it is done (the whole file, atomically),
		// so an interrupted or failed sweep keeps what it measured.
		var saved []*benchfmt.Result
		var err error
		o, err = exp.MeasureEach(ctx, workloads.Env{}, func(so workloads.PeerLadderOutcome) error {
			if len(so.Measurements) == 0 {
				cal := *so.Calibration
				exp = exp.Calibrated(cal)
				fmt.Fprintf(stdout, "calibration: this machine runs the document's loader at %.3f of the document's host; step %v\n\n", cal.Ratio, cal.Step)
				return nil
			}
			m := so.Measurements[len(so.Measurements)-1]
			fmt.Fprintf(stderr, "%s: %.3f steps/s\n", m.BenchName(), m.StepsPerSec)
			o, saved = so, exp.Codec().Encode(so)
			return h.Save(saved)
		})
		if err != nil {
			return nil, err
		}
		return saved, nil
	}}, driver.Output{Path: out, Benchmarks: []string{"PeerLadder"}})
	if err != nil {
		// A peer not installed failed before its first run.
		if out != "" && len(o.Measurements) > 0 {
			fmt.Fprintf(stderr, "results so far: %s (%d runs)\n", out, len(o.Measurements))
		}
		return workloads.WithPeerHint(err)
	}
	if err := exp.Config.WriteText(stdout, o.LadderResult); err != nil {
		return err
	}
	if out != "" {
		fmt.Fprintf(stdout, "\nresults: %s\n", out)
	}
	return nil
}

// peerLadderExperiment is the ladder comparison that peer's flags set
// with --ladder, checked: the loaders' flags that apply to it are read
// from fs, those that do not are refused.
func peerLadderExperiment(fs *flag.FlagSet, lf *peerLadderFlags) (workloads.PeerLadder, error) {
	var exp workloads.PeerLadder
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	script := get("script")
	workers := runtime.GOMAXPROCS(0)
	if set["workers"] {
		ws, err := cli.ParseInts("--workers", get("workers"))
		if err != nil {
			return exp, err
		}
		if len(ws) != 1 {
			return exp, cli.Usagef("--workers %s: --ladder runs one worker count", get("workers"))
		}
		workers = ws[0]
	}
	impls, err := cli.ParseList("--impls", get("impls"), peer.LadderImpls)
	if !set["impls"] {
		impls, err = peer.LadderImpls, nil
	}
	if err != nil {
		return exp, err
	}
	levels := level.Document
	if lf.levels != "" {
		if levels, err = level.ParseList(lf.levels); err != nil {
			return exp, cli.UsageError{Msg: err.Error()}
		}
	}
	s, err := peerLadderSettings(get, lf, workers)
	if err != nil {
		return exp, err
	}
	count, _ := strconv.Atoi(get("count"))
	exp = workloads.PeerLadder{Config: peer.LadderConfig{Peer: peer.Peer{Python: get("python"), Script: script}, Settings: s, Levels: levels, Impls: impls, Count: count}}
	if lf.step == "calibrated" {
		exp.CalibrationBatches = lf.calibration
	}
	if err := exp.Validate(); err != nil {
		return exp, cli.UsageError{Msg: err.Error()}
	}
	return exp, nil
}

// peerLadderSettings are the ladder's settings from the flags (get reads
// one of the loaders' by name) with workers loader workers, checked.
func peerLadderSettings(get func(string) string, lf *peerLadderFlags, workers int) (peer.LadderSettings, error) {
	var s peer.LadderSettings
	w, h, err := cli.ParseSize("--raw-size", get("raw-size"))
	if err != nil {
		return s, err
	}
	atoi := func(name string) int { n, _ := strconv.Atoi(get(name)); return n }
	seed, _ := strconv.ParseUint(get("seed"), 10, 64)
	if err := cli.FirstErr(cli.InRange("--count", atoi("count"), 1, cli.MaxCount), cli.InRange("--steps", lf.steps, 1, cli.MaxSteps),
		cli.InRange("--calibration-batches", lf.calibration, 6, 1000)); err != nil {
		return s, err
	}
	dev := workloads.DocumentDevice()
	if lf.step != "calibrated" {
		if dev.Step, err = time.ParseDuration(lf.step); err != nil || dev.Step < 0 || dev.Step > time.Minute {
			return s, cli.Usagef("--step %q: want a duration from 0 to 1m, or calibrated", lf.step)
		}
	}
	return peer.LadderSettings{Width: w, Height: h, Crop: atoi("crop"), Batch: atoi("batch"), Workers: workers, Steps: lf.steps, Seed: seed, Device: dev}, nil
}
