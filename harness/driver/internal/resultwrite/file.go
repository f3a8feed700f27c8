package resultwrite

// A results file streamed and resumed: File.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// File is a results file being written by a sweep, one result at a time.
// Every Add rewrites the whole file atomically, so a sweep killed at any
// point leaves either the previous or the new complete file, never a
// torn one, and loses no result that Add had returned for. Reopening the
// file with Open resumes it: Done tells how many results each benchmark
// already has.
//
// A File is safe for concurrent use, and holds the file's write lock from
// Open (or its first write, for a new file) to Close, so two sweeps
// cannot write one file and lose each other's results.
type File struct {
	mu      sync.Mutex
	path    string
	config  []benchfmt.Config // this session's configuration, File set
	meta    benchfmt.UnitMetadataMap
	results []*benchfmt.Result
	done    map[string]int   // by name without the "Benchmark" prefix
	lock    *atomicfile.Lock // nil for devices, and once closed

	// marked says the file on disk carries "partial: true" (MarkPartial,
	// or a resumed file of an interrupted run) that its results do not.
	marked bool

	// A target written in place (a pipe, a device, /dev/stdout) is
	// streamed: opened once, each Add writing only its own results.
	inPlace bool
	ctx     context.Context
	out     *os.File
	bw      *benchfmt.Writer
	buf     *bufio.Writer
	units   map[string]bool
}

// Open opens the results file at path for appending results that were
// measured under config, and holds the file's write lock until Close: a
// second writer, in this process or another, is refused (resultfile.ErrRefused)
// with the holder's process id. An existing file is read, so its results
// are kept and counted by Done; it must be a results file (it parses
// cleanly and holds at least one result: Open refuses anything else, a
// source file, an image, an empty file's neighbour), and every result in
// it must have been recorded with the same configuration as config except
// for the "commit" key, or Open refuses, naming the keys that differ,
// rather than mix results from different machines or setups; and it must
// have been recorded by the same build, its "commit" the same as
// config's (machine.Environment names the binary's revision, and a
// dirty tree's with a hash of it), or Open refuses, naming both, rather
// than label two code states with one commit. A symbolic
// link is followed; a device node or pipe (such as /dev/null) is written
// in place and never read. Nothing is written until the first Add.
func Open(path string, config []resultfile.Config) (*File, error) {
	return open(context.Background(), path, config, false)
}

// OpenContext is Open whose writes into a pipe stop when ctx ends (a
// pipe with no reader is waited for, never forever).
func OpenContext(ctx context.Context, path string, config []resultfile.Config) (*File, error) {
	return open(ctx, path, config, false)
}

// OpenFreshContext is OpenFresh with OpenContext's ctx.
func OpenFreshContext(ctx context.Context, path string, config []resultfile.Config) (*File, error) {
	return open(ctx, path, config, true)
}

// OpenFresh is Open for a fresh start: an existing results file must be
// one (of any setup), but its results are not resumed, and it stays on
// disk, whole, until the first Add replaces it with the new results alone.
func OpenFresh(path string, config []resultfile.Config) (*File, error) {
	return open(context.Background(), path, config, true)
}

