// Package driver owns a run's result file: it is the one way headspace
// writes one. Every command, `headspace reproduce` and the engines hand
// their records to it. Its writer, package resultwrite, is internal to
// it, so the compiler refuses any other package that would write a
// result file (issue 42; a test walking the module's source did so
// before).
//
// Run is the one runner (issue 42, "One runner"): a Job is an
// experiment's run as a command makes it (its Measure, the file's
// settings, its progress line), and Run checks the output before
// anything is measured, opens or writes the file, draws the progress
// line and tells an interrupted run (its context cancelled: SIGINT)
// from a failed one, keeping what it finished; Outcome.Err is then the
// Interrupted error that exits 130. A command is its flags, a Job and
// what it prints. Hooks are what Measure calls as it works.
//
// A result file is written in one of three ways (Mode), chosen by the
// run, not by the caller's taste:
//
//   - streamed (Stream): every record is on disk, the whole file
//     rewritten atomically, before Hooks.Result returns, so a run killed
//     at any instant loses nothing it reported. An existing file of the
//     same setup and build is resumed (Hooks.Done says how many records
//     of each benchmark it holds, so the run makes only the missing
//     ones), or, with Output.Fresh, replaced by the first new record.
//     The ladder and node stream: their runs are long. StreamPartial
//     streams a fresh run marked partial until it completes, beside a
//     complete file it keeps whole until then (remote's --out).
//   - whole (Whole): the records of a finished (or interrupted) run are
//     written once, under the replace rules of resultwrite.WriteFileWith: a
//     quick run does not replace a full one without Output.Force, an
//     interrupted run's file says "partial: true" and goes beside a
//     complete one, a smaller run goes beside a larger one. Commands
//     whose runs are short, or whose settings lines are known only after
//     the run (whatif's report, analyze's device), write whole; the peer
//     ladder, whose settings lines are the peer's, learnt on the way,
//     writes its whole file after every run too (Hooks.Save).
//   - placed (Place): the bytes of a whole result file made elsewhere,
//     checked to read as one, written as they are and never over a file:
//     how the history store files a run and its generator a night.
//
// The first two hold the file's write lock while they write it, refuse a file that
// is not a results file or holds other benchmarks' results (Check, before
// anything is measured), and write the same bytes for the same records
// and settings: the format is package resultfile's.
package driver

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver/internal/resultwrite"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// Output is where a run's result file goes: what a command's --out,
// --fresh and --force flags say.
type Output struct {
	// Path is the file; "" keeps no file (a run records nothing).
	Path string
	// Benchmarks are the benchmarks the file is for (names without
	// "Benchmark", up to the first '/': "Ladder"). Check refuses an
	// existing file holding others (another command's results).
	Benchmarks []string
	// Fresh starts a streamed file over instead of resuming it: an
	// existing results file stays whole until the first new record
	// replaces it.
	Fresh bool
	// Force lets a whole file of a quick or smaller run replace a full or
	// larger one.
	Force bool
	// Beside lets a whole file of a partial or smaller run go beside a
	// complete one it keeps (Outcome.Path names it); without it the
	// write fails naming both, so that a caller printing Path never
	// claims a file it did not write.
	Beside bool
}

