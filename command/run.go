package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// outUsage is --out's usage by how the file is written.
var outUsage = map[driver.Mode]string{
	driver.Whole:         "benchmark-format result `file` (written atomically)",
	driver.Stream:        "benchmark-format result `file`, written as each record is made, resumed where it holds this run's setup",
	driver.StreamPartial: "benchmark-format result `file`, written as each point finishes, marked partial until the run completes (beside it as NAME.partial.txt where it holds a complete run, which SIGINT keeps)",
}

// CommandOf is the command headspace name of experiment E (P is *E),
// made the one way: its flags parsed into the registry's Default size of
// E (Flags), checked (Prepare), E run through driver.Run as
// workloads.Job(e, env) to --out, the records read back through E's
// codec as the file holds them, and Report. --from FILE decodes a saved
// file the same way and calls the same Report.
func CommandOf[R any, E any, P interface {
	*E
	workloads.Commanded[R]
}](name, summary, usage string) cli.Command {
	return cli.Command{Name: name, Summary: summary, Runs: []string{P(new(E)).Name()},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			e := P(new(E))
			*e = workloads.At(e, workloads.Default).(E)
			return runCommand[R](ctx, e, name, usage, args, stdout, stderr)
		}}
}

// runCommand is CommandOf's Run, of experiment e: its flags, then
// --from's rebuild or a run.
func runCommand[R any](ctx context.Context, e workloads.Commanded[R], name, usage string, args []string, stdout, stderr io.Writer) error {
	mode := fileMode(e)
	fs := cli.NewFlagSet(name, usage, stdout)
	out, from := outputFlags(fs, e.Codec().Benchmarks(), mode)
	e.Flags(fs)
	keep, took, err := parse(ctx, e, fs, args, stdout, stderr)
	if took || err != nil {
		return err
	}
	if v, ok := e.(workloads.Invoked); ok {
		v.Invoked("headspace "+cli.CommandLine(name, args), *from)
	}
	if *from != "" {
		if err := cli.FromOnly(fs, keep...); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return cli.Usagef("--from rebuilds from a saved file; the command after -- only applies to a run that measures")
		}
		return rebuild(e, name, *from, stdout)
	}
	if out.Fresh && out.Path == "" && mode == driver.Stream {
		return cli.Usagef("--fresh needs --out")
	}
	if err := driver.Check(*out); err != nil {
		return err // before Prepare prints anything
	}
	s, err := prepare(ctx, e, name, args, stdout, stderr)
	if s.Close != nil {
		defer s.Close() // a failed Prepare's too: a --link it started
	}
	if err != nil {
		return err
	}
	return run(ctx, e, mode, s, *out, stdout, stderr)
}

// fileMode is how e's result file is written: driver.Whole unless it
// is Streamed.
func fileMode(e any) driver.Mode {
	if s, ok := e.(workloads.Streamed); ok {
		return s.File()
	}
	return driver.Whole
}

// outputFlags defines the flags of a command's result file on fs, for
// the benchmarks of its codec and a file written as mode says: --out,
// --force (a whole file's) or --fresh (a streamed one's), and --from.
func outputFlags(fs *flag.FlagSet, benchmarks []string, mode driver.Mode) (out *driver.Output, from *string) {
	out = &driver.Output{Beside: mode == driver.Whole, Fresh: mode == driver.StreamPartial, Benchmarks: outputBenchmarks(benchmarks)}
	fs.StringVar(&out.Path, "out", "", outUsage[mode])
	switch mode {
	case driver.Whole:
		fs.BoolVar(&out.Force, "force", false, "let --out replace a results file holding more results")
	case driver.Stream:
		fs.BoolVar(&out.Fresh, "fresh", false, "start --out afresh instead of resuming it")
	}
	from = fs.String("from", "", "rebuild the report from the result `file` a run's --out wrote, measuring nothing")
	return out, from
}

