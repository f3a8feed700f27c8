package workloads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// ownFlags are the flags of analyze and ladder that apply to a user's own
// training command (after --).
type ownFlags struct {
	loader       int
	firstTimeout time.Duration
	stallTimeout time.Duration
	partial      bool
}

// register defines analyze's command flags: ladder's and --partial.
func (f *ownFlags) register(fs *flag.FlagSet) {
	f.registerLadder(fs)
	fs.BoolVar(&f.partial, "partial", false, "with a command that ends before every step: report and keep what it got, marked partial")
}

// ownAnalyzeFlags are analyze's own flags that a command run keeps.
type ownAnalyzeFlags struct {
	numCaches, after, stepsAfter, total int
	out, plot                           string
	force                               bool
}

// ownOnly are the flags that apply to a user's command; the others are
// the synthetic pipeline's.
var ownOnly = map[string]bool{"loader": true, "first-batch-timeout": true, "stall-timeout": true, "partial": true}

// checkOwnFlags refuses, with a command, the synthetic pipeline's flags
// (not in keep), and without one the command's flags.
func checkOwnFlags(fs *flag.FlagSet, command bool, keep ...string) error {
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		switch {
		case command && !ownOnly[f.Name] && !slices.Contains(keep, f.Name):
			bad = append(bad, "--"+f.Name)
		case !command && ownOnly[f.Name]:
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) == 0 {
		return nil
	}
	if command {
		return cli.Usagef("%s only apply to headspace's own pipeline, not to a training command", strings.Join(bad, ", "))
	}
	return cli.Usagef("%s only apply to a training command given after --", strings.Join(bad, ", "))
}

// ownError maps the hook's errors to the command's: refusals and a loop
// that never came, stalled or ended early are bad input (exit 2).
func ownError(err error) error {
	var early *ownloop.EndedEarly
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ownloop.ErrRefused):
		return cli.UsageError{Msg: strings.Replace(err.Error(), ownloop.ErrRefused.Error()+": ", "", 1)}
	case errors.Is(err, ownloop.ErrNoLoader), errors.Is(err, ownloop.ErrStalled), errors.As(err, &early):
		return cli.UsageError{Msg: err.Error()}
	}
	return err
}

// runOwnAnalyze is `headspace analyze -- COMMAND`.
func runOwnAnalyze(ctx context.Context, fs *flag.FlagSet, of *ownFlags, af ownAnalyzeFlags, stdout, stderr io.Writer) error {
	if err := checkOwnFlags(fs, true, "num-caches", "return-caches-after", "steps-after", "total-steps", "out", "plot", "force"); err != nil {
		return err
	}
	if err := cli.FirstErr(cli.InRange("--num-caches", af.numCaches, 1, cli.MaxBatches), cli.InRange("--return-caches-after", af.after, 1, cli.MaxSteps),
		cli.InRange("--steps-after", af.stepsAfter, 1, cli.MaxSteps), cli.InRange("--total-steps", af.total, 1, 1<<40), cli.InRange("--loader", of.loader, 1, 1<<20)); err != nil {
		return err
	}
	if af.after < af.numCaches {
		return cli.Usagef("--return-caches-after %d is less than --num-caches %d: some caches would never be filled", af.after, af.numCaches)
	}
	if err := of.checkTimeouts(); err != nil {
		return err
	}
	cmd, err := ownloop.ParseCommand(fs.Args())
	if err != nil {
		return ownError(err)
	}
	plotBase := strings.TrimSuffix(strings.TrimSuffix(af.plot, ".png"), ".svg")
	if err := cli.CheckOutputs(cli.Figure(cli.Prefixed(plotBase, ".png")), cli.Figure(cli.Prefixed(plotBase, ".svg"))); err != nil {
		return err
	}
	s := ownloop.Settings{Mode: "analyze", Loader: of.loader, NumCaches: af.numCaches, ReturnCachesAfter: af.after, StepsAfter: af.stepsAfter, FirstBatchTimeout: of.firstTimeout, StallTimeout: of.stallTimeout}
	var rep ownloop.Report
	config := func() []resultfile.Config { return rep.ConfigLines() } // a node's: its ranks'
	settings := func() []resultfile.Config { return driver.Settings(rep.Device, config()) }
	o, err := driver.Run(ctx, driver.Job{Units: s.Total(), Progress: stderr, Settings: settings,
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			run, err := ownloop.Exec(ctx, cmd, s, stderr, func(ownloop.Step) { h.Tick() })
			h.Finish()
			var early *ownloop.EndedEarly
			switch {
			case errors.As(err, &early) && of.partial:
				h.Partial()
			case err != nil:
				return nil, ownError(err)
			}
			if len(run.Ranks) > 0 {
				// A node's ranks (a launcher's, or the script's own
				// torch.multiprocessing.spawn).
				nr, err := ownloop.AnalyzeRanks(cmd, s, run, af.total)
				if err != nil {
					if early != nil {
						return nil, cli.Usagef("%v; %v", early, err)
					}
					return nil, err
				}
				rep, config = nr.Ranks[nr.Slowest], nr.ConfigLines
				nr.WriteText(stdout)
				if af.plot != "" {
					if err := rep.SaveBoth(stdout, plotBase); err != nil {
						return nil, err
					}
				}
				return nr.Records(), nil
			}
			if rep, err = ownloop.Analyze(cmd, s, run, af.total); err != nil {
				if early != nil {
					return nil, cli.Usagef("%v; %v", early, err)
				}
				return nil, err
			}
			rep.WriteText(stdout)
			if af.plot != "" {
				if err := rep.SaveBoth(stdout, plotBase); err != nil {
					return nil, err
				}
			}
			return rep.Records(), nil
		}}, driver.Output{Path: af.out, Benchmarks: ownloop.NodeBenchmarks, Force: af.force, Beside: true})
	if err != nil || af.out == "" {
		return err
	}
	cli.KeptNote(stdout, af.out, o.Path)
	fmt.Fprintf(stdout, "results: %s (go tool benchstat -col /phase %s)\n", o.Path, o.Path)
	return nil
}