func open(ctx context.Context, path string, config []resultfile.Config, fresh bool) (_ *File, err error) {
	cfg, err := fileConfig(config)
	if err != nil {
		return nil, fmt.Errorf("results: %s: %w", path, err)
	}
	if err := atomicfile.Check(path); err != nil {
		return nil, refused("%v", err)
	}
	target, err := atomicfile.Target(path)
	if err != nil {
		return nil, err
	}
	f := &File{path: path, config: cfg, done: map[string]int{}, ctx: ctx}
	if atomicfile.InPlace(path) {
		f.inPlace = true
		return f, nil // a device or pipe: nothing to resume or lock
	}
	// The lock is taken before anything is measured, a new file's too:
	// two runs writing one file would measure against each other, and
	// one of them be thrown away at its first write.
	if f.lock, err = lockFor(target); err != nil {
		return nil, err
	}
	fi, err := os.Stat(target)
	if err != nil {
		return f, nil // new
	}
	defer func() {
		if err != nil {
			f.lock.Release()
		}
	}()
	existing, meta, err := resultfile.ReadUnits(target)
	switch {
	case err != nil:
		return nil, refused("%s exists and is not a results file (%v); refusing to write over it: use another --out", path, firstLine(err))
	case len(existing) == 0 && fi.Size() > 0:
		return nil, refused("%s exists and holds no benchmark results: not a results file; refusing to write over it: use another --out", path)
	}
	if !fresh {
		if err := f.resume(existing, meta); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// resume takes existing, the results of the file on disk, to be written
// again with the new ones: each must be of f's setup and build (or it is
// refused); a partial mark on them goes with the next write (Unmark).
func (f *File) resume(existing []*benchfmt.Result, meta benchfmt.UnitMetadataMap) error {
	for _, r := range existing {
		// A file an interrupted run marked partial (MarkPartial) is
		// resumed: the mark goes with the next write (Unmark).
		if r.GetConfig(partialKey) != "" {
			r.SetConfig(partialKey, "")
			f.marked = true
		}
		if diff := configDiff(r.Config, f.config); diff != "" {
			return refused("%s holds results of a different setup (%s); refusing to mix them: use another --out, or --fresh to replace it", f.path, diff)
		}
		if have, want := commitOf(r.Config), commitOf(f.config); have != want {
			return refused("%s holds results of another build (commit %q in file, now %q); refusing to put two code states in one file: use another --out, or --fresh to replace it", f.path, have, want)
		}
	}
	f.meta = meta
	f.results = existing
	for _, r := range existing {
		f.done[string(r.Name)]++
	}
	return nil
}

// firstLine is err's message up to its first line break.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// Close releases the file's write lock. The file on disk holds every
// result Add returned for; Close writes nothing.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lock
	f.lock = nil
	var err error
	if f.out != nil {
		err = f.out.Close()
		f.out = nil
	}
	return errors.Join(err, l.Release())
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// partialKey is the configuration line of an interrupted run's file.
const partialKey = "partial"

// MarkPartial rewrites the file with every result marked "partial:
// true": its run was interrupted, and the file is not a whole run's
// (history add, the gate and merge read the mark). Resuming the file
// (Open) takes the mark off with its next write; a file in place, or
// with no results, is left as it is.
func (f *File) MarkPartial() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inPlace || len(f.results) == 0 {
		return nil
	}
	marked := make([]*benchfmt.Result, len(f.results))
	for i, r := range f.results {
		marked[i] = r.Clone()
		marked[i].SetConfig(partialKey, "true")
		for j := range marked[i].Config {
			if marked[i].Config[j].Key == partialKey {
				marked[i].Config[j].File = true // a line of the file
			}
		}
	}
	if err := writeAtomic(f.path, marked, f.meta); err != nil {
		return err
	}
	f.marked = true
	return nil
}

// Unmark rewrites a file marked partial (a resumed one whose run then
// finished with nothing left to add) without the mark.
func (f *File) Unmark() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.marked || f.inPlace || len(f.results) == 0 {
		return nil
	}
	if err := writeAtomic(f.path, f.results, f.meta); err != nil {
		return err
	}
	f.marked = false
	return nil
}