// Settings is a result file's configuration lines: the machine's
// (machine.Environment of device: goos, cpu, commit, …), then each group
// of the run's settings in order.
func Settings(device string, groups ...[]resultfile.Config) []resultfile.Config {
	out := machine.Environment(device)
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// Check says, before anything is measured, whether out may be written
// (resultfile.ErrRefused, exit 2, if not): the path is writable; an existing
// file is a results file holding only out's benchmarks, that a quick run
// would not replace without Force, and that no other run is writing.
func Check(out Output) error {
	if out.Path == "" {
		return nil
	}
	if err := resultwrite.CheckReplace(out.Path, resultwrite.Purpose{Benchmarks: out.Benchmarks, Force: out.Force}); err != nil {
		return err
	}
	f, err := resultwrite.OpenFresh(out.Path, nil) // tries the write lock
	if err != nil {
		return err
	}
	return f.Close()
}

// CheckReplace says, before anything is measured, whether a whole file
// of a run (quick or not) may replace what is at path: the replace rules
// of Run's whole files, without trying the write lock or the folder (a run that
// makes the folder later checks before it exists).
func CheckReplace(path string, quick, force bool) error {
	return resultwrite.CheckReplace(path, resultwrite.Purpose{Quick: quick, Force: force})
}

// write writes a whole result file of records recorded under settings
// to out and returns the path it wrote: out.Path, or with out.Beside the
// file beside it where a complete or larger one is kept there
// (resultfile.Beside). partial says the run was interrupted: the file
// records "partial: true" and never replaces a complete one. held, if
// set, is out.Path opened by the run, whose lock it holds. Without a
// path it writes nothing and returns "".
func write(out Output, settings []resultfile.Config, records []*benchfmt.Result, partial bool, held *resultwrite.File) (string, error) {
	if out.Path == "" {
		return "", nil
	}
	wrote, err := resultwrite.WriteFileWith(out.Path, settings, records, resultwrite.Replace{Force: out.Force, Partial: partial, Held: held})
	if err == nil && wrote != out.Path && !out.Beside {
		err = fmt.Errorf("results: kept %s, which holds more results than this run's %d; they are in %s", out.Path, len(records), wrote)
	}
	return wrote, err
}

// Copy copies the result file src to dst byte for byte, atomically and
// under the output policy (dst, if there, must be a results file; a
// quick or smaller file may replace it: the copy is the same run's): how
// a rebuild into another folder carries a run's file along. src must
// read as a results file; copying a file onto itself does nothing.
func Copy(src, dst string) error {
	if sa, errA := os.Stat(src); errA == nil {
		if sb, errB := os.Stat(dst); errB == nil && os.SameFile(sa, sb) {
			return nil
		}
	}
	if _, err := resultfile.Read(src); err != nil {
		return err
	}
	b, err := atomicfile.ReadFileLimit(src, 1<<30)
	if err != nil {
		return err
	}
	if err := resultwrite.CheckReplace(dst, resultwrite.Purpose{Force: true}); err != nil {
		return err
	}
	return atomicfile.WriteBytes(dst, b)
}

// file is a streamed result file, from open to Close. Its methods are
// safe for concurrent use.
type file struct {
	f *resultwrite.File // nil without a path
}

// open opens out's file for streaming records measured under settings,
// and holds its write lock until Close. An existing file is resumed
// unless out.Fresh (resultwrite.OpenContext, resultwrite.OpenFreshContext: a
// file of another setup or build is refused); writes into a pipe stop
// when ctx ends. Without a path the file records nothing.
func open(ctx context.Context, out Output, settings []resultfile.Config) (*file, error) {
	if out.Path == "" {
		return &file{}, nil
	}
	opener := resultwrite.OpenContext
	if out.Fresh {
		opener = resultwrite.OpenFreshContext
	}
	f, err := opener(ctx, out.Path, settings)
	if err != nil {
		return nil, err
	}
	return &file{f: f}, nil
}

// Add writes records to the file before it returns (the whole file,
// atomically); no records, no write.
func (r *file) Add(records ...*benchfmt.Result) error {
	if r.f == nil || len(records) == 0 {
		return nil
	}
	return r.f.Add(records...)
}

// Done is how many records of the benchmark name (with or without
// "Benchmark") the file holds, a resumed file's included.
func (r *file) Done(name string) int {
	if r.f == nil {
		return 0
	}
	return r.f.Done(name)
}

// Values are the file's values of the benchmark name in unit, a resumed
// file's first.
func (r *file) Values(name, unit string) []float64 {
	if r.f == nil {
		return nil
	}
	return r.f.Values(name, unit)
}

// Path is the file's path, "" without one.
func (r *file) Path() string {
	if r.f == nil {
		return ""
	}
	return r.f.Path()
}

// markPartial marks the file's records partial (an interrupted run's
// file), unmark takes a resumed file's mark off (a run that finished).
func (r *file) markPartial() error {
	if r.f == nil {
		return nil
	}
	return r.f.MarkPartial()
}

func (r *file) unmark() error {
	if r.f == nil {
		return nil
	}
	return r.f.Unmark()
}

// Close releases the file's write lock; every record Add returned for is
// on disk already. Closing twice is harmless.
func (r *file) Close() error {
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}
