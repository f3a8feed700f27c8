package results

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"

	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/setting"
)

// Config is one configuration line of a results file, written as
// "key: value". Keys start with a lower-case letter and contain no
// spaces or upper-case letters (the Go benchmark format's rule); values
// are a single non-empty line. It is the neutral setting.Setting, so
// that the blocks that state settings need not import this package.
type Config = setting.Setting

// Direction says whether higher or lower values of a unit are better.
// Its values match benchfmt.UnitMetadataMap.GetBetter: +1, -1, or 0
// (NoDirection) when unknown.
type Direction int

// The directions of a unit.
const (
	LowerIsBetter  Direction = -1
	NoDirection    Direction = 0
	HigherIsBetter Direction = 1
)

// String returns "higher", "lower" or "unknown", as a Unit line's
// better= value would say it.
func (d Direction) String() string {
	switch d {
	case HigherIsBetter:
		return "higher"
	case LowerIsBetter:
		return "lower"
	}
	return "unknown"
}

// units gives the direction of the project's own units; beyond it, a
// unit that is a time ("-ns", "-ns/op", "-ns/sample") is lower-is-better
// (see tableDirection). Files written by this package carry a "Unit <unit>
// better=<higher|lower>" line for each such unit that appears in them, so
// benchstat reads the direction too; the gate falls back to the same rule
// for files without such lines. Units without a direction (other-cores,
// cores-used, queue) describe a run rather than grade it.
var units = map[string]Direction{
	"steps/s":           HigherIsBetter,
	"predicted-steps/s": HigherIsBetter,
	"samples/s":         HigherIsBetter,
	"au-%":              HigherIsBetter,
	"GB/s":              HigherIsBetter,
	"read-MB/s":         HigherIsBetter,
	"copy-MB/s":         HigherIsBetter,
	"batches":           HigherIsBetter,
	"peak-rss-B":        LowerIsBetter,
	"cpu-s":             LowerIsBetter,
	"upload-B/op":       LowerIsBetter,
	"failures":          LowerIsBetter,
	"requests/sample":   LowerIsBetter,
	"retries":           LowerIsBetter,
	"epoch-usd":         LowerIsBetter,
	"model-idle-%":      LowerIsBetter,
	// How disturbed a run was (package disturb): conditions, lower is
	// quieter; and instructions per step, where counters exist.
	"run-delay-%":     LowerIsBetter,
	"cpu-pressure-%":  LowerIsBetter,
	"reruns":          LowerIsBetter,
	"disturbed":       LowerIsBetter,
	"instructions/op": LowerIsBetter,
}

// timeSuffixes mark units of time, all lower-is-better.
var timeSuffixes = []string{"-ns", "-ns/op", "-ns/sample", "-sec", "-sec/op", "-sec/sample"}

// DirectionOf returns which way unit is better: from a better= line in
// meta (unit metadata read from files; may be nil) if there is one, else
// from the project's units (steps/s higher, any time lower, …), else from benchfmt's built-in defaults (ns/op, sec/op,
// B/op and allocs/op are lower-is-better; MB/s and B/s higher). Units
// are compared tidied, so "ns/op" and "sec/op" are one unit, as are
// "ttfb-ns" and "ttfb-sec".
func DirectionOf(unit string, meta benchfmt.UnitMetadataMap) Direction {
	if meta.Get(unit, "better") != nil {
		return Direction(meta.GetBetter(unit))
	}
	if d, ok := tableDirection(unit); ok {
		return d
	}
	return Direction(benchfmt.UnitMetadataMap(nil).GetBetter(tidy(unit)))
}

func tableDirection(unit string) (Direction, bool) {
	if d, ok := units[unit]; ok {
		return d, true
	}
	t := tidy(unit)
	for u, d := range units {
		if tidy(u) == t {
			return d, true
		}
	}
	for _, suf := range timeSuffixes {
		if strings.HasSuffix(unit, suf) || strings.HasSuffix(t, suf) {
			return LowerIsBetter, true
		}
	}
	return NoDirection, false
}

func tidy(unit string) string {
	_, t := benchunit.Tidy(1, unit)
	return t
}

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
	lock    *atomicfile.Lock // nil for a new file until its first write, and for devices

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
// second writer, in this process or another, is refused (ErrRefused)
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
func Open(path string, config []Config) (*File, error) {
	return open(context.Background(), path, config, false)
}

