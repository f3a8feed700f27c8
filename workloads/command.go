package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Commanded is a typed experiment that is a command of its own,
// headspace <name>, made by CommandOf: it owns its flags and its report.
// Its methods are on a pointer to the experiment, so that Flags binds
// the flags to its fields, whose values, the registry's Default size,
// are the flags' defaults: the defaults live in one place, the
// experiment's.
type Commanded[R any] interface {
	Typed[R]
	// Flags defines the command's flags on fs, each bound to a field of
	// the experiment (its specification, or what its report writes:
	// --plot, --report), its default the field's value. --out, --force
	// (a whole file's), --fresh (a streamed one's) and --from are
	// CommandOf's.
	Flags(fs *flag.FlagSet)
	// Report prints what the command shows of an outcome and writes the
	// files its flags name. It is given R decoded from the run's records
	// as its result file holds them, after a run and from --from alike,
	// so that the two print the same bytes.
	Report(r R, w io.Writer) error
}

// Preparer is a Commanded experiment with more to do between its flags
// and its run than their bounds (which cli.Declare checks as they are
// parsed): checks across flags, a device to open, a live line. Prepare
// checks the flags, may print what is about to run on stdout, and says
// how the experiment runs.
type Preparer interface {
	Prepare(ctx context.Context, stdout, stderr io.Writer) (Setup, error)
}

// Setup is how CommandOf runs an experiment, from its Prepare.
type Setup struct {
	// Env is what the experiment's Run takes (a device, the worker
	// binary, a directory); its Result, if set, sees each record first
	// (a live line of each run) and Start each unit of work.
	Env Env
	// Device is the result file's device setting, asked for when the
	// file's settings are (a whole file's once the run has opened it);
	// nil is "emulated".
	Device func() string
	// Settings, if set, are the file's lines after the machine's, in
	// place of the experiment's Settings (a device's lines first).
	Settings []resultfile.Config
	// Lines, if set, are the file's lines after the machine's, in place
	// of Settings, asked for when the file's settings are: a whole
	// file's once the run has ended (the GPU it opened, the libraries
	// it loaded).
	Lines func() []resultfile.Config
	// CommandLine records the command as typed as the file's "command"
	// line, after them.
	CommandLine bool
	// Units are the progress line's units of work (driver.Job.Units).
	Units int
	// Close, if set, is called when the command ends (a --link started).
	Close func()
	// Todo, if set, is the progress line's units of work once a streamed
	// file is resumed, env's Done saying what it holds (in place of
	// Units).
	Todo func(env Env) int
	// Partial, if set, has an interrupted run reported, from what it
	// finished, and end with this note (exit 130); without it an
	// interrupted run reports nothing.
	Partial string
	// Benchstat has the results line name benchstat to compare the file
	// with.
	Benchstat bool
	// End, if set, ends a run's output after Report in place of the
	// results line (its own, and the files the report wrote named after
	// it) and returns the command's error, given the run's outcome: its
	// file's path ("" for none) and whether it was interrupted
	// (driver.Outcome.Err).
	End func(w io.Writer, o driver.Outcome) error
	// Empty says a run may make no records (whatif --stats without
	// --verify or --ladder: a table of a saved profile): its Report is
	// then given R's zero value, not decoded.
	Empty bool
}

// settled is an outcome whose report reads its result file's settings
// (a pipeline's sizes, a grid's device): the command gives them, as the
// file holds them, to R decoded from its records.
type settled interface {
	settle([]resultfile.Config)
}

