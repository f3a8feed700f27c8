package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/progress"
)

// Hooks are what a run's Measure (Job) calls as it works: they draw the
// progress line and stream records to the result file. Start, Result and
// Done are the shapes of workloads.Env's hooks. Its methods are safe for
// concurrent use, but for Total.
type Hooks struct {
	file        *File         // the streamed file; never nil
	bar         *progress.Bar // nil: no progress line
	w           io.Writer     // the progress line's, for Total and Logf
	lines       string        // Job.Lines: a line per finished unit off a terminal
	each        func(*benchfmt.Result) error
	save        func([]*benchfmt.Result) error // Whole's Save; nil elsewhere
	mu          sync.Mutex
	partial     bool // Partial was called
	interrupted bool
}

// Start says on the progress line which unit of work runs now: the shape
// of workloads.Env.Start.
func (h *Hooks) Start(name string) {
	if h.bar != nil {
		h.bar.Set(name)
	}
}

// Tick marks one unit of work done on the progress line, for a run that
// counts units other than its records (analyze's steps).
func (h *Hooks) Tick() {
	if h.bar != nil {
		h.bar.Add(1)
	}
}

// Finished marks one unit of work done, saying what it measured: off a
// terminal, a run with Job.Lines prints it as a line (Logf).
func (h *Hooks) Finished(what string) {
	h.Tick()
	if h.lines != "" && h.w != nil && !onTerminal(h.w) {
		h.Logf("%s", what)
	}
}

// Logf prints a line "<Job.Lines>: <message>" on the progress line's
// writer, below the progress line (a run without Job.Lines prints
// nothing).
func (h *Hooks) Logf(format string, args ...any) {
	if h.lines == "" || h.w == nil {
		return
	}
	if h.bar != nil {
		h.bar.Finish()
	}
	fmt.Fprintf(h.w, "%s: %s\n", h.lines, fmt.Sprintf(format, args...))
}

// Total sets the progress line's units of work, where Job.Units could
// not say them before the run (a resumed file's Done). It is called
// before the run's work starts, and restarts the line.
func (h *Hooks) Total(units int) {
	if h.bar != nil {
		h.bar = progress.For(h.w, units)
	}
}

// Result takes one record as it is made: one unit on the progress line,
// then a streamed file (on disk before Result returns). The shape of
// workloads.Env.Result.
func (h *Hooks) Result(r *benchfmt.Result) error {
	h.Tick()
	if h.each != nil {
		if err := h.each(r); err != nil {
			return err
		}
	}
	return h.file.Add(r)
}

// Add takes the records of one unit of work together: one unit on the
// progress line, one write of a streamed file, so that the file never
// holds some of them without the others (a node's ranks' and its own).
func (h *Hooks) Add(records ...*benchfmt.Result) error {
	h.Tick()
	if len(records) == 0 {
		return nil
	}
	return h.file.Add(records...)
}

// Done is how many records of the benchmark name the streamed file holds,
// a resumed file's included: the shape of workloads.Env.Done.
func (h *Hooks) Done(name string) int { return h.file.Done(name) }

// Values are the streamed file's values of the benchmark name in unit, a
// resumed file's first.
func (h *Hooks) Values(name, unit string) []float64 { return h.file.Values(name, unit) }

// Save writes the records measured so far whole, now (marked partial
// after Partial), under the Job's Settings as they are now, for a Whole run that keeps every run on disk
// as it finishes while its settings lines are learnt on the way (peer
// --ladder). The file Run writes at the end replaces it. Elsewhere Save
// does nothing: a streamed file holds the records already.
func (h *Hooks) Save(records []*benchfmt.Result) error {
	if h.save == nil {
		return nil
	}
	return h.save(records)
}

// Partial marks a Whole run's file "partial: true" though it was not
// interrupted: the run it measured ended early (analyze --partial of a
// command that stopped).
func (h *Hooks) Partial() {
	h.mu.Lock()
	h.partial = true
	h.mu.Unlock()
}

// isPartial says Partial was called.
func (h *Hooks) isPartial() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.partial
}

// onTerminal says w is a terminal.
func onTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && progress.IsTerminal(f)
}

// The rest of Hooks is the Session API of the commands not on Run yet
// (ladder, remote, whatif and whatif --node, which other changes are
// converting): Begin, Finish, End, Interrupted, Write and Err. It goes
// once they call Run.

// Begin starts a run streaming to file (nil: the run keeps no streamed
// file) and drawing a progress line of total units on progress when it
// is a terminal (nil: no line). each, if set, receives every record
// first; its error stops the run. Only for the commands not on Run yet.
func Begin(file *File, progressTo io.Writer, total int, each func(*benchfmt.Result) error) *Hooks {
	if file == nil {
		file = &File{}
	}
	h := &Hooks{file: file, each: each, w: progressTo}
	if progressTo != nil {
		h.bar = progress.For(progressTo, total)
	}
	return h
}

// Finish clears the progress line; End does so too. Calling it more than
// once is harmless.
func (h *Hooks) Finish() {
	if h.bar != nil {
		h.bar.Finish()
	}
}

// End ends the run with its error: it clears the progress line and
// returns err unless the run was interrupted (err is context.Canceled),
// in which case it returns nil and Interrupted says so: the command
// prints and keeps what finished, then returns Err. Only for the
// commands not on Run yet.
func (h *Hooks) End(err error) error {
	h.Finish()
	if err != nil && errors.Is(err, context.Canceled) {
		h.interrupted = true
		return nil
	}
	return err
}

// Interrupted says End was given an interrupted run's error.
func (h *Hooks) Interrupted() bool { return h.interrupted }

// Write writes the run's records whole to out (Write), marked partial
// when the run was interrupted. Only for the commands not on Run yet.
func (h *Hooks) Write(out Output, settings []resultfile.Config, records []*benchfmt.Result) (string, error) {
	return Write(out, settings, records, h.interrupted)
}

// Err is what the command returns once it has printed the run: nil for a
// run that finished, and for an interrupted one Interrupted{Kept: kept},
// kept saying what of it the output shows.
func (h *Hooks) Err(kept string) error {
	return Outcome{Interrupted: h.interrupted}.Err(kept)
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
