package driver

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/internal/progress"
)

// Hooks are what a run's Measure (Job) calls as it works: they draw the
// progress line and stream records to the result file. Start, Result and
// Done are the shapes of workloads.Env's hooks. Its methods are safe for
// concurrent use, but for Total.
type Hooks struct {
	file    *file                          // the streamed file; never nil
	bar     *progress.Bar                  // silent off a terminal
	w       io.Writer                      // the progress line's, for Total and Logf
	lines   string                         // Job.Lines
	save    func([]*benchfmt.Result) error // Whole's Save; nil elsewhere
	partial atomic.Bool                    // Partial was called
}

// Start says on the progress line which unit of work runs now: the shape
// of workloads.Env.Start.
func (h *Hooks) Start(name string) { h.bar.Set(name) }

// Tick marks one unit of work done on the progress line, for a run that
// counts units other than its records (analyze's steps).
func (h *Hooks) Tick() { h.bar.Add(1) }

// Finish clears the progress line, before Measure prints (Run does so
// when Measure returns). Calling it more than once is harmless.
func (h *Hooks) Finish() { h.bar.Finish() }

// Total sets the progress line's units of work where Job.Units could not
// say them before the run (a resumed file's Done). It is called before
// the run's work starts, and restarts the line.
func (h *Hooks) Total(units int) { h.bar = progress.For(h.w, units) }

// Finished marks one unit of work done, saying what it measured: off a
// terminal, a run with Job.Lines prints it as a line (Logf).
func (h *Hooks) Finished(what string) {
	h.Tick()
	if f, ok := h.w.(*os.File); !ok || !progress.IsTerminal(f) {
		h.Logf("%s", what)
	}
}

// Logf prints a line "<Job.Lines>: <message>" below the progress line (a
// run without Job.Lines or Job.Progress prints nothing).
func (h *Hooks) Logf(format string, args ...any) {
	if h.lines != "" && h.w != nil {
		h.bar.Finish()
		fmt.Fprintf(h.w, "%s: %s\n", h.lines, fmt.Sprintf(format, args...))
	}
}

// Result takes one record as it is made: one unit on the progress line,
// then a streamed file (on disk before Result returns). The shape of
// workloads.Env.Result.
func (h *Hooks) Result(r *benchfmt.Result) error {
	h.Tick()
	return h.file.Add(r)
}

// Add takes the records of one unit of work together: one unit on the
// progress line, one write of a streamed file, so that the file never
// holds some of them without the others (a node's ranks' and its own).
func (h *Hooks) Add(records ...*benchfmt.Result) error {
	h.Tick()
	return h.file.Add(records...)
}

// Done is how many records of the benchmark name the streamed file holds,
// a resumed file's included: the shape of workloads.Env.Done.
func (h *Hooks) Done(name string) int { return h.file.Done(name) }

// Values are the streamed file's values of the benchmark name in unit, a
// resumed file's first (the ladder's table of a resumed sweep).
func (h *Hooks) Values(name, unit string) []float64 { return h.file.Values(name, unit) }

// Save writes a Whole run's records so far, now, under Job.Settings as
// they are now (marked partial after Partial): for a run that keeps each
// of its runs on disk as it ends while its settings lines are learnt on
// the way (peer --ladder). Run writes the file again at the end only if
// Measure returns other records, or was interrupted.
// Elsewhere Save does nothing: a streamed file holds the records already.
func (h *Hooks) Save(records []*benchfmt.Result) error {
	if h.save == nil {
		return nil
	}
	return h.save(records)
}

// Partial marks a Whole run's file "partial: true" though the run was not
// interrupted: what it measured ended early (analyze --partial).
func (h *Hooks) Partial() { h.partial.Store(true) }
