package workloads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
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

// OwnLoopError maps the hook's errors to the command's: refusals and a loop
// that never came, stalled or ended early are bad input (exit 2).
func OwnLoopError(err error) error {
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

// runOwnAnalyze is `headspace analyze -- COMMAND`: its flags checked,
// the command run under the hook and analysed (ownAnalysis.measure)
// through driver.Run into --out.
func runOwnAnalyze(ctx context.Context, fs *flag.FlagSet, of *ownFlags, af ownAnalyzeFlags, stdout, stderr io.Writer) error {
	if err := checkOwnAnalyze(fs, of, af); err != nil {
		return err
	}
	cmd, err := ownloop.ParseCommand(fs.Args())
	if err != nil {
		return OwnLoopError(err)
	}
	a := &ownAnalysis{cmd: cmd, af: af, partial: of.partial, plotBase: strings.TrimSuffix(strings.TrimSuffix(af.plot, ".png"), ".svg")}
	if err := cli.CheckOutputs(cli.Figure(cli.Prefixed(a.plotBase, ".png")), cli.Figure(cli.Prefixed(a.plotBase, ".svg"))); err != nil {
		return err
	}
	a.s = ownloop.Settings{Mode: "analyze", Loader: of.loader, NumCaches: af.numCaches, ReturnCachesAfter: af.after, StepsAfter: af.stepsAfter, FirstBatchTimeout: of.firstTimeout, StallTimeout: of.stallTimeout}
	a.config = func() []resultfile.Config { return a.rep.ConfigLines() } // a node's: its ranks'
	settings := func() []resultfile.Config { return driver.Settings(a.rep.Device, a.config()) }
	o, err := driver.Run(ctx, driver.Job{Units: a.s.Total(), Progress: stderr, Settings: settings,
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			return a.measure(ctx, h, stdout, stderr)
		}},
		driver.Output{Path: af.out, Benchmarks: ownloop.NodeBenchmarks, Force: af.force, Beside: true})
	if err != nil || af.out == "" {
		return err
	}
	cli.KeptNote(stdout, af.out, o.Path)
	fmt.Fprintf(stdout, "results: %s (go tool benchstat -col /phase %s)\n", o.Path, o.Path)
	return nil
}

// checkOwnAnalyze refuses the synthetic pipeline's flags with a command
// and analyze's flags out of their bounds: caches, steps, the loader and
// the timeouts.
func checkOwnAnalyze(fs *flag.FlagSet, of *ownFlags, af ownAnalyzeFlags) error {
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
	return of.checkTimeouts()
}

// ownAnalysis is a run of analyze -- COMMAND: the command, its settings
// and flags, and once analysed the report (a node's slowest rank's) and
// the file's lines.
type ownAnalysis struct {
	cmd      ownloop.Command
	s        ownloop.Settings
	af       ownAnalyzeFlags
	partial  bool
	plotBase string
	rep      ownloop.Report
	config   func() []resultfile.Config
}

// measure runs the command under the hook, then prints its analysis
// (report) and returns its records; a run that ended early is kept,
// marked partial, with --partial.
func (a *ownAnalysis) measure(ctx context.Context, h *driver.Hooks, stdout, stderr io.Writer) ([]*benchfmt.Result, error) {
	run, err := ownloop.Exec(ctx, a.cmd, a.s, stderr, func(ownloop.Step) { h.Tick() })
	h.Finish()
	var early *ownloop.EndedEarly
	switch {
	case errors.As(err, &early) && a.partial:
		h.Partial()
	case err != nil:
		return nil, OwnLoopError(err)
	}
	return a.report(run, early, stdout)
}

