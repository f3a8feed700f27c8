package workloads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Commanded is a typed experiment that is a command of its own,
// headspace <name>, made by the command layer (command.CommandOf, package
// command): it owns its flags and its report.
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
	// command.CommandOf's.
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

// Setup is how command.CommandOf runs an experiment, from its Prepare.
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

// HandsOff is a CommandTaker whose TakeCommand may hand the command to
// another experiment (whatif -- COMMAND: OwnLoopWhatIf): HandedOff, once
// TakeCommand has taken the command, is what the command layer runs in
// its place, or nil where TakeCommand did the work itself.
type HandsOff interface {
	HandedOff() *Handoff
}

// Handoff is an experiment a command runs in place of its own, ready to
// run: its Setup and output (a run), or the file whose report to
// rebuild (From, named Name in --from's errors). Errors, if set, maps
// the run's error to the command's.
type Handoff struct {
	Experiment any
	Setup      Setup
	Out        driver.Output
	From, Name string
	Errors     func(error) error
}

// ArgsTaker is a Commanded experiment whose command takes arguments
// after its flags that its own run uses (tune -- COMMAND: the script it
// tunes), unlike a CommandTaker's, which runs them itself; without it an
// argument after the flags is a usage error. TakeArgs is given the flags
// parsed into fs and the arguments as typed, and checks them and the
// flags that go with them; --from takes none.
type ArgsTaker interface {
	TakeArgs(fs *flag.FlagSet, args []string) error
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

// DecodeFile is R of recs, a result file's records, through codec c,
// given the file's settings where R reads them (a pipeline's sizes, a
// grid's device): how a command's report, after a run and from --from
// alike, gets its outcome.
func DecodeFile[R any](c Codec[R], recs []*benchfmt.Result) (R, error) {
	r, err := c.Decode(recs)
	if s, ok := any(&r).(settled); ok && err == nil && len(recs) > 0 {
		s.settle(fileSettings(recs[0]))
	}
	return r, err
}

// fileSettings are the result file's configuration lines that rec carries
// (a record read from a file, or a run's given the file's settings).
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

// givenInt is an int flag bound to a field that also says whether it
// was given.
type givenInt struct {
	p     *int
	given *bool
}

func (f givenInt) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.Itoa(*f.p)
}

func (f givenInt) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errors.New("parse error")
	}
	*f.p, *f.given = int(n), true
	return nil
}

// Get is the value, for the flag's bound (cli.CheckBounds).
func (f givenInt) Get() any { return *f.p }