// registerLadder defines the command flags that ladder and whatif take.
func (f *ownFlags) registerLadder(fs *flag.FlagSet) {
	fs.IntVar(&f.loader, "loader", 1, "with a command: which DataLoader is the training loop's, by the order of first iteration in the main thread (`n`, 1: the first)")
	fs.DurationVar(&f.firstTimeout, "first-batch-timeout", 2*time.Minute, "with a command: how long to wait for its training loop's first batch, and with ranks for any rank's next step (`duration`)")
	fs.DurationVar(&f.stallTimeout, "stall-timeout", 5*time.Minute, "with a command: how long to wait for each step of its training loop after the first batch (`duration`)")
}

// checkTimeouts refuses a bound on the command's waits that is not
// positive.
func (f *ownFlags) checkTimeouts() error {
	if f.firstTimeout <= 0 {
		return cli.Usagef("--first-batch-timeout %v must be positive", f.firstTimeout)
	}
	if f.stallTimeout <= 0 {
		return cli.Usagef("--stall-timeout %v must be positive", f.stallTimeout)
	}
	return nil
}

// ownLadderFlags are ladder's own flags that a command run keeps.
type ownLadderFlags struct {
	levels               string
	steps, warmup, count int
	out                  string
}

// ownLadderSteps is the default of --steps for a command: the synthetic
// ladder's 4 steps are too few for a loader's bursts.
const ownLadderSteps = 20

// runOwnLadder is `headspace ladder -- COMMAND`.
func runOwnLadder(ctx context.Context, fs *flag.FlagSet, of *ownFlags, lf ownLadderFlags, stdout, stderr io.Writer) error {
	if err := checkOwnFlags(fs, true, "levels", "steps", "warmup", "count", "out"); err != nil {
		return err
	}
	c, err := ownLadderConfig(fs, of, lf)
	if err != nil {
		return err
	}
	cmd, err := ownloop.ParseCommand(fs.Args())
	if err != nil {
		return ownError(err)
	}
	e := OwnLoopLadder{Argv: fs.Args(), Config: c}
	var lo OwnLoopLadderOutcome
	settings := func() []resultfile.Config { return driver.Settings(lo.Device, lo.Config) }
	o, err := driver.Run(ctx, driver.Job{Units: c.Count * len(c.Levels), Progress: stderr, Settings: settings,
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			var recs []*benchfmt.Result
			var err error
			lo, err = e.MeasureEach(ctx, Env{}, stderr, func(p ownloop.LadderPoint) error {
				recs = append(recs, ownLoopPointRecord(cmd.Key(), p))
				return h.Result(recs[len(recs)-1])
			})
			h.Finish()
			if (err == nil || errors.Is(err, context.Canceled)) && len(lo.Points) > 0 {
				if rerr := e.Report(lo, stdout); rerr != nil { // an interrupted run's too
					return recs, rerr
				}
			}
			return recs, err
		}}, driver.Output{Path: lf.out, Benchmarks: []string{e.Name()}, Beside: true})
	if err != nil && !o.Interrupted {
		return ownError(err)
	}
	if len(lo.Points) == 0 {
		return o.Err("")
	}
	if lf.out != "" {
		cli.KeptNote(stdout, lf.out, o.Path)
		fmt.Fprintf(stdout, "results: %s (go tool benchstat -col /level %s)\n", o.Path, o.Path)
	}
	return o.Err("the table shows the runs finished before it")
}

