package workloads

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Typed is an experiment whose outcome is a value of its own type R
// (issue 42; after golang.org/x/benchmarks/sweet): Measure makes R whole,
// what a command prints or draws from, the records' figures and what the
// records do not hold (a *sim.Result's timeline); Codec encodes R as the
// experiment's records and decodes it back from a result file's, so that
// a report renders R read back, never names parsed as strings. Run is
// Measure, then R's records (RunTyped), but for a long run (Ladder,
// Caching, Remote), whose MeasureEach's callback passes each record to
// env.Result as it is made, so that an interrupted run keeps what it
// finished. What a command shows as it runs is a typed callback, an
// argument of the one method that streams (MeasureEach), not a field of
// Env. Every registered experiment is Typed
// (TestCodecsOwnTheirBenchmarks).
type Typed[R any] interface {
	Experiment
	// Measure measures the experiment in env. It stops at the first
	// error, or when ctx is done, returning what it measured before.
	Measure(ctx context.Context, env Env) (R, error)
	// Codec is R's records codec.
	Codec() Codec[R]
}

// RunTyped is a typed experiment's Run: Measure, then R's records, each
// passed to env.Result. What was measured before an error is returned
// with it.
func RunTyped[R any](ctx context.Context, e Typed[R], env Env) ([]*benchfmt.Result, error) {
	r, err := e.Measure(ctx, env)
	return typedRecords(e.Codec(), r, env, err)
}

// typedRecords are r's records through codec c, each passed to
// env.Result, with err, the error of the Measure that made r: the end
// of RunTyped, and of a typed experiment's Run that decides first
// whether r holds anything to record (Tune's).
func typedRecords[R any](c Codec[R], r R, env Env, err error) ([]*benchfmt.Result, error) {
	recs := c.Encode(r)
	for _, rec := range recs {
		if rerr := env.result(rec); rerr != nil {
			return recs, rerr
		}
	}
	return recs, err
}

// Codec is the records codec of a typed experiment's outcome R: Encode
// writes R as the experiment's benchmark records, Decode reads R back
// from them, and Keys says, for each benchmark the experiment writes
// (its base name, without "Benchmark"; "WhatIf/profile" for WhatIf's
// records whose first part is the positional /profile), the keys of its
// records' names. Decode reads names through the codec's Layout
// (resultfile.Layout, with benchproc), as a script's live lines of the
// same benchmark are read, and refuses a record
// of another benchmark, or whose name lacks a key, gives one twice or
// has a part more, naming the record and the experiment: a file of
// another experiment does not decode (TestCodecsOwnTheirBenchmarks).
type Codec[R any] struct {
	// Experiment is the experiment's name, for errors.
	Experiment string
	// Keys are the name keys of each benchmark the experiment writes.
	Keys map[string][]string
	// Borrowed are benchmarks of Keys that another experiment owns, whose
	// records this one writes as that one does (WhatIf's caching ladder:
	// Ladder's records); TestCodecsOwnTheirBenchmarks lets these alone
	// be another's.
	Borrowed []string
	// Optional are keys of Keys that a record of the benchmark may lack
	// (a Node's rank records have rank=…, its node's records do not).
	Optional map[string][]string
	// Procs says the records' names end in a GOMAXPROCS suffix ("-16",
	// none at 1), read into Record.Procs; without it, a suffix is a part
	// of the name more.
	Procs bool
	// Order, where set, is the order of the benchmarks' records in a
	// run's records (Loaders' before LoadersTraining's): Decode refuses a
	// record of one before the record before it.
	Order []string
	// encode is R's records, in order.
	encode func(R) []*benchfmt.Result
	// decode is R from its records, their names read.
	decode func([]Record) (R, error)
}

// NewCodec is the codec of experiment's outcome R whose records encode
// writes, in order, and decode reads back, their names read: for an
// experiment outside this package (docs/extending.md's worked example);
// Borrowed, Optional, Procs and Order can be set on the value it returns.
func NewCodec[R any](experiment string, keys map[string][]string, encode func(R) []*benchfmt.Result, decode func([]Record) (R, error)) Codec[R] {
	return Codec[R]{Experiment: experiment, Keys: keys, encode: encode, decode: decode}
}

// Record is one benchmark record read back by a Codec: its benchmark
// (base name, without "Benchmark"), the values of its name's keys, its
// name's GOMAXPROCS (1 without a suffix; Codec.Procs), and the record.
type Record struct {
	Benchmark string
	Keys      map[string]string
	Procs     int
	*benchfmt.Result
}

