package workloads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// OwnLoopAnalyze is `headspace analyze -- COMMAND`: the headspace
// analysis of a user's own, unmodified training script under the hook
// (harness/ownloop): NumCaches batches kept, ReturnCachesAfter steps from
// its loader, then StepsAfter on the cached batches; a node's ranks each
// (docs/own-loop.md).
type OwnLoopAnalyze struct {
	// Argv is the training command, as given after --.
	Argv []string
	// Loader is the training loop's DataLoader, by the order of first
	// iteration (1: the first).
	Loader                                   int
	NumCaches, ReturnCachesAfter, StepsAfter int
	// TotalSteps are the whole training run's, for the time saved.
	TotalSteps                      int
	FirstBatchTimeout, StallTimeout time.Duration
	// Partial keeps a run whose command ended before every step, marked
	// partial.
	Partial bool
	// Plot, if set, is the prefix of the step-time plot Report writes
	// (.png and .svg).
	Plot string
	// log, if set, receives the script's output and the hook's lines
	// (the command's stderr); without it they are discarded.
	log io.Writer
	// made, if set, is given the outcome once it is analysed: the file's
	// lines are then known (ownAnalyzeHandoff).
	made func(OwnLoopAnalyzeOutcome)
}

// DefaultOwnLoopAnalyze is the analysis of OwnLoopScript at the
// command's defaults for a command (ownAnalyzeDefaults): 10 caches, 100
// steps before the switch and 100 after.
func DefaultOwnLoopAnalyze() OwnLoopAnalyze {
	return OwnLoopAnalyze{Argv: []string{PeerPython, OwnLoopScript, "--getitem-ms", "6", "--step-ms", "2"}, Loader: 1,
		NumCaches: 10, ReturnCachesAfter: 100, StepsAfter: 100, TotalSteps: HeadspaceDocumentSteps,
		FirstBatchTimeout: 2 * time.Minute, StallTimeout: 5 * time.Minute}
}

// QuickOwnLoopAnalyze is 40 steps from the loader and 30 cached.
func QuickOwnLoopAnalyze() OwnLoopAnalyze {
	a := DefaultOwnLoopAnalyze()
	a.ReturnCachesAfter, a.StepsAfter = 40, 30
	return a
}

// Name is "OwnLoopAnalyze": BenchmarkOwnLoopAnalyze/script=…/phase=… and
// the rest (OwnLoopAnalyzeCodec).
func (OwnLoopAnalyze) Name() string { return "OwnLoopAnalyze" }

// Document is "": headspace's own.
func (OwnLoopAnalyze) Document() string { return "" }

// Validate reports the first problem with the analysis.
func (a OwnLoopAnalyze) Validate() error {
	switch {
	case len(a.Argv) == 0:
		return fmt.Errorf("own-loop analysis: no training command")
	case a.Loader < 1:
		return fmt.Errorf("own-loop analysis: loader %d: want 1 or more", a.Loader)
	case a.NumCaches < 1 || a.StepsAfter < 1 || a.TotalSteps < 1:
		return fmt.Errorf("own-loop analysis: %d caches, %d steps after, %d in all: want each 1 or more", a.NumCaches, a.StepsAfter, a.TotalSteps)
	case a.ReturnCachesAfter < a.NumCaches:
		return fmt.Errorf("own-loop analysis: %d steps before the switch, fewer than the %d caches", a.ReturnCachesAfter, a.NumCaches)
	case a.FirstBatchTimeout <= 0 || a.StallTimeout <= 0:
		return fmt.Errorf("own-loop analysis: timeouts %v and %v: want both positive", a.FirstBatchTimeout, a.StallTimeout)
	}
	return nil
}

// settings are the hook's settings of the analysis.
func (a OwnLoopAnalyze) settings() ownloop.Settings {
	return ownloop.Settings{Mode: "analyze", Loader: a.Loader, NumCaches: a.NumCaches, ReturnCachesAfter: a.ReturnCachesAfter, StepsAfter: a.StepsAfter,
		FirstBatchTimeout: a.FirstBatchTimeout, StallTimeout: a.StallTimeout}
}