// parse parses args into fs, e's flags defined: a CommandTaker runs the
// user's command given after them (took), an ArgsTaker takes the
// arguments after them, and an Outputs experiment
// checks the files its report writes, the flags that name them kept for
// --from.
func parse[R any](ctx context.Context, e workloads.Commanded[R], fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (keep []string, took bool, err error) {
	if t, ok := e.(workloads.CommandTaker); ok {
		if err := cli.ParseArgs(fs, args); err != nil {
			return nil, false, err
		}
		if took, err := t.TakeCommand(ctx, fs, args, stdout, stderr); took || err != nil {
			if h, ok := e.(workloads.HandsOff); ok && err == nil && h.HandedOff() != nil {
				err = runHandoff(ctx, h.HandedOff(), stdout, stderr)
			}
			return nil, took, err
		}
	}
	if a, ok := e.(workloads.ArgsTaker); ok {
		if err := cli.ParseArgs(fs, args); err != nil {
			return nil, false, err
		}
		if err := a.TakeArgs(fs, args); err != nil {
			return nil, false, err
		}
	} else if err := cli.ParseFlags(fs, args); err != nil {
		return nil, false, err
	}
	if o, ok := e.(workloads.Outputs); ok {
		keep, err = o.Outputs()
	}
	return keep, false, err
}

// prepare is how e runs, from its Prepare where it is a Preparer, with
// the file's settings: the experiment's where Prepare set none, and the
// command line where it asks for it.
func prepare[R any](ctx context.Context, e workloads.Commanded[R], name string, args []string, stdout, stderr io.Writer) (workloads.Setup, error) {
	var s workloads.Setup
	if p, ok := e.(workloads.Preparer); ok {
		var err error
		if s, err = p.Prepare(ctx, stdout, stderr); err != nil {
			return s, err
		}
	}
	if s.Settings == nil {
		s.Settings = e.Settings()
	}
	if s.CommandLine {
		command := resultfile.Config{Key: "command", Value: cli.CommandLine("headspace "+name, args)}
		s.Settings = append(s.Settings, command)
		if lines := s.Lines; lines != nil {
			s.Lines = func() []resultfile.Config { return append(lines(), command) }
		}
	}
	return s, nil
}

// run runs e as s says into out through driver.Run and prints its
// report from the records read back.
func run[R any](ctx context.Context, e workloads.Commanded[R], mode driver.Mode, s workloads.Setup, out driver.Output, stdout, stderr io.Writer) error {
	job := jobOf(s, e, mode, stderr)
	o, err := driver.Run(ctx, job, out)
	if i, ok := e.(workloads.Interrupts); ok && o.Interrupted {
		return reportInterrupted(e, i, o, job.Settings(), stdout)
	}
	if o.Interrupted && s.Partial != "" {
		err = nil // reported below, then o.Err(s.Partial)
	}
	if o.Interrupted && o.Path != "" && s.Partial == "" {
		kept := fmt.Sprintf("the %d results finished are in %s, marked partial", len(o.Records), o.Path)
		if o.Path != out.Path {
			kept += "; " + out.Path + " is kept as it was"
		}
		return o.Err(kept)
	}
	if err != nil {
		return err
	}
	recs := o.Records
	if o.Path != "" && !atomicfile.InPlace(o.Path) {
		// The report is of the file, as --from's is.
		if recs, err = resultfile.Read(o.Path); err != nil {
			return err
		}
	} else {
		recs = resultfile.WithSettings(recs, job.Settings())
	}
	var r R
	if len(recs) > 0 || !o.Interrupted && !s.Empty {
		if r, err = workloads.DecodeFile(e.Codec(), recs); err != nil {
			return err
		}
	}
	if err := e.Report(r, stdout); err != nil {
		return err
	}
	switch {
	case s.End != nil:
		return s.End(stdout, o)
	case out.Path == "":
	case s.Benchstat:
		fmt.Fprintf(stdout, "results: %s (compare with: go tool benchstat %s)\n", o.Path, o.Path)
	default:
		cli.KeptNote(stdout, out.Path, o.Path)
		fmt.Fprintf(stdout, "results: %s\n", o.Path)
	}
	return o.Err(s.Partial)
}

// jobOf is e's driver.Job as s says: workloads.Job(e, s.Env), its file's
// machine lines read once, when they are first asked for (before a
// streamed run, after a whole one: it may start git, whose CPU is no
// run's), the experiment's as they are then, its progress on stderr.
func jobOf(s workloads.Setup, e workloads.Experiment, mode driver.Mode, stderr io.Writer) driver.Job {
	var machine []resultfile.Config
	job := workloads.Job(e, s.Env)
	job.File, job.Units, job.Progress = mode, s.Units, stderr
	if s.Todo != nil {
		job.Measure = func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			env := s.Env.Hooked(h)
			h.Total(s.Todo(env))
			return e.Run(ctx, env)
		}
	}
	job.Settings = func() []resultfile.Config {
		if machine == nil {
			device := "emulated"
			if s.Device != nil {
				device = s.Device()
			}
			machine = driver.Settings(device)
		}
		lines := s.Settings
		if s.Lines != nil {
			lines = s.Lines() // as they are now: a Save's, then the end's
		}
		return append(slices.Clone(machine), lines...)
	}
	return job
}