// ownLadderConfig is the ladder on a command that the flags set,
// checked.
func ownLadderConfig(fs *flag.FlagSet, of *ownFlags, lf ownLadderFlags) (ownloop.LadderConfig, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c := ownloop.LadderConfig{Levels: []level.Level{level.Host, level.Sample, level.Raw, level.None}, Steps: lf.steps, Count: lf.count, Loader: of.loader, FirstBatchTimeout: of.firstTimeout, StallTimeout: of.stallTimeout}
	if !set["steps"] {
		c.Steps = ownLadderSteps
	}
	if set["warmup"] {
		c.Warmup = lf.warmup
	}
	c.RawIfTorchvision = lf.levels == ""
	if lf.levels != "" {
		ls, err := level.ParseList(lf.levels)
		if err != nil {
			return c, cli.Usagef("--levels: %v", err)
		}
		c.Levels = ls
	}
	if err := cli.FirstErr(cli.InRange("--steps", c.Steps, 1, cli.MaxSteps), cli.InRange("--count", c.Count, 1, 1000), cli.InRange("--loader", of.loader, 1, 1<<20)); err != nil {
		return c, err
	}
	if set["warmup"] && lf.warmup < 1 {
		return c, cli.Usagef("--warmup %d must be at least 1 with a command (leave it out for the automatic warm-up)", lf.warmup)
	}
	if err := of.checkTimeouts(); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, ownError(err)
	}
	return c, nil
}

// runOwnWhatIf is `headspace whatif -- COMMAND`.
func runOwnWhatIf(ctx context.Context, fs *flag.FlagSet, of *ownFlags, verify bool, steps int, out string, force bool, stdout, stderr io.Writer) error {
	if err := checkOwnFlags(fs, true, "verify", "steps", "out", "force"); err != nil {
		return err
	}
	var run *ownloop.Run
	var cmd ownloop.Command
	settings := func() []resultfile.Config {
		return driver.Settings(run.Device(), ownloop.CommandConfig(cmd, run), []resultfile.Config{{Key: "verify-steps", Value: strconv.Itoa(steps)}})
	}
	o, err := driver.Run(ctx, driver.Job{Progress: stderr, Settings: settings,
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			// The flags below are checked after --out, as they always were.
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			if !set["steps"] {
				steps = ownLadderSteps
			}
			if err := cli.FirstErr(cli.InRange("--steps", steps, 1, cli.MaxSteps), cli.InRange("--loader", of.loader, 1, 1<<20)); err != nil {
				return nil, err
			}
			if err := of.checkTimeouts(); err != nil {
				return nil, err
			}
			var err error
			if cmd, err = ownloop.ParseCommand(fs.Args()); err != nil {
				return nil, ownError(err)
			}
			s := ownloop.Settings{Mode: "analyze", Loader: of.loader, NumCaches: 10, ReturnCachesAfter: 40, StepsAfter: 30, FirstBatchTimeout: of.firstTimeout, StallTimeout: of.stallTimeout}
			h.Total(s.Total())
			run, err = ownloop.Exec(ctx, cmd, s, stderr, func(ownloop.Step) { h.Tick() })
			h.Finish()
			if err != nil {
				return nil, ownError(err)
			}
			var nr *ownloop.NodeReport
			var rep ownloop.Report
			if len(run.Ranks) > 0 {
				// A node's ranks: the slowest rank's model, and the node's.
				n, err := ownloop.AnalyzeRanks(cmd, s, run, 1)
				if err != nil {
					return nil, err
				}
				nr, rep = &n, n.Ranks[n.Slowest]
			} else if rep, err = ownloop.Analyze(cmd, s, run, 1); err != nil {
				return nil, err
			}
			w, err := ownloop.NewWhatIf(rep)
			if err != nil {
				return nil, cli.Usagef("%v", err)
			}
			rep.WriteWhatIfHeader(stdout, cmd)
			if nr != nil {
				nr.WriteNodeWhatIf(stdout)
			}
			w.WriteText(stdout)
			checks := map[int]float64{}
			if verify {
				// The loader the analysis measured (one whose steps train,
				// where the first trained nothing), by its number.
				if checks, err = w.VerifyAll(ctx, cmd, rep.Loader.Index, steps, of.firstTimeout, of.stallTimeout, stdout, stderr); err != nil {
					return nil, ownError(err)
				}
			}
			return w.Records(cmd, checks), nil
		}}, driver.Output{Path: out, Benchmarks: []string{"WhatIf"}, Force: force, Beside: true})
	if err != nil || out == "" {
		return err
	}
	cli.KeptNote(stdout, out, o.Path)
	fmt.Fprintf(stdout, "results: %s\n", o.Path)
	return nil
}

// hasCommand says args give a training command: arguments after an
// explicit -- (without it, an argument after the flags is a mistake).
func hasCommand(fs *flag.FlagSet, args []string) bool {
	if fs.NArg() == 0 {
		return false
	}
	i := len(args) - fs.NArg() - 1
	return i >= 0 && args[i] == "--"
}