// Settings are the analysis's steps; the command's lines (the
// interpreter, torch, the loaders) are known once it has run:
// OwnLoopAnalyzeOutcome.Config.
func (a OwnLoopAnalyze) Settings() []resultfile.Config {
	return []resultfile.Config{{Key: "num-caches", Value: strconv.Itoa(a.NumCaches)}, {Key: "return-caches-after", Value: strconv.Itoa(a.ReturnCachesAfter)},
		{Key: "steps-after", Value: strconv.Itoa(a.StepsAfter)}, {Key: "total-steps", Value: strconv.Itoa(a.TotalSteps)}}
}

// Flags binds the analysis's flags to its fields, their defaults the
// fields' values: --loader, --first-batch-timeout, --stall-timeout,
// --partial, --num-caches, --return-caches-after, --steps-after,
// --total-steps and --plot (analyze -- COMMAND sets them from analyze's
// flags of those names: ownAnalyze).
func (a *OwnLoopAnalyze) Flags(fs *flag.FlagSet) {
	fs.IntVar(&a.Loader, "loader", a.Loader, "which DataLoader is the training loop's, by the order of first iteration in the main thread (`n`)")
	fs.DurationVar(&a.FirstBatchTimeout, "first-batch-timeout", a.FirstBatchTimeout, "how long to wait for the training loop's first batch (`duration`)")
	fs.DurationVar(&a.StallTimeout, "stall-timeout", a.StallTimeout, "how long to wait for each step after the first batch (`duration`)")
	fs.BoolVar(&a.Partial, "partial", a.Partial, "with a command that ends before every step: report and keep what it got, marked partial")
	fs.IntVar(&a.NumCaches, "num-caches", a.NumCaches, "`batches` kept from the start")
	fs.IntVar(&a.ReturnCachesAfter, "return-caches-after", a.ReturnCachesAfter, "`batches` from the loader before the caches are replayed")
	fs.IntVar(&a.StepsAfter, "steps-after", a.StepsAfter, "`steps` run on cached batches")
	fs.IntVar(&a.TotalSteps, "total-steps", a.TotalSteps, "`steps` of the whole training run, for the time saved")
	fs.StringVar(&a.Plot, "plot", a.Plot, "write the step-time plot to `prefix`.png and prefix.svg")
}

// OwnLoopAnalyzeOutcome is what the analysis of a command measured: one
// process's report, or a node's (Node, whose slowest rank's Report is),
// the device the script trained on and the file's lines.
type OwnLoopAnalyzeOutcome struct {
	Report ownloop.Report
	Node   *ownloop.NodeReport
	Device string
	Config []resultfile.Config
}

// Measure runs the command under the hook and analyses it
// (ownloop.Analyze or, for a node's ranks, AnalyzeRanks); a run that
// ended early is kept, marked partial, with Partial.
func (a OwnLoopAnalyze) Measure(ctx context.Context, env Env) (OwnLoopAnalyzeOutcome, error) {
	var o OwnLoopAnalyzeOutcome
	s := a.settings()
	cmd, run, err := execOwn(ctx, env, a.Name(), a.Argv, a.Validate(), s, a.log)
	var early *ownloop.EndedEarly
	switch {
	case errors.As(err, &early) && a.Partial:
		env.partial()
	case err != nil:
		return o, err
	}
	if err := o.analyze(cmd, s, run, a.TotalSteps); err != nil {
		if early != nil {
			return o, cli.Usagef("%v; %v", early, err)
		}
		return o, err
	}
	if a.made != nil {
		a.made(o)
	}
	return o, nil
}

// analyze is o of run: a node's ranks' (a launcher's, or the script's
// own torch.multiprocessing.spawn) or one process's, with the file's
// lines.
func (o *OwnLoopAnalyzeOutcome) analyze(cmd ownloop.Command, s ownloop.Settings, run *ownloop.Run, total int) error {
	o.Device = run.Device()
	if len(run.Ranks) == 0 {
		rep, err := ownloop.Analyze(cmd, s, run, total)
		if err != nil {
			return err
		}
		o.Report, o.Config = rep, rep.ConfigLines()
	} else {
		nr, err := ownloop.AnalyzeRanks(cmd, s, run, total)
		if err != nil {
			return err
		}
		o.Report, o.Node, o.Config = nr.Ranks[nr.Slowest], &nr, nr.ConfigLines()
	}
	if o.Report.Partial || o.Node != nil && o.Node.Ranks[0].Partial {
		o.Config = append(o.Config, resultfile.Config{Key: "ended-early", Value: "true"})
	}
	return nil
}