// reportInterrupted prints the report of what an interrupted run of e
// finished, its records in o, and returns the error that exits 130.
func reportInterrupted[R any](e workloads.Commanded[R], i workloads.Interrupts, o driver.Outcome, settings []resultfile.Config, stdout io.Writer) error {
	kept := i.Interrupt()
	var r R
	if len(o.Records) > 0 {
		var err error
		if r, err = workloads.DecodeFile(e.Codec(), resultfile.WithSettings(o.Records, settings)); err != nil {
			return err
		}
	}
	if err := e.Report(r, stdout); err != nil {
		return err
	}
	if o.Path != "" && len(o.Records) > 0 {
		fmt.Fprintf(stdout, "results: %s (partial: interrupted)\n", o.Path)
	}
	return o.Err(kept)
}

// rebuild is --from: the report of the result file from, decoded through
// e's codec; a file that is not e's is bad input (exit 2), as a missing
// one is.
func rebuild[R any](e workloads.Commanded[R], name, from string, stdout io.Writer) error {
	recs, err := resultfile.Read(from)
	if err != nil {
		return cli.FromErr(from, err)
	}
	r, err := workloads.DecodeFile(e.Codec(), recs)
	if err != nil {
		return cli.Usagef("--from %s: not a result file of headspace %s --out (%v)", from, name, err)
	}
	return e.Report(r, stdout)
}

// outputBenchmarks are the benchmarks of a codec's records as
// driver.Output names them: up to the first '/'.
func outputBenchmarks(benchmarks []string) []string {
	var out []string
	for _, b := range benchmarks {
		b, _, _ = strings.Cut(b, "/")
		if len(out) == 0 || out[len(out)-1] != b {
			out = append(out, b)
		}
	}
	return out
}

// runHandoff runs the experiment a command handed its run to (its
// TakeCommand: workloads.HandsOff), or rebuilds its report from a file,
// the one way (handOff).
func runHandoff(ctx context.Context, h *workloads.Handoff, stdout, stderr io.Writer) error {
	var err error
	switch e := h.Experiment.(type) {
	case *workloads.OwnLoopWhatIf:
		err = handOff(ctx, e, h, stdout, stderr)
	case *workloads.OwnLoopAnalyze:
		err = handOff(ctx, e, h, stdout, stderr)
	case *workloads.OwnLoopLadder:
		err = handOff(ctx, e, h, stdout, stderr)
	default:
		return fmt.Errorf("headspace: no command runs a handed-off %T", h.Experiment)
	}
	if h.Errors != nil {
		err = h.Errors(err)
	}
	return err
}

