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

// ownAnalyzeHandoff is `headspace analyze -- COMMAND`: OwnLoopAnalyze,
// its fields set by analyze's flags of its names (ownAnalyze), handed to
// the command layer to run the one way into out (driver.Run, the file
// read back through its codec, its Report).
func ownAnalyzeHandoff(fs *flag.FlagSet, out driver.Output, stderr io.Writer) (*Handoff, error) {
	if err := checkOwnFlags(fs, true, "num-caches", "return-caches-after", "steps-after", "total-steps", "out", "plot", "force"); err != nil {
		return nil, err
	}
	if err := driver.Check(out); err != nil {
		return nil, err
	}
	e, err := ownAnalyze(fs)
	if err != nil {
		return nil, err
	}
	if err := cli.CheckOutputs(cli.Figure(cli.Prefixed(e.plotBase(), ".png")), cli.Figure(cli.Prefixed(e.plotBase(), ".svg"))); err != nil {
		return nil, err
	}
	var made OwnLoopAnalyzeOutcome
	e.log, e.made = stderr, func(o OwnLoopAnalyzeOutcome) { made = o }
	s := Setup{Units: e.settings().Total(), Device: func() string { return made.Device }, Lines: func() []resultfile.Config { return made.Config },
		End: func(w io.Writer, o driver.Outcome) error {
			if out.Path != "" {
				cli.KeptNote(w, out.Path, o.Path)
				fmt.Fprintf(w, "results: %s (go tool benchstat -col /phase %s)\n", o.Path, o.Path)
			}
			return nil
		}}
	return &Handoff{Experiment: e, Setup: s, Out: out, Errors: OwnLoopError}, nil
}

// ownAnalyze is OwnLoopAnalyze at its Default size with the flags of its
// Flags that fs has set, and the command after --, checked: caches,
// steps, the loader and the timeouts within their bounds, the command one
// the hook runs.
func ownAnalyze(fs *flag.FlagSet) (*OwnLoopAnalyze, error) {
	e := Sized[OwnLoopAnalyze](Default)
	if err := setOwn(fs, e.Flags); err != nil {
		return nil, err
	}
	e.Argv = fs.Args()
	if err := cli.InRange("--loader", e.Loader, 1, 1<<20); err != nil {
		return nil, err
	}
	if e.ReturnCachesAfter < e.NumCaches {
		return nil, cli.Usagef("--return-caches-after %d is less than --num-caches %d: some caches would never be filled", e.ReturnCachesAfter, e.NumCaches)
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

// setOwn sets the flags that flags defines from those of theirs names
// that fs has set: an experiment's fields from its command's flags.
func setOwn(fs *flag.FlagSet, flags func(*flag.FlagSet)) error {
	own := flag.NewFlagSet("own", flag.ContinueOnError)
	flags(own)
	var err error
	fs.Visit(func(f *flag.Flag) {
		if own.Lookup(f.Name) != nil && err == nil {
			err = own.Set(f.Name, f.Value.String())
		}
	})
	if err != nil {
		return cli.Usagef("%v", err)
	}
	return nil
}

// IsOwnLoopAnalyzeFile says the result file at path is one of analyze --
// COMMAND --out (its first record OwnLoopAnalyze's), for analyze --from.
func IsOwnLoopAnalyzeFile(path string) bool {
	rs, err := resultfile.Read(path)
	return err == nil && len(rs) > 0 && strings.HasPrefix(strings.TrimPrefix(string(rs[0].Name), "Benchmark"), "OwnLoopAnalyze")
}

// ownAnalyzeFrom is analyze --from of a file of analyze -- COMMAND: its
// report rebuilt through OwnLoopAnalyzeCodec, the file's figures and
// lines alone, by the command layer; --plot draws its plot again.
func ownAnalyzeFrom(fs *flag.FlagSet, from string) (*Handoff, error) {
	if err := cli.FromOnly(fs, "plot"); err != nil {
		return nil, err
	}
	e := Sized[OwnLoopAnalyze](Default)
	if err := setOwn(fs, e.Flags); err != nil {
		return nil, err
	}
	if err := cli.CheckOutputs(cli.Figure(cli.Prefixed(e.plotBase(), ".png")), cli.Figure(cli.Prefixed(e.plotBase(), ".svg"))); err != nil {
		return nil, err
	}
	return &Handoff{Experiment: &e, From: from, Name: "analyze -- COMMAND"}, nil
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