// name is the record's name as its codec's Layout read it.
func (r Record) name() resultfile.Name {
	return resultfile.Name{Benchmark: r.Benchmark, Keys: r.Keys, Procs: r.Procs}
}

// Value is the record's value in unit (resultfile.Value: as written or as
// benchfmt tidied it); a record without it is an error that names both.
func (r Record) Value(unit string) (float64, error) {
	v, ok := resultfile.Value(r.Result, unit)
	if !ok {
		return 0, fmt.Errorf("%s: no value in %s", at(r.Result), unit)
	}
	return v, nil
}

// loading is a loader record's time to first batch, samples/s and CPU
// time (ttfb-ns, samples/s, cpu-s): what Loaders' and Peer's records
// both hold.
func (r Record) loading() (ttfb time.Duration, samplesPerSec float64, cpu time.Duration, err error) {
	v, err := r.valuesIn("ttfb-ns", "samples/s", "cpu-s")
	if err != nil {
		return 0, 0, 0, err
	}
	return time.Duration(math.Round(v[0])), v[1], time.Duration(math.Round(v[2] * 1e9)), nil
}

// valuesIn are r's values in units, in that order; a record without one
// is an error that names both (Value).
func (r Record) valuesIn(units ...string) ([]float64, error) {
	out := make([]float64, len(units))
	for i, unit := range units {
		v, err := r.Value(unit)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// count is the whole number r's name gives key, 0 or more (above 0 where
// positive); another is an error that names the record, the key and its
// value.
func (r Record) count(key string, positive bool) (int, error) {
	n, err := resultfile.Name{Keys: r.Keys}.Count(key, positive)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", at(r.Result), err)
	}
	return n, nil
}

// recordsOf is the record of each of runs, in order: a codec's encode.
func recordsOf[T any](runs []T, record func(T) *benchfmt.Result) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, r := range runs {
		out = append(out, record(r))
	}
	return out
}

// decodeEach is decode of each of recs, in order: a codec's decode where
// a record is a run. It stops at the first error, returning the runs
// decoded before.
func decodeEach[T any](recs []Record, decode func(Record) (T, error)) ([]T, error) {
	var out []T
	for _, r := range recs {
		v, err := decode(r)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Benchmarks are the benchmarks the codec writes, sorted.
func (c Codec[R]) Benchmarks() []string { return c.Layout().Benchmarks() }

// Encode is r's benchmark records, in the order they were measured.
func (c Codec[R]) Encode(r R) []*benchfmt.Result { return c.encode(r) }

// Decode is R read back from recs (a result file's records, in file
// order), which must all be the experiment's.
func (c Codec[R]) Decode(recs []*benchfmt.Result) (R, error) {
	var zero R
	rs, err := c.names(recs)
	if err != nil {
		return zero, err
	}
	return c.decode(rs)
}

// Layout is the layout of the codec's record names
// (resultfile.Layout), the one reader of them.
func (c Codec[R]) Layout() resultfile.Layout {
	return resultfile.Layout{Owner: c.Experiment, Keys: c.Keys, Optional: c.Optional, Procs: c.Procs}
}

// names reads the base name and keys of every record (Layout), checking
// the records' order (Order).
func (c Codec[R]) names(recs []*benchfmt.Result) ([]Record, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("no records of %s", c.Experiment)
	}
	nr := c.Layout().Reader()
	out := make([]Record, 0, len(recs))
	last := 0 // the index in Order of the record before
	for _, r := range recs {
		n, err := nr.Read(r)
		if err != nil {
			return nil, atLine(r, err)
		}
		if i := slices.Index(c.Order, n.Benchmark); i >= 0 {
			if i < last {
				return nil, fmt.Errorf("%s: a record of %s out of the order a run makes its records in (%s)", at(r), c.Experiment, strings.Join(c.Order, ", "))
			}
			last = i
		}
		out = append(out, Record{Benchmark: n.Benchmark, Keys: n.Keys, Procs: n.Procs, Result: r})
	}
	return out, nil
}

// positional is resultfile.Positional (whatifcmd.go tells a whatif --
// COMMAND file by it).
var positional = resultfile.Positional

// fullName is r's name as its file writes it: benchfmt.Reader drops the
// "Benchmark" a Run's records begin with.
func fullName(r *benchfmt.Result) string { return resultfile.FullName(r) }

// at is where r is, for an error: its file and line and its name
// ("results/node.txt:14: Node/accelerators=2/level=none-2"), its name
// alone where it was not read from a file.
func at(r *benchfmt.Result) string {
	if file, line := r.Pos(); file != "" {
		return fmt.Sprintf("%s:%d: %s", file, line, fullName(r))
	}
	return fullName(r)
}