// OpenContext is Open whose writes into a pipe stop when ctx ends (a
// pipe with no reader is waited for, never forever).
func OpenContext(ctx context.Context, path string, config []Config) (*File, error) {
	return open(ctx, path, config, false)
}

// OpenFreshContext is OpenFresh with OpenContext's ctx.
func OpenFreshContext(ctx context.Context, path string, config []Config) (*File, error) {
	return open(ctx, path, config, true)
}

// OpenFresh is Open for a fresh start: an existing results file must be
// one (of any setup), but its results are not resumed, and it stays on
// disk, whole, until the first Add replaces it with the new results alone.
func OpenFresh(path string, config []Config) (*File, error) {
	return open(context.Background(), path, config, true)
}

func open(ctx context.Context, path string, config []Config, fresh bool) (_ *File, err error) {
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
	fi, err := os.Stat(target)
	if err != nil {
		return f, nil // new
	}
	if f.lock, err = lockFor(target); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.lock.Release()
		}
	}()
	existing, meta, err := ReadUnits(target)
	switch {
	case err != nil:
		return nil, refused("%s exists and is not a results file (%v); refusing to write over it: use another --out", path, firstLine(err))
	case len(existing) == 0 && fi.Size() > 0:
		return nil, refused("%s exists and holds no benchmark results: not a results file; refusing to write over it: use another --out", path)
	}
	if !fresh {
		for _, r := range existing {
			if diff := configDiff(r.Config, cfg); diff != "" {
				return nil, refused("%s holds results of a different setup (%s); refusing to mix them: use another --out, or --fresh to replace it", path, diff)
			}
			if have, want := commitOf(r.Config), commitOf(cfg); have != want {
				return nil, refused("%s holds results of another build (commit %q in file, now %q); refusing to put two code states in one file: use another --out, or --fresh to replace it", path, have, want)
			}
		}
		f.meta = meta
		f.results = existing
		for _, r := range existing {
			f.done[string(r.Name)]++
		}
	}
	return f, nil
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
	f.results = all
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
	return f.done[trimPrefix(name)]
}

