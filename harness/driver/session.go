package driver

import (
	"context"
	"errors"
	"io"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/progress"
)

// Session is one run of an experiment as a command makes it, from Begin
// to End: the one place the run meets its result file, its progress line
// and an interrupt, so that a command is its flags, a Session and what it
// prints.
//
// Its Start, Result and Done are the shapes of workloads.Env's hooks:
// Result hands each record to the command's own use of it (a printed
// line, the table's values), counts it on the progress line and streams
// it to the file (Run.Add), so it is on disk before the run goes on; Done
// is the resumed file's count. End sorts the run's error: a run whose
// context ended (SIGINT, SIGTERM: context.Canceled) is interrupted, not
// failed: what it finished is kept (a streamed file holds it already;
// Session.Write writes a whole file marked partial, beside a complete
// one) and printed by the command, which then returns Err, the
// Interrupted error that exits 130.
type Session struct {
	file        *Run
	bar         *progress.Bar // nil: no progress line
	each        func(*benchfmt.Result) error
	interrupted bool
}

// Begin starts a session streaming to file (nil: the run keeps no
// streamed file) and drawing a progress line of total units on progress
// when it is a terminal (nil: no line). each, if set, receives every
// record first; its error stops the run.
func Begin(file *Run, progressTo io.Writer, total int, each func(*benchfmt.Result) error) *Session {
	if file == nil {
		file = &Run{}
	}
	s := &Session{file: file, each: each}
	if progressTo != nil {
		s.bar = progress.For(progressTo, total)
	}
	return s
}

// Start says on the progress line which unit of work runs now: the shape
// of workloads.Env.Start.
func (s *Session) Start(name string) {
	if s.bar != nil {
		s.bar.Set(name)
	}
}

// Tick marks one unit of work done on the progress line, for a run that
// counts units other than its records (analyze's steps).
func (s *Session) Tick() {
	if s.bar != nil {
		s.bar.Add(1)
	}
}

// Result takes one record as it is made: the command's own use of it,
// one unit on the progress line, then the file (on disk before Result
// returns). The shape of workloads.Env.Result.
func (s *Session) Result(r *benchfmt.Result) error {
	s.Tick()
	if s.each != nil {
		if err := s.each(r); err != nil {
			return err
		}
	}
	return s.file.Add(r)
}

// Done is how many records of the benchmark name the streamed file holds,
// a resumed file's included: the shape of workloads.Env.Done.
func (s *Session) Done(name string) int { return s.file.Done(name) }

// Finish clears the progress line; End does so too. Calling it more than
// once is harmless.
func (s *Session) Finish() {
	if s.bar != nil {
		s.bar.Finish()
	}
}

// End ends the run with its error: it clears the progress line and
// returns err unless the run was interrupted (err is context.Canceled),
// in which case it returns nil and Interrupted says so: the command
// prints and keeps what finished, then returns Err.
func (s *Session) End(err error) error {
	s.Finish()
	if err != nil && errors.Is(err, context.Canceled) {
		s.interrupted = true
		return nil
	}
	return err
}

// Interrupted says End was given an interrupted run's error.
func (s *Session) Interrupted() bool { return s.interrupted }

// Write writes the run's records whole to out (Write), marked partial
// when the run was interrupted.
func (s *Session) Write(out Output, settings []resultfile.Config, records []*benchfmt.Result) (string, error) {
	return Write(out, settings, records, s.interrupted)
}

// Err is what the command returns once it has printed the run: nil for a
// run that finished, and for an interrupted one Interrupted{Kept: kept},
// kept saying what of it the output shows.
func (s *Session) Err(kept string) error {
	if !s.interrupted {
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