// configure sets the configuration the file's results are recorded
// under: a whole file's, known once its run has ended.
func (f *File) configure(config []resultfile.Config) error {
	cfg, err := fileConfig(config)
	if err != nil {
		return fmt.Errorf("results: %s: %w", f.path, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.config = cfg
	return nil
}

// Add appends results, recorded under the File's configuration, and
// rewrites the whole file atomically before returning. Each result's
// Name may include the "Benchmark" prefix, as `go test` prints it
// ("BenchmarkLadder/level=raw/workers=4"), or omit it, as
// benchfmt.Reader returns it; its own Config is ignored. Values are
// tidied as benchfmt.Reader would (ns/op is held as sec/op) but written
// in the caller's units. Results must have a name without spaces,
// Iters >= 1, and at least one value, each with a unit without spaces
// and a finite number.
//
// If writing fails, Add returns the error and the File and the file on
// disk are as they were before the call.
func (f *File) Add(results ...*benchfmt.Result) error {
	add := make([]*benchfmt.Result, 0, len(results))
	for _, r := range results {
		c, err := normalize(r, f.config)
		if err != nil {
			return fmt.Errorf("results: %s: %w", f.path, err)
		}
		add = append(add, c)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inPlace {
		if err := f.stream(add); err != nil {
			return fmt.Errorf("results: writing %s: %w", f.path, err)
		}
		f.results = append(f.results, add...)
		for _, r := range add {
			f.done[string(r.Name)]++
		}
		return nil
	}
	if err := f.lockNew(); err != nil {
		return err
	}
	all := append(f.results[:len(f.results):len(f.results)], add...)
	if err := writeAtomic(f.path, all, f.meta); err != nil {
		return err
	}
	f.results, f.marked = all, false
	for _, r := range add {
		f.done[string(r.Name)]++
	}
	return nil
}

// stream writes add to a target written in place, opening it on the
// first call: Unit lines for units not seen yet, then the results.
func (f *File) stream(add []*benchfmt.Result) error {
	if f.out == nil {
		out, err := atomicfile.OpenInPlace(f.ctx, f.path)
		if err != nil {
			return err
		}
		f.out, f.buf, f.units = out, bufio.NewWriter(out), map[string]bool{}
		f.bw = benchfmt.NewWriter(f.buf)
	}
	for _, r := range add {
		for _, v := range r.Values {
			if f.units[v.Unit] {
				continue
			}
			f.units[v.Unit] = true
			orig := v.Unit
			if v.OrigUnit != "" {
				orig = v.OrigUnit
			}
			for _, m := range unitLines(v.Unit, orig, f.meta) {
				if err := f.bw.Write(m); err != nil {
					return err
				}
			}
		}
		if err := f.bw.Write(r); err != nil {
			return err
		}
	}
	return f.buf.Flush()
}

// lockNew takes the write lock of a file that did not exist at Open, and
// refuses if one appeared meanwhile (another writer's).
func (f *File) lockNew() error {
	if f.lock != nil {
		return nil
	}
	target, err := atomicfile.Target(f.path)
	if err != nil {
		return err
	}
	if _, err := os.Stat(target); err == nil {
		return refused("%s appeared while this run measured (another writer?); refusing to write over it", f.path)
	}
	l, err := lockFor(target)
	if err != nil {
		return err
	}
	f.lock = l
	return nil
}

// Done returns how many results the file holds for the benchmark name,
// with or without the "Benchmark" prefix.
func (f *File) Done(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done[strings.TrimPrefix(name, "Benchmark")]
}

// Values returns the file's values of the benchmark name (with or
// without the "Benchmark" prefix) in unit, in file order. unit may be the
// unit the values were added with ("ns/op") or its tidied form
// ("sec/op"); values are converted to it.
func (f *File) Values(name, unit string) []float64 {
	name = strings.TrimPrefix(name, "Benchmark")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []float64
	for _, r := range f.results {
		if string(r.Name) != name {
			continue
		}
		if v, ok := resultfile.Value(r, unit); ok {
			out = append(out, v)
		}
	}
	return out
}

// Results returns copies of the file's results, existing ones first, in
// the order they were recorded.
func (f *File) Results() []*benchfmt.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*benchfmt.Result, len(f.results))
	for i, r := range f.results {
		out[i] = r.Clone()
	}
	return out
}
