package workloads

import (
	"context"
	"os"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Experiment is one experiment of a document, at one size: the narrow
// interface every caller runs experiments through (`go test -bench
// ./workloads`, the headspace commands, `headspace reproduce`), after
// golang.org/x/benchmarks/sweet's common.Harness. An experiment is a
// plain struct of its specification (the values that change a number);
// Run measures it and returns benchmark-format records named
// Benchmark<Name>/…, and Settings is the configuration block its result
// file records beside them.
type Experiment interface {
	// Name is the experiment's benchmark name: "Ladder" for
	// BenchmarkLadder/… records.
	Name() string
	// Document is the ID of the document it reproduces ("003"); "" for
	// an experiment of headspace's own.
	Document() string
	// Settings is every setting that changes a number and is not in a
	// record's name: the configuration lines of its result file.
	Settings() []resultfile.Config
	// Run measures the experiment in env and returns its records, in the
	// order they were made, each also passed to env.Result (Typed says
	// when). It stops at the first error, or when ctx is done, returning
	// the records made before.
	Run(ctx context.Context, env Env) ([]*benchfmt.Result, error)
}

// Size is an experiment's size: Default, the document's, or Quick,
// every code path in seconds with no comparable numbers. Both are data
// in the Registry (At, Sized).
type Size int

// The sizes of an experiment.
const (
	Default Size = iota // the document's sizes
	Quick               // every code path in seconds, no comparable numbers
)

// Env is what an experiment takes from where it runs. The zero Env runs
// on the emulated device at the document's step.
type Env struct {
	// Device opens the device the training loops run on; the zero value
	// is the emulated device at DocumentStep (QuickDevice for Quick
	// sizes is the caller's choice).
	Device Device
	// Worker says how to start a process-mode loader worker (Loaders);
	// normally this binary's `headspace worker`, or the test binary
	// (procloader.SelfWorker).
	Worker procloader.Options
	// Rank says how to start a node's rank process (Node): normally this
	// binary's `headspace rank` (Args nil), or the test binary
	// (node.SelfRank).
	Rank procloader.Options
	// Dir is where data sets are written for a run (OnDisk); "" is the
	// system's temporary directory.
	Dir string
	// Start, if set, is called before each unit of work with its name.
	Start func(name string)
	// Tick, if set, marks a step of a unit of work done, for a run that
	// counts steps, not records (Headspace: the progress line of
	// headspace analyze).
	Tick func()
	// Partial, if set, marks the run's file partial: a run kept after
	// its command ended early (OwnLoopAnalyze.Partial).
	Partial func()
	// Result, if set, receives every record as it is made; an error
	// stops the run.
	Result func(*benchfmt.Result) error
	// Add, if set, receives the records of one unit of work together
	// (a node's ranks' and its own: one write of a streamed file, so
	// that it never holds some without the others); without it each
	// goes to Result.
	Add func(...*benchfmt.Result) error
	// Save, if set, writes a whole file's records so far, now
	// (driver.Hooks.Save): a run that keeps each of its runs on disk as
	// it ends while its file's lines are learnt on the way.
	Save func([]*benchfmt.Result) error
	// Done, if set, says how many records of a benchmark (by its name in
	// a result file, GOMAXPROCS suffix included) a resumed result file
	// already holds: an experiment that resumes (Ladder) makes only the
	// runs still missing.
	Done func(name string) int
	// Recorded, if set, asks an experiment that runs the training loop
	// (Ladder) to record the first run of each unit it runs as a
	// timeline, and receives the recorder after that run with the unit's
	// name ("Ladder/level=none/…": no "Benchmark", no GOMAXPROCS suffix;
	// Ladder.PointName).
	// An error stops the run.
	Recorded func(name string, rec *pipeline.Recorder) error
	// Record, if set, picks the units Recorded records, by the name
	// Recorded would receive; nil records every unit's first run.
	Record func(name string) bool
}

// Job binds experiment e and env to a run of the driver (driver.Run):
// its Measure is e.Run in env.Hooked. The caller sets the file's mode and
// settings and the progress line.
func Job(e Experiment, env Env) driver.Job {
	return driver.Job{Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
		return e.Run(ctx, env.Hooked(h))
	}}
}

// Hooked is env whose Start, Tick, Result and Done are the run's hooks (a
// record goes to env.Result first, if set): how a job's Measure runs an
// experiment, a typed one whose command keeps its value included.
func (env Env) Hooked(h *driver.Hooks) Env {
	each := env.Result
	env.Start, env.Tick, env.Result, env.Add, env.Save, env.Partial = h.Start, h.Tick, h.Result, h.Add, h.Save, h.Partial
	// A record marked partial (node.UnitPartial: a run kept after it
	// failed) is no finished run: a resumed run makes it again.
	env.Done = func(name string) int { return h.Done(name) - len(h.Values(name, node.UnitPartial)) }
	if each != nil {
		env.Result = func(r *benchfmt.Result) error {
			if err := each(r); err != nil {
				return err // not recorded
			}
			return h.Result(r)
		}
		env.Add = func(recs ...*benchfmt.Result) error {
			for _, r := range recs {
				if err := each(r); err != nil {
					return err // none recorded
				}
			}
			return h.Add(recs...)
		}
	}
	return env
}

// add gives recs, one unit of work's, to Add, or each to Result.
func (env Env) add(recs ...*benchfmt.Result) error {
	if env.Add != nil {
		return env.Add(recs...)
	}
	for _, r := range recs {
		if err := env.result(r); err != nil {
			return err
		}
	}
	return nil
}

// done is how many records of the benchmark name env.Done says a
// resumed file holds.
func (env Env) done(name string) int {
	if env.Done == nil {
		return 0
	}
	return env.Done(name)
}

// device is env's device, the emulated one at the document's step when
// none is set.
func (env Env) device() Device {
	if env.Device.Open == nil {
		return Emulated(DocumentDevice())
	}
	return env.Device
}

// start calls Start, if set.
func (env Env) start(name string) {
	if env.Start != nil {
		env.Start(name)
	}
}

// tick calls Tick, if set.
func (env Env) tick() {
	if env.Tick != nil {
		env.Tick()
	}
}

// partial calls Partial, if set.
func (env Env) partial() {
	if env.Partial != nil {
		env.Partial()
	}
}

// save passes recs to Save, if set.
func (env Env) save(recs []*benchfmt.Result) error {
	if env.Save == nil {
		return nil
	}
	return env.Save(recs)
}

// result passes r to Result, if set.
func (env Env) result(r *benchfmt.Result) error {
	if env.Result == nil {
		return nil
	}
	return env.Result(r)
}

// dir is the directory for data on disk.
func (env Env) dir() string {
	if env.Dir == "" {
		return os.TempDir()
	}
	return env.Dir
}