// report analyses run, a node's ranks (a launcher's, or the script's own
// torch.multiprocessing.spawn) or one process, prints the analysis and
// its plot (--plot) and returns its records; early is the run's end
// before every step, if it ended so.
func (a *ownAnalysis) report(run *ownloop.Run, early *ownloop.EndedEarly, stdout io.Writer) ([]*benchfmt.Result, error) {
	var recs []*benchfmt.Result
	var err error
	if len(run.Ranks) > 0 {
		var nr ownloop.NodeReport
		if nr, err = ownloop.AnalyzeRanks(a.cmd, a.s, run, a.af.total); err == nil {
			a.rep, a.config = nr.Ranks[nr.Slowest], nr.ConfigLines
			nr.WriteText(stdout)
			recs = nr.Records()
		}
	} else if a.rep, err = ownloop.Analyze(a.cmd, a.s, run, a.af.total); err == nil {
		a.rep.WriteText(stdout)
		recs = a.rep.Records()
	}
	if err != nil {
		if early != nil {
			return nil, cli.Usagef("%v; %v", early, err)
		}
		return nil, err
	}
	if a.af.plot != "" {
		if err := a.rep.SaveBoth(stdout, a.plotBase); err != nil {
			return nil, err
		}
	}
	return recs, nil
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
		return OwnLoopError(err)
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
		return OwnLoopError(err)
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
		return c, OwnLoopError(err)
	}
	return c, nil
}

// ownWhatIfHandoff is `headspace whatif -- COMMAND`: OwnLoopWhatIf,
// its fields set by whatif's flags of its names (ownWhatIf), handed to
// the command layer to run the one way into out (driver.Run, the file
// read back through its codec, its Report).
func ownWhatIfHandoff(fs *flag.FlagSet, out driver.Output, stderr io.Writer) (*Handoff, error) {
	if err := checkOwnFlags(fs, true, "verify", "steps", "out", "force"); err != nil {
		return nil, err
	}
	if err := driver.Check(out); err != nil {
		return nil, err
	}
	e, err := ownWhatIf(fs)
	if err != nil {
		return nil, err
	}
	var made OwnLoopWhatIfOutcome
	e.log, e.made = stderr, func(o OwnLoopWhatIfOutcome) { made = o }
	s := Setup{Units: e.analysis().Total(), Device: func() string { return made.Device }, Lines: func() []resultfile.Config { return made.Config }}
	return &Handoff{Experiment: e, Setup: s, Out: out, Errors: OwnLoopError}, nil
}

// ownWhatIf is OwnLoopWhatIf at its Default size with the flags of its
// Flags that fs has set, and the command after --, checked: --steps,
// --loader and the timeouts within their bounds, the command one the
// hook runs.
func ownWhatIf(fs *flag.FlagSet) (*OwnLoopWhatIf, error) {
	e := Sized[OwnLoopWhatIf](Default)
	own := flag.NewFlagSet("whatif", flag.ContinueOnError)
	e.Flags(own)
	var err error
	fs.Visit(func(f *flag.Flag) {
		if own.Lookup(f.Name) != nil && err == nil {
			err = own.Set(f.Name, f.Value.String())
		}
	})
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	e.Argv = fs.Args()
	if err := cli.FirstErr(cli.InRange("--steps", e.VerifySteps, 1, cli.MaxSteps), cli.InRange("--loader", e.Loader, 1, 1<<20)); err != nil {
		return nil, err
	}
	of := ownFlags{firstTimeout: e.FirstBatchTimeout, stallTimeout: e.StallTimeout}
	if err := of.checkTimeouts(); err != nil {
		return nil, err
	}
	if _, err := ownloop.ParseCommand(e.Argv); err != nil {
		return nil, OwnLoopError(err)
	}
	return &e, nil
}

// IsOwnLoopWhatIfFile says the result file at path is one of whatif --
// COMMAND --out (its first record OwnLoopWhatIf's, or the what-if's
// before issue 53: BenchmarkWhatIf/model), for whatif --from.
func IsOwnLoopWhatIfFile(path string) bool {
	rs, err := resultfile.Read(path)
	return err == nil && len(rs) > 0 && (strings.HasPrefix(string(rs[0].Name), "BenchmarkOwnLoopWhatIf/") || positional(rs[0].Name) == "/model")
}

// ownWhatIfFrom is whatif --from of a file of whatif -- COMMAND: its
// report rebuilt through OwnLoopWhatIfCodec, the file's figures and
// lines alone, by the command layer.
func ownWhatIfFrom(fs *flag.FlagSet, from string) (*Handoff, error) {
	if err := cli.FromOnly(fs); err != nil {
		return nil, err
	}
	e := Sized[OwnLoopWhatIf](Default)
	return &Handoff{Experiment: &e, From: from, Name: "whatif -- COMMAND"}, nil
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