// Run runs the analysis (Measure) and returns its records
// (OwnLoopAnalyzeCodec).
func (a OwnLoopAnalyze) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[OwnLoopAnalyzeOutcome](ctx, a, env)
}

// Codec is OwnLoopAnalyzeCodec.
func (OwnLoopAnalyze) Codec() Codec[OwnLoopAnalyzeOutcome] { return OwnLoopAnalyzeCodec }

var _ Typed[OwnLoopAnalyzeOutcome] = OwnLoopAnalyze{}

// Report prints the analysis (ownloop.Report.WriteText, a node's
// NodeReport.WriteText) and writes its plot (Plot): the same bytes after
// a run and from its file.
func (a *OwnLoopAnalyze) Report(o OwnLoopAnalyzeOutcome, w io.Writer) error {
	if o.Report.Run == nil {
		return fmt.Errorf("own-loop analysis: nothing to report")
	}
	if o.Node != nil {
		o.Node.WriteText(w)
	} else {
		o.Report.WriteText(w)
	}
	if a.Plot == "" {
		return nil
	}
	return o.Report.SaveBoth(w, a.plotBase())
}

// plotBase is Plot without .png or .svg.
func (a *OwnLoopAnalyze) plotBase() string {
	return strings.TrimSuffix(strings.TrimSuffix(a.Plot, ".png"), ".svg")
}

// OwnLoopAnalyzeCodec is an OwnLoopAnalyze's records codec (record
// format of issue 53; its records were BenchmarkHeadspace/script=…
// before, without the report's figures): ownloop.Report.Records, for a
// node's ranks each rank's with /rank=R and NodeReport.Records's node
// record. The names the report prints (the command, the interpreter,
// the loaders) are the file's lines: records read without them do not
// decode.
var OwnLoopAnalyzeCodec = Codec[OwnLoopAnalyzeOutcome]{
	Experiment: "OwnLoopAnalyze",
	Keys: map[string][]string{"OwnLoopAnalyzeLoader": {"script", "loader", "rank"}, "OwnLoopAnalyze": {"script", "phase", "rank"},
		"OwnLoopAnalyzeInput": {"script", "rank"}, "OwnLoopAnalyzeStage": {"script", "stage", "rank"}, "OwnLoopAnalyzeNode": {"script", "ranks"}},
	Optional: map[string][]string{"OwnLoopAnalyzeLoader": {"rank"}, "OwnLoopAnalyze": {"rank"}, "OwnLoopAnalyzeInput": {"rank"}, "OwnLoopAnalyzeStage": {"rank"}},
	encode:   encodeOwnLoopAnalyze,
	decode:   decodeOwnLoopAnalyze,
}

// encodeOwnLoopAnalyze is o's records; none where it has no analysis (a
// run stopped before it).
func encodeOwnLoopAnalyze(o OwnLoopAnalyzeOutcome) []*benchfmt.Result {
	switch {
	case o.Node != nil:
		return o.Node.Records()
	case o.Report.Run != nil:
		return o.Report.Records()
	}
	return nil
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
	if e.ReturnCachesAfter < e.NumCaches {
		return nil, cli.Usagef("--return-caches-after %d is less than --num-caches %d: some caches would never be filled", e.ReturnCachesAfter, e.NumCaches)
	}
	if err := checkOwnRun(e.Loader, e.FirstBatchTimeout, e.StallTimeout, e.Argv); err != nil {
		return nil, err
	}
	return &e, nil
}

// IsOwnLoopAnalyzeFile says the result file at path is one of analyze --
// COMMAND --out (its first record OwnLoopAnalyze's), for analyze --from.
func IsOwnLoopAnalyzeFile(path string) bool {
	_, ours := firstRecordOf(path, OwnLoopAnalyzeCodec.Layout())
	return ours
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