// Mode is one experiment of a command that runs several (ModesOf),
// picked by a flag of its own or, with --from, by the file's records.
type Mode struct {
	// Flag picks the mode where given ("" for the default mode); Name
	// says which it is in errors.
	Flag, Name string
	// Layout reads its records' names: --from picks the mode whose
	// layout owns the file's first record.
	Layout resultfile.Layout
	// Flags defines the mode's flags (its --out and --from among them).
	Flags func(fs *flag.FlagSet)
	// Runs are the experiments it runs (cli.Command.Runs).
	Runs []string
	// Run runs it, given the command's arguments.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// ModeOf is experiment E as a mode of command name, picked by --flag,
// run by CommandOf's path.
func ModeOf[R any, E any, P interface {
	*E
	workloads.Commanded[R]
}](name, flagName, modeName string) Mode {
	c := CommandOf[R, E, P](name, "", "")
	return Mode{Flag: flagName, Name: modeName, Layout: P(new(E)).Codec().Layout(), Runs: c.Runs, Run: c.Run,
		Flags: func(fs *flag.FlagSet) {
			e := P(new(E))
			*e = workloads.At(e, workloads.Default).(E)
			outputFlags(fs, e.Codec().Benchmarks(), fileMode(e))
			e.Flags(fs)
		}}
}

// ModesOf is a command of several modes: the union of their flags
// parsed (--help lists them all), the mode picked (pickMode), a flag it
// does not define refused naming it, and the mode run.
func ModesOf(name, summary, usage string, modes ...Mode) cli.Command {
	var runs []string
	for _, m := range modes {
		runs = append(runs, m.Runs...)
	}
	return cli.Command{Name: name, Summary: summary, Runs: runs, Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		fs := cli.NewFlagSet(name, usage, stdout)
		owns := make([]map[string]bool, len(modes))
		for i, m := range modes {
			mfs := cli.NewFlagSet(name, "", io.Discard)
			m.Flags(mfs)
			owns[i] = map[string]bool{}
			mfs.VisitAll(func(f *flag.Flag) {
				if owns[i][f.Name] = true; fs.Lookup(f.Name) == nil {
					fs.Var(f.Value, f.Name, f.Usage)
					fs.Lookup(f.Name).DefValue = f.DefValue // as its mode shows it
				}
			})
		}
		if err := cli.ParseArgs(fs, args); err != nil {
			return err
		}
		i, err := pickMode(fs, modes)
		if err != nil {
			return err
		}
		if args, err = modeArgs(fs, args, modes, owns[i]); err != nil {
			return cli.Usagef("%v does not apply to %s", err, modes[i].Name)
		}
		return modes[i].Run(ctx, args, stdout, stderr)
	}}
}

// modeArgs are args for the picked mode, whose flags are owns, parsed
// into fs: another mode's flag turned off (--ladder=false) left out, and
// an error naming the first other flag the mode does not define.
func modeArgs(fs *flag.FlagSet, args []string, modes []Mode, owns map[string]bool) ([]string, error) {
	isMode := func(name string) bool { return slices.ContainsFunc(modes, func(m Mode) bool { return m.Flag == name }) }
	var err error
	fs.Visit(func(f *flag.Flag) {
		if !owns[f.Name] && err == nil && !(isMode(f.Name) && f.Value.String() == "false") {
			err = errors.New("--" + f.Name)
		}
	})
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool {
		name, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return ok && v == "false" && isMode(name) && !owns[name]
	}), err
}

// pickMode is the mode args (parsed into fs) ask for: with --from, the
// one whose layout owns the file's first record (the first mode for a
// file none owns: its codec says what is wrong), else the one whose flag
// is given, else the default; two modes' flags are refused.
func pickMode(fs *flag.FlagSet, modes []Mode) (int, error) {
	if from := fs.Lookup("from").Value.String(); from != "" {
		recs, err := resultfile.Read(from)
		if err != nil {
			return 0, cli.FromErr(from, err)
		}
		for i, m := range modes {
			if len(recs) == 0 {
				break
			}
			if _, err := m.Layout.Read(recs[0]); !errors.Is(err, resultfile.ErrNotOurs) {
				return i, nil
			}
		}
		return 0, nil
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() != "false" })
	picked := -1
	for i, m := range modes {
		if !given[m.Flag] {
			continue
		}
		if picked >= 0 {
			return 0, cli.Usagef("--%s and --%s are two comparisons: run them apart", modes[picked].Flag, m.Flag)
		}
		picked = i
	}
	if picked < 0 {
		picked = slices.IndexFunc(modes, func(m Mode) bool { return m.Flag == "" })
	}
	return picked, nil
}

// handOff is e, handed off as h: --from's rebuild of its file, or its
// run into a whole file beside which one of another setup is kept.
func handOff[R any](ctx context.Context, e workloads.Commanded[R], h *workloads.Handoff, stdout, stderr io.Writer) error {
	if h.From != "" {
		return rebuild(e, h.Name, h.From, stdout)
	}
	h.Out.Benchmarks, h.Out.Beside = outputBenchmarks(e.Codec().Benchmarks()), true
	return run(ctx, e, driver.Whole, h.Setup, h.Out, stdout, stderr)
}
