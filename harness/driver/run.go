package driver

import (
	"cmp"
	"context"
	"errors"
	"io"
	"slices"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver/internal/resultwrite"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/progress"
)

// Mode is how Run writes a job's result file (the package comment says
// which runs write which).
type Mode int

const (
	// Whole writes the run's records once, when it ends.
	Whole Mode = iota
	// Stream writes each record given to Hooks.Result or Hooks.Add before
	// it returns, resuming a file of the same setup unless Output.Fresh.
	Stream
	// StreamPartial streams a fresh run marked partial until it
	// completes, beside a complete file it keeps whole until then.
	StreamPartial
)

// Job is one run of an experiment as a command, `headspace reproduce` or
// a benchmark makes it.
type Job struct {
	// File is how the result file is written.
	File Mode
	// Settings are the file's configuration lines (Settings(device, …)),
	// asked for before Measure by a streamed file and when it is written
	// by a whole one, so that lines known after the run are recorded.
	Settings func() []resultfile.Config
	// Units are the progress line's units of work (see Hooks.Total).
	Units int
	// Progress is where the progress line is drawn when it is a
	// terminal; nil draws none.
	Progress io.Writer
	// Lines, if set, prefixes the lines Hooks.Logf and, off a terminal,
	// Hooks.Finished print on Progress: "reproduce 003".
	Lines string
	// Measure runs the experiment and returns every record it made, in
	// order (those it gave h too), and with an error what it made before.
	// It may print what it measured: a whole file is written after it.
	Measure func(ctx context.Context, h *Hooks) ([]*benchfmt.Result, error)
}

// Outcome is what Run made.
type Outcome struct {
	// Records are the run's: a resumed file's first, then Measure's.
	Records []*benchfmt.Result
	// Path is the file that holds them: Output.Path, or the file beside
	// it that a whole run or an unfinished StreamPartial one went to; ""
	// where none was written.
	Path string
	// Interrupted says the run's context was cancelled (SIGINT) and
	// what it finished was kept: a run whose file could not be written
	// is failed.
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

// Interrupted is the error of a run interrupted after its command kept
// and printed what finished: headspace exits 130 (128+SIGINT) with
// "interrupted" and Kept. It is context.Canceled (errors.Is).
type Interrupted struct {
	// Kept says what the output holds: "the table shows the runs
	// finished before it"; "" says nothing more.
	Kept string
}

func (e Interrupted) Error() string {
	if e.Kept == "" {
		return "interrupted"
	}
	return "interrupted: " + e.Kept
}

// Unwrap makes an Interrupted error context.Canceled.
func (e Interrupted) Unwrap() error { return context.Canceled }

// Run runs job with its result file at out: it checks out before anything
// is measured (Check: resultfile.ErrRefused, exit 2), opens a streamed
// file, draws the progress line while Measure runs, then writes a whole
// file of the records, if any and not saved as they are (Hooks.Save),
// under out's Force and Beside. A run whose context was cancelled (Measure's error is context.Canceled)
// is interrupted, not failed: what it finished is kept (a streamed file
// holds it; a whole one is written marked partial; a StreamPartial one
// stays partial), Outcome.Interrupted says so, and Run returns Measure's
// error, which a command returns or, once it has printed what finished,
// replaces with Outcome.Err. A failed run writes no whole file; a
// failed write fails the run, interrupted or not.
func Run(ctx context.Context, job Job, out Output) (o Outcome, err error) {
	if err := Check(out); err != nil {
		return o, err
	}
	h := &Hooks{file: &file{}, w: job.Progress, lines: job.Lines, bar: progress.For(job.Progress, job.Units)}
	defer h.Finish()
	rf, err := openRunFile(ctx, job, out, h)
	if err != nil {
		return o, err
	}
	defer rf.close()
	o.Records = rf.resumed // a resumed file's records first
	recs, err := job.Measure(ctx, h)
	h.Finish()
	o.Records = append(o.Records, recs...)
	o.Interrupted = errors.Is(err, context.Canceled)
	if err != nil && !o.Interrupted && job.File == Stream {
		// A failed run's file holds what finished: not a whole run's.
		return o, errors.Join(err, h.file.markPartial())
	}
	if err != nil && !o.Interrupted || out.Path == "" {
		return o, err
	}
	var werr error
	o.Path, werr = rf.keep(job, out, h, recs, o.Interrupted)
	o.Interrupted = o.Interrupted && werr == nil
	return o, cmp.Or(werr, err)
}

// runFile is a run's result file as Run opens it, before Measure.
type runFile struct {
	stream  *file              // a streamed file (Stream, StreamPartial)
	p       *partial           // a StreamPartial file
	held    *resultwrite.File  // a whole file's path, locked while the run measures
	saved   []*benchfmt.Result // the records Hooks.Save wrote
	resumed []*benchfmt.Result // a resumed streamed file's records
}

// openRunFile opens out's file as job.File says and gives it to h: a
// streamed file (resumed unless out.Fresh), a StreamPartial one, or a
// whole file's path, locked, with Hooks.Save writing it. Without a path
// it opens nothing.
func openRunFile(ctx context.Context, job Job, out Output, h *Hooks) (*runFile, error) {
	rf := &runFile{}
	var err error
	switch {
	case out.Path == "":
	case job.File == Stream:
		if rf.stream, err = open(ctx, out, job.Settings()); err != nil {
			return nil, err
		}
		h.file = rf.stream
		if !out.Fresh {
			rf.resumed, _ = resultfile.Read(out.Path)
		}
	case job.File == StreamPartial:
		if rf.p, err = openPartial(ctx, out, job.Settings()); err != nil {
			return nil, err
		}
		rf.stream, h.file = rf.p.file, rf.p.file
	default:
		// The file's lock is held while the run measures: a second run
		// of the same file is refused before it measures anything.
		if rf.held, err = resultwrite.OpenFresh(out.Path, nil); err != nil {
			return nil, err
		}
		h.save = func(recs []*benchfmt.Result) error {
			_, err := write(out, job.Settings(), recs, h.partial.Load(), rf.held)
			rf.saved = recs
			return err
		}
	}
	return rf, nil
}

// close releases the file's write lock.
func (rf *runFile) close() {
	if rf.stream != nil {
		rf.stream.Close()
	}
	if rf.held != nil {
		rf.held.Close()
	}
}

// keep leaves the file of a run that made recs, interrupted or not,
// as the run ended and returns its path: a streamed file marked partial
// or unmarked, a StreamPartial one completed (or left partial), a whole
// one written unless Hooks.Save wrote these records already.
func (rf *runFile) keep(job Job, out Output, h *Hooks, recs []*benchfmt.Result, interrupted bool) (string, error) {
	switch {
	case job.File == Stream && interrupted:
		// The file holds what finished, marked partial: not a whole
		// run's (history add); resuming it takes the mark off.
		return out.Path, rf.stream.markPartial()
	case job.File == Stream:
		return out.Path, rf.stream.unmark()
	case job.File == StreamPartial && interrupted:
		return rf.p.file.Path(), nil
	case job.File == StreamPartial:
		return out.Path, rf.p.complete()
	case len(recs) > 0 && !(slices.Equal(recs, rf.saved) && !interrupted):
		return write(out, job.Settings(), recs, interrupted || h.partial.Load(), rf.held)
	}
	return "", nil
}