// Values returns the file's values of the benchmark name (with or
// without the "Benchmark" prefix) in unit, in file order. unit may be the
// unit the values were added with ("ns/op") or its tidied form
// ("sec/op"); values are converted to it.
func (f *File) Values(name, unit string) []float64 {
	name = trimPrefix(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []float64
	for _, r := range f.results {
		if string(r.Name) != name {
			continue
		}
		if v, ok := Value(r, unit); ok {
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

// WriteFile atomically writes a complete results file at path: config
// lines, a Unit line for each of its units whose direction is known,
// then results. Each result's own Config is replaced by config; names
// and values are handled as by File.Add. It replaces only a results file
// of the same purpose that is not fuller than the new one (WriteFileWith
// with no options), under the file's write lock.
//
// Where WriteFileWith keeps a larger file at path and writes beside it,
// WriteFile returns an error naming both, so that a caller that prints
// path does not claim what it did not write.
func WriteFile(path string, config []Config, results []*benchfmt.Result) error {
	wrote, err := WriteFileWith(path, config, results, Replace{})
	if err == nil && wrote != path {
		err = fmt.Errorf("results: kept %s, which holds more results than this run's %d; they are in %s", path, len(results), wrote)
	}
	return err
}

// Replace says what WriteFileWith may do with an existing results file.
// Whatever it says, a file that is not a results file, or one holding
// results of other benchmarks (another command's), is never replaced.
type Replace struct {
	// Force lets a quick run (config "quick: true") or a smaller one
	// (fewer results) replace a full file.
	Force bool
	// Partial says the run was interrupted: its file carries
	// "partial: true", and a complete file already at the path is kept,
	// the partial one written beside it (Beside).
	Partial bool
}

// Beside is where a partial or smaller run's results go when a complete
// file is kept at path: "r.txt" gives "r.partial.txt" (tag "partial").
func Beside(path, tag string) string { return atomicfile.Beside(path, tag) }

// WriteFileWith is WriteFile under the rules of r, and returns the path
// it wrote: path, or Beside(path, "partial"/"smaller") when an existing
// complete file at path is kept. The rules, checked in this order:
//   - an existing file must be a results file whose benchmarks (the name
//     up to its first '/') are all among the new results' (ErrRefused);
//   - a quick run replaces a full one only with Force (ErrRefused; check
//     it before measuring with CheckReplace);
//   - a partial run never replaces a complete file: it goes beside it;
//   - a smaller run (fewer results) goes beside a complete file unless
//     Force.
func WriteFileWith(path string, config []Config, results []*benchfmt.Result, r Replace) (string, error) {
	if r.Partial {
		config = append(config[:len(config):len(config)], Config{Key: "partial", Value: "true"})
	}
	var bases []string
	for _, res := range results {
		bases = append(bases, Base(string(res.Name)))
	}
	if err := CheckReplace(path, Purpose{Benchmarks: bases, Quick: isQuick(config), Force: r.Force}); err != nil {
		return "", err
	}
	// Hold path's lock even when writing beside it: one writer per file.
	held, err := OpenFresh(path, config)
	if err != nil {
		return "", err
	}
	defer held.Close()
	target := path
	if prev, err := Summarize(path); err == nil && prev.Results > 0 && !prev.Partial {
		switch {
		case r.Partial:
			target = Beside(path, "partial")
		case len(results) < prev.Results && !r.Force:
			target = Beside(path, "smaller")
		}
		if target != path {
			if err := CheckReplace(target, Purpose{Benchmarks: bases, Quick: isQuick(config), Force: true}); err != nil {
				return "", err
			}
		}
	}
	f := held
	if target != path {
		if f, err = OpenFresh(target, config); err != nil {
			return "", err
		}
		defer f.Close()
	}
	cfg := f.config
	all := make([]*benchfmt.Result, 0, len(results))
	for _, r := range results {
		c, err := normalize(r, cfg)
		if err != nil {
			return "", fmt.Errorf("results: %s: %w", target, err)
		}
		all = append(all, c)
	}
	if f.inPlace {
		if err := f.stream(all); err != nil {
			return "", fmt.Errorf("results: writing %s: %w", target, err)
		}
		return target, nil
	}
	if err := f.lockNew(); err != nil {
		return "", err
	}
	return target, writeAtomic(target, all, nil)
}

// Purpose is what a whole-file writer is about to write, for
// CheckReplace: the benchmarks (names up to the first '/', without
// "Benchmark") it records, whether the run is quick, and --force.
type Purpose struct {
	Benchmarks []string
	Quick      bool
	Force      bool
}

// Base is a benchmark name's first element without "Benchmark":
// "BenchmarkLadder/level=raw" gives "Ladder".
func Base(name string) string {
	b, _, _ := strings.Cut(trimPrefix(name), "/")
	if i := strings.LastIndexByte(b, '-'); i > 0 && strings.Trim(b[i+1:], "0123456789") == "" {
		b = b[:i] // a GOMAXPROCS suffix
	}
	return b
}

// Summary describes an existing results file for the replace rules.
type Summary struct {
	Results    int
	Benchmarks map[string]bool // Base of every result's name
	Quick      bool            // a result recorded "quick: true"
	Partial    bool            // a result recorded "partial: true"
}

// Summarize reads the results file at path (a regular file, never a
// pipe or device) for the replace rules.
func Summarize(path string) (Summary, error) {
	s := Summary{Benchmarks: map[string]bool{}}
	f, err := atomicfile.OpenRegular(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	_, err = scan(f, path, func(r *benchfmt.Result) error {
		s.Results++
		s.Benchmarks[Base(string(r.Name))] = true
		if r.GetConfig("quick") == "true" {
			s.Quick = true
		}
		if r.GetConfig("partial") == "true" {
			s.Partial = true
		}
		return nil
	})
	return s, err
}

// CheckReplace says, before anything is measured, whether a whole-file
// writer of purpose p may write path (ErrRefused if not): it must be
// writable; an existing file must be a results file (or empty, or a
// device or pipe), hold only p's benchmarks when p names them, and a
// quick run may replace a full one only with Force.
func CheckReplace(path string, p Purpose) error {
	if err := atomicfile.Check(path); err != nil {
		return refused("%v", err)
	}
	if atomicfile.InPlace(path) {
		return nil
	}
	target, err := atomicfile.Target(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	if err != nil || fi.Size() == 0 {
		return nil
	}
	s, err := Summarize(target)
	switch {
	case err != nil:
		return refused("%s exists and is not a results file (%v); refusing to write over it: use another --out", path, firstLine(err))
	case s.Results == 0:
		return refused("%s exists and holds no benchmark results: not a results file; refusing to write over it: use another --out", path)
	}
	if len(p.Benchmarks) > 0 {
		want := map[string]bool{}
		for _, b := range p.Benchmarks {
			want[b] = true
		}
		for b := range s.Benchmarks {
			if !want[b] {
				return refused("%s holds results of Benchmark%s, which this command does not write; refusing to replace them: use another --out", path, b)
			}
		}
	}
	if p.Quick && !s.Quick && !s.Partial && !p.Force {
		return refused("%s holds a full run's results; a quick run does not replace them without --force", path)
	}
	return nil
}

// isQuick says whether config records "quick: true".
func isQuick(config []Config) bool {
	for _, c := range config {
		if c.Key == "quick" && c.Value == "true" {
			return true
		}
	}
	return false
}

// fileConfig checks config and converts it to benchfmt file configuration.
func fileConfig(config []Config) ([]benchfmt.Config, error) {
	out := make([]benchfmt.Config, 0, len(config))
	seen := map[string]bool{}
	for _, c := range config {
		if err := checkKey(c.Key); err != nil {
			return nil, err
		}
		if seen[c.Key] {
			return nil, fmt.Errorf("config key %q given twice", c.Key)
		}
		seen[c.Key] = true
		v := c.Value
		if v == "" || strings.ContainsAny(v, "\r\n") || v[0] == ' ' || v[0] == '\t' {
			return nil, fmt.Errorf("config %s: value %q must be one non-empty line not starting with a space", c.Key, v)
		}
		out = append(out, benchfmt.Config{Key: c.Key, Value: []byte(v), File: true})
	}
	return out, nil
}

// checkKey enforces the Go benchmark format's rule for configuration keys.
func checkKey(k string) error {
	for i, r := range k {
		if i == 0 && !unicode.IsLower(r) || unicode.IsSpace(r) || unicode.IsUpper(r) || r == ':' {
			return fmt.Errorf("config key %q must start with a lower-case letter and hold no spaces, colons or upper-case letters", k)
		}
	}
	if k == "" {
		return errors.New("empty config key")
	}
	return nil
}

// configDiff describes how have (a result's configuration read from the
// file) differs from want, ignoring "commit"; "" if it does not.
// BusyKey is the configuration line of a run taken on a machine that
// never got quiet before it (package disturb's wait ended at its bound):
// "machine-busy: cpu pressure 37% after waiting 30s". It describes the
// session, not the setup, so a resumed file may differ in it.
const BusyKey = "machine-busy"

func configDiff(have, want []benchfmt.Config) string {
	var diffs []string
	h := map[string]string{}
	for _, c := range have {
		if c.File {
			h[c.Key] = string(c.Value)
		}
	}
	w := map[string]bool{}
	for _, c := range want {
		w[c.Key] = true
		if c.Key == "commit" || c.Key == BusyKey {
			continue
		}
		hv, ok := h[c.Key]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: not in file, now %q", c.Key, c.Value))
		case hv != string(c.Value):
			diffs = append(diffs, fmt.Sprintf("%s: %q in file, now %q", c.Key, hv, c.Value))
		}
	}
	var extra []string
	for k := range h {
		if !w[k] && k != "commit" && k != BusyKey {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		diffs = append(diffs, fmt.Sprintf("%s: %q in file, not set now", k, h[k]))
	}
	return strings.Join(diffs, "; ")
}

// commitOf is the "commit" key's value in a configuration, or "".
func commitOf(cfg []benchfmt.Config) string {
	for _, c := range cfg {
		if c.File && c.Key == "commit" {
			return string(c.Value)
		}
	}
	return ""
}

// trimPrefix returns a benchmark name without its "Benchmark" prefix.
func trimPrefix(name string) string { return strings.TrimPrefix(name, "Benchmark") }

// normalize checks r and returns a copy with the name's "Benchmark"
// prefix dropped, config as its configuration and tidied values.
func normalize(r *benchfmt.Result, config []benchfmt.Config) (*benchfmt.Result, error) {
	if r == nil {
		return nil, errors.New("nil result")
	}
	name := trimPrefix(string(r.Name))
	switch {
	case name == "":
		return nil, fmt.Errorf("result %q: empty benchmark name", r.Name)
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		return nil, fmt.Errorf("result %q: benchmark name contains a space", r.Name)
	case r.Iters < 1:
		return nil, fmt.Errorf("result %s: iterations %d, want >= 1", r.Name, r.Iters)
	case len(r.Values) == 0:
		return nil, fmt.Errorf("result %s: no values", r.Name)
	}
	c := &benchfmt.Result{
		Name:   benchfmt.Name(name),
		Iters:  r.Iters,
		Values: make([]benchfmt.Value, 0, len(r.Values)),
		Config: make([]benchfmt.Config, len(config)),
	}
	for i, cfg := range config {
		c.Config[i] = benchfmt.Config{Key: cfg.Key, Value: bytes.Clone(cfg.Value), File: true}
	}
	for _, v := range r.Values {
		orig, origUnit := v.Value, v.Unit
		if v.OrigUnit != "" {
			orig, origUnit = v.OrigValue, v.OrigUnit
		}
		if origUnit == "" || strings.IndexFunc(origUnit, unicode.IsSpace) >= 0 {
			return nil, fmt.Errorf("result %s: unit %q must be non-empty without spaces", r.Name, origUnit)
		}
		t := TidyValue(v)
		if math.IsNaN(orig) || math.IsInf(orig, 0) || math.IsNaN(t.Value) || math.IsInf(t.Value, 0) {
			return nil, fmt.Errorf("result %s: %s value %v is not finite", r.Name, origUnit, orig)
		}
		c.Values = append(c.Values, t)
	}
	return c, nil
}

// TidyValue returns v in the form benchfmt.Reader gives values: in the
// tidied unit (sec/op for ns/op) with OrigValue and OrigUnit holding
// what was written, or as is when tidying changes nothing. Unlike the
// Reader, it tidies zero values too (the Reader leaves "0 ns/op" as
// ns/op, which would put it in a unit of its own).
// TidyValue is v in benchunit's tidy unit (ns/op as sec/op), its
// original value and unit kept, as benchfmt.Reader tidies values; the
// Reader leaves 0 ns/op untidied, and the gate and the writer compare
// and write tidy values.
func TidyValue(v benchfmt.Value) benchfmt.Value {
	orig, origUnit := v.Value, v.Unit
	if v.OrigUnit != "" {
		orig, origUnit = v.OrigValue, v.OrigUnit
	}
	tv, tu := benchunit.Tidy(orig, origUnit)
	if tu == origUnit {
		return benchfmt.Value{Value: tv, Unit: tu}
	}
	return benchfmt.Value{Value: tv, Unit: tu, OrigValue: orig, OrigUnit: origUnit}
}

// encode writes the file layout: Unit lines, then results with their
// configuration blocks, as benchfmt.Writer emits them.
func encode(w io.Writer, results []*benchfmt.Result, meta benchfmt.UnitMetadataMap) error {
	bw := benchfmt.NewWriter(w)
	seen := map[string]bool{}
	wrote := false
	for _, r := range results {
		for _, v := range r.Values {
			if seen[v.Unit] {
				continue
			}
			seen[v.Unit] = true
			orig := v.Unit
			if v.OrigUnit != "" {
				orig = v.OrigUnit
			}
			for _, m := range unitLines(v.Unit, orig, meta) {
				if err := bw.Write(m); err != nil {
					return err
				}
				wrote = true
			}
		}
	}
	if wrote {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	for _, r := range results {
		if err := bw.Write(r); err != nil {
			return err
		}
	}
	return nil
}

// unitLines returns the metadata to write for a (tidied) unit first
// written as orig: what meta (read from the file being rewritten) holds
// for it, and a better= line from Units where meta has none.
func unitLines(unit, orig string, meta benchfmt.UnitMetadataMap) []*benchfmt.UnitMetadata {
	var out []*benchfmt.UnitMetadata
	for k, m := range meta {
		if k.Unit == unit {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if meta.Get(unit, "better") == nil {
		if d, ok := tableDirection(orig); ok && d != NoDirection {
			out = append(out, &benchfmt.UnitMetadata{
				UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: unit, Key: "better"},
				OrigUnit:        orig,
				Value:           d.String(),
			})
		}
	}
	return out
}

// writeAtomic writes the file at path whole through atomicfile, so
// readers see the old or the new file whole; on error path is untouched.
func writeAtomic(path string, results []*benchfmt.Result, meta benchfmt.UnitMetadataMap) error {
	err := atomicfile.Write(path, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		if err := encode(bw, results, meta); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// BenchName is the full benchmark name `go test -bench` prints for the
// (sub-)benchmark name ("Ladder/level=raw/…") at GOMAXPROCS procs:
// "Benchmark" before it and "-procs" after it unless procs is 1, so that
// records written by the commands and by `go test` group together in
// benchstat. Every record headspace writes is named through it.
func BenchName(name string, procs int) string {
	name = "Benchmark" + name
	if procs != 1 {
		name += "-" + strconv.Itoa(procs)
	}
	return name
}