// CommandTaker is a Commanded experiment whose command also runs a
// user's training command given after its flags (headspace analyze --
// COMMAND): TakeCommand, given the flags parsed into fs, runs it where
// args hold one and says so, or checks that no flag of that mode is set.
type CommandTaker interface {
	TakeCommand(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (took bool, err error)
}

// Outputs is a Commanded experiment whose report writes files: the flags
// that name them, the only flags --from takes beside it, once it has
// checked that the files may be written (cli.CheckOutputs), before
// anything is measured or read.
type Outputs interface {
	Outputs() (flags []string, err error)
}

// Streamed is a Commanded experiment whose result file is written as
// each record is made (driver.Stream, driver.StreamPartial); without it
// the file is written whole when the run ends.
type Streamed interface {
	File() driver.Mode
}

// Interrupts is a Commanded experiment whose report is printed of what
// an interrupted run finished (a streamed file's runs, a resumed file's
// included), not only of a whole run: Interrupt is called before that
// Report, and says what the output shows, for the error that exits 130.
type Interrupts interface {
	Interrupt() (kept string)
}

// Invoked is a Commanded experiment whose report names the command that
// made it: Invoked is given, once the flags are parsed, the command line
// as typed and, with --from, the file read ("" for a run).
type Invoked interface {
	Invoked(commandLine, from string)
}

// outUsage is --out's usage by how the file is written.
var outUsage = map[driver.Mode]string{
	driver.Whole:         "benchmark-format result `file` (written atomically)",
	driver.Stream:        "benchmark-format result `file`, written as each record is made, resumed where it holds this run's setup",
	driver.StreamPartial: "benchmark-format result `file`, written as each point finishes, marked partial until the run completes (beside it as NAME.partial.txt where it holds a complete run, which SIGINT keeps)",
}

// CommandOf is the command headspace name of experiment E (P is *E),
// made the one way: its flags parsed into the registry's Default size of
// E (Flags), checked (Prepare), E run through driver.Run as Job(e, env)
// to --out, the records read back through E's codec as the file holds
// them, and Report. --from FILE decodes a saved file the same way and
// calls the same Report.
func CommandOf[R any, E any, P interface {
	*E
	Commanded[R]
}](name, summary, usage string) cli.Command {
	return cli.Command{Name: name, Summary: summary, Runs: []string{P(new(E)).Name()},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			e := P(new(E))
			*e = At(e, Default).(E)
			return runCommand[R](ctx, e, name, usage, args, stdout, stderr)
		}}
}

// runCommand is CommandOf's Run, of experiment e: its flags, then
// --from's rebuild or a run.
func runCommand[R any](ctx context.Context, e Commanded[R], name, usage string, args []string, stdout, stderr io.Writer) error {
	mode := driver.Whole
	if s, ok := e.(Streamed); ok {
		mode = s.File()
	}
	fs := cli.NewFlagSet(name, usage, stdout)
	out := driver.Output{Beside: mode == driver.Whole, Fresh: mode == driver.StreamPartial, Benchmarks: benchmarks(e.Codec())}
	fs.StringVar(&out.Path, "out", "", outUsage[mode])
	switch mode {
	case driver.Whole:
		fs.BoolVar(&out.Force, "force", false, "let --out replace a results file holding more results")
	case driver.Stream:
		fs.BoolVar(&out.Fresh, "fresh", false, "start --out afresh instead of resuming it")
	}
	from := fs.String("from", "", "rebuild the report from the result `file` a run's --out wrote, measuring nothing")
	e.Flags(fs)
	if t, ok := e.(CommandTaker); ok {
		if err := cli.ParseArgs(fs, args); err != nil {
			return err
		}
		if took, err := t.TakeCommand(ctx, fs, args, stdout, stderr); took || err != nil {
			return err
		}
	}
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	var keep []string
	if o, ok := e.(Outputs); ok {
		var err error
		if keep, err = o.Outputs(); err != nil {
			return err
		}
	}
	if v, ok := e.(Invoked); ok {
		v.Invoked("headspace "+cli.CommandLine(name, args), *from)
	}
	if *from != "" {
		if err := cli.FromOnly(fs, keep...); err != nil {
			return err
		}
		return rebuild(e, name, *from, stdout)
	}
	if out.Fresh && out.Path == "" && mode == driver.Stream {
		return cli.Usagef("--fresh needs --out")
	}
	if err := driver.Check(out); err != nil {
		return err // before Prepare prints anything
	}
	var s Setup
	var err error
	if p, ok := e.(Preparer); ok {
		s, err = p.Prepare(ctx, stdout, stderr)
	}
	if s.Close != nil {
		defer s.Close() // a failed Prepare's too: a --link it started
	}
	if err != nil {
		return err
	}
	if s.Settings == nil {
		s.Settings = e.Settings()
	}
	if s.CommandLine {
		s.Settings = append(s.Settings, resultfile.Config{Key: "command", Value: cli.CommandLine("headspace "+name, args)})
	}
	return run(ctx, e, mode, s, out, stdout, stderr)
}

