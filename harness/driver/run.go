package driver

import (
	"context"
	"errors"
	"io"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Mode is how Run writes a job's result file.
type Mode int

// The ways a run's result file is written (the package comment says
// which runs write which).
const (
	// Whole writes the run's records once, when it ends (Write): marked
	// partial if it was interrupted, beside a complete file with
	// Output.Beside, never over a full one with a quick one unless
	// Output.Force.
	Whole Mode = iota
	// Stream writes each record given to Hooks.Result or Hooks.Add before
	// it returns (Open, Run.Add), resuming an existing file of the same
	// setup unless Output.Fresh.
	Stream
	// StreamPartial streams a fresh run marked partial, and gives Output.Path
	// the whole run once it completes (OpenPartial, Partial.Complete).
	StreamPartial
)

// Job is one run of an experiment as a command, `headspace reproduce` or
// a benchmark makes it: how its result file is written, its progress
// line, and Measure, the run itself.
type Job struct {
	// File is how the result file is written.
	File Mode
	// Settings are the file's configuration lines (Settings(device, …)).
	// A streamed file asks for them before Measure, a whole one when it
	// is written, so that lines known only after the run (the device a
	// run found) are recorded. Unused without Output.Path.
	Settings func() []resultfile.Config
	// Units are the progress line's units of work (Hooks.Total changes
	// them).
	Units int
	// Progress is where the progress line is drawn when it is a terminal;
	// nil draws none.
	Progress io.Writer
	// Lines, if set, prefixes the lines of Hooks.Logf and, off a
	// terminal, of each Hooks.Finished unit, on Progress:
	// "reproduce 003".
	Lines string
	// Measure runs the experiment and returns every record it made, in
	// order, those it gave h too; what was made before an error with it.
	// It may print what it measured: a whole file is written after it
	// returns, before Run does.
	Measure func(ctx context.Context, h *Hooks) ([]*benchfmt.Result, error)
}

// Outcome is what Run made.
type Outcome struct {
	// Records are the run's: a resumed file's first, then Measure's.
	Records []*benchfmt.Result
	// Path is the file the records are in: Output.Path, or the file
	// beside it (Output.Beside) that a whole run or a Partial one that
	// did not complete was written to; "" where none was written.
	Path string
	// Interrupted says the run's context was cancelled (SIGINT): what it
	// finished is kept.
	Interrupted bool
}

// Err is what a command that printed an interrupted run's outcome
// returns: Interrupted{Kept: kept}, which exits 130; nil for a run that
// finished.
func (o Outcome) Err(kept string) error {
	if !o.Interrupted {
		return nil
	}
	return Interrupted{Kept: kept}
}

// Run runs job, writing its result file to out: it checks out before
// anything is measured (Check: resultfile.ErrRefused, exit 2), opens a
// streamed file (job.File) and draws the progress line while Measure
// runs, then writes a whole file of its records (none if it made none). A run whose context was cancelled
// (Measure's error is context.Canceled) is interrupted, not failed: what
// it finished is kept (a whole file marked partial, unless it made
// nothing; a streamed file holds it already; a Partial one stays
// partial), Outcome.Interrupted says so, and Run returns Measure's error,
// which a command returns, or, after printing what finished, replaces
// with Outcome.Err. A failed run writes no whole file and returns its
// error.
func Run(ctx context.Context, job Job, out Output) (o Outcome, err error) {
	if err := Check(out); err != nil {
		return o, err
	}
	h := Begin(nil, job.Progress, job.Units, nil)
	h.lines = job.Lines
	defer h.Finish()
	var partial *Partial
	switch {
	case out.Path == "":
	case job.File == Stream:
		if h.file, err = Open(ctx, out, job.Settings()); err != nil {
			return o, err
		}
		defer h.file.Close()
		if !out.Fresh {
			o.Records, _ = resultfile.Read(out.Path) // a resumed file's records first
		}
	case job.File == StreamPartial:
		if partial, err = OpenPartial(ctx, out, job.Settings()); err != nil {
			return o, err
		}
		defer partial.Close()
		h.file = partial.Run
	default:
		h.save = func(recs []*benchfmt.Result) error {
			_, err := Write(out, job.Settings(), recs, h.isPartial())
			return err
		}
	}
	recs, err := job.Measure(ctx, h)
	h.Finish()
	o.Records = append(o.Records, recs...)
	o.Interrupted = err != nil && errors.Is(err, context.Canceled)
	if err != nil && !o.Interrupted || out.Path == "" {
		return o, err
	}
	switch {
	case job.File == Stream:
		o.Path = out.Path
	case job.File == StreamPartial && o.Interrupted:
		o.Path = partial.Path()
	case job.File == StreamPartial:
		if cerr := partial.Complete(); cerr != nil {
			return o, cerr
		}
		o.Path = out.Path
	case len(recs) > 0:
		wrote, werr := Write(out, job.Settings(), recs, o.Interrupted || h.isPartial())
		if werr != nil {
			return o, werr
		}
		o.Path = wrote
	}
	return o, err
}