// run runs e as s says into out through driver.Run and prints its
// report from the records read back.
func run[R any](ctx context.Context, e Commanded[R], mode driver.Mode, s Setup, out driver.Output, stdout, stderr io.Writer) error {
	job := s.job(e, mode, stderr)
	o, err := driver.Run(ctx, job, out)
	if i, ok := e.(Interrupts); ok && o.Interrupted {
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
		recs = withSettings(recs, job.Settings())
	}
	var r R
	if len(recs) > 0 || !o.Interrupted && !s.Empty {
		if r, err = decode(e.Codec(), recs); err != nil {
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

// job is e's driver.Job as s says: Job(e, s.Env), its file's settings
// asked for once (before a streamed run, after a whole one: it may start
// git, whose CPU is no run's), its progress on stderr.
func (s Setup) job(e Experiment, mode driver.Mode, stderr io.Writer) driver.Job {
	var settings []resultfile.Config
	job := Job(e, s.Env)
	job.File, job.Units, job.Progress = mode, s.Units, stderr
	if s.Todo != nil {
		job.Measure = func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			env := s.Env.Hooked(h)
			h.Total(s.Todo(env))
			return e.Run(ctx, env)
		}
	}
	job.Settings = func() []resultfile.Config {
		if settings == nil {
			device := "emulated"
			if s.Device != nil {
				device = s.Device()
			}
			lines := s.Settings
			if s.Lines != nil {
				lines = s.Lines()
			}
			settings = driver.Settings(device, lines)
		}
		return settings
	}
	return job
}

// reportInterrupted prints the report of what an interrupted run of e
// finished, its records in o, and returns the error that exits 130.
func reportInterrupted[R any](e Commanded[R], i Interrupts, o driver.Outcome, settings []resultfile.Config, stdout io.Writer) error {
	kept := i.Interrupt()
	var r R
	if len(o.Records) > 0 {
		var err error
		if r, err = decode(e.Codec(), withSettings(o.Records, settings)); err != nil {
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
func rebuild[R any](e Commanded[R], name, from string, stdout io.Writer) error {
	recs, err := resultfile.Read(from)
	if err != nil {
		return cli.FromErr(from, err)
	}
	r, err := decode(e.Codec(), recs)
	if err != nil {
		return cli.Usagef("--from %s: not a result file of headspace %s --out (%v)", from, name, err)
	}
	return e.Report(r, stdout)
}

// decode is R of recs, a result file's records, through codec c, given
// the file's settings where R reads them (settled).
func decode[R any](c Codec[R], recs []*benchfmt.Result) (R, error) {
	r, err := c.Decode(recs)
	if s, ok := any(&r).(settled); ok && err == nil && len(recs) > 0 {
		s.settle(fileSettings(recs[0]))
	}
	return r, err
}

// benchmarks are the benchmarks of codec c's records as driver.Output
// names them: up to the first '/'.
func benchmarks[R any](c Codec[R]) []string {
	var out []string
	for _, b := range c.Benchmarks() {
		b, _, _ = strings.Cut(b, "/")
		if len(out) == 0 || out[len(out)-1] != b {
			out = append(out, b)
		}
	}
	return out
}

// withSettings are copies of recs carrying settings as a result file's
// configuration lines, as a file read back holds them: the records of a
// run without --out, decoded as a file's would be.
func withSettings(recs []*benchfmt.Result, settings []resultfile.Config) []*benchfmt.Result {
	cfg := make([]benchfmt.Config, len(settings))
	for i, c := range settings {
		cfg[i] = benchfmt.Config{Key: c.Key, Value: []byte(c.Value), File: true}
	}
	out := make([]*benchfmt.Result, len(recs))
	for i, r := range recs {
		c := r.Clone()
		c.Config = append(append([]benchfmt.Config(nil), cfg...), c.Config...)
		out[i] = c
	}
	return out
}

// fileSettings are the result file's configuration lines that rec carries
// (a record read from a file, or a run's through withSettings).
func fileSettings(rec *benchfmt.Result) []resultfile.Config {
	var out []resultfile.Config
	for _, c := range rec.Config {
		if c.File {
			out = append(out, resultfile.Config{Key: c.Key, Value: string(c.Value)})
		}
	}
	return out
}

// setting is the value of key in settings, "" where it has none.
func setting(settings []resultfile.Config, key string) string {
	for _, c := range settings {
		if c.Key == key {
			return c.Value
		}
	}
	return ""
}

// listFlag is a flag of a comma-separated list of allowed names, bound
// to a field (cli.ParseList checks it as it is parsed).
type listFlag struct {
	name    string
	p       *[]string
	allowed []string
}

func (f listFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strings.Join(*f.p, ",")
}

func (f listFlag) Set(s string) (err error) {
	*f.p, err = cli.ParseList("--"+f.name, s, f.allowed)
	return err
}

// sizeFlag is a flag of an image size, N or WxH, bound to two fields
// (cli.ParseSize).
type sizeFlag struct {
	name string
	w, h *int
}

func (f sizeFlag) String() string {
	switch {
	case f.w == nil:
		return ""
	case *f.w == *f.h:
		return fmt.Sprint(*f.w)
	}
	return fmt.Sprintf("%dx%d", *f.w, *f.h)
}

func (f sizeFlag) Set(s string) (err error) {
	*f.w, *f.h, err = cli.ParseSize("--"+f.name, s)
	return err
}
