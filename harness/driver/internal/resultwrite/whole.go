package resultwrite

// A results file written whole, and the rules for replacing one.

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

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
func WriteFile(path string, config []resultfile.Config, results []*benchfmt.Result) error {
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
	// Held, if set, is path opened (OpenFresh) by the writer, which
	// holds its lock while it measures: the file is written under it.
	Held *File
}

// WriteFileWith is WriteFile under the rules of r, and returns the path
// it wrote: path, or resultfile.Beside(path, "partial"/"smaller") when an existing
// complete file at path is kept. The rules, checked in this order:
//   - an existing file must be a results file whose benchmarks (the name
//     up to its first '/') are all among the new results' (resultfile.ErrRefused);
//   - a quick run replaces a full one only with Force (resultfile.ErrRefused; check
//     it before measuring with CheckReplace);
//   - a partial run never replaces a complete file: it goes beside it;
//   - a smaller run (fewer results) goes beside a complete file unless
//     Force.
func WriteFileWith(path string, config []resultfile.Config, results []*benchfmt.Result, r Replace) (string, error) {
	if r.Partial {
		config = append(config[:len(config):len(config)], resultfile.Config{Key: "partial", Value: "true"})
	}
	var bases []string
	for _, res := range results {
		bases = append(bases, Base(string(res.Name)))
	}
	if err := CheckReplace(path, Purpose{Benchmarks: bases, Quick: isQuick(config), Force: r.Force}); err != nil {
		return "", err
	}
	// Hold path's lock even when writing beside it: one writer per file.
	held := r.Held
	if held == nil {
		var err error
		if held, err = OpenFresh(path, config); err != nil {
			return "", err
		}
		defer held.Close()
	} else if err := held.configure(config); err != nil {
		return "", err
	}
	target, err := replaceTarget(path, len(results), r, Purpose{Benchmarks: bases, Quick: isQuick(config), Force: true})
	if err != nil {
		return "", err
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

// replaceTarget is where WriteFileWith writes a run of n results under
// r: path, or beside it (resultfile.Beside) where a complete file at path
// is kept, a file there checked for p (CheckReplace).
func replaceTarget(path string, n int, r Replace, p Purpose) (string, error) {
	prev, err := Summarize(path)
	if err != nil || prev.Results == 0 || prev.Partial {
		return path, nil
	}
	var target string
	switch {
	case r.Partial:
		target = resultfile.Beside(path, "partial")
	case n < prev.Results && !r.Force:
		target = resultfile.Beside(path, "smaller")
	default:
		return path, nil
	}
	return target, CheckReplace(target, p)
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
	b, _, _ := strings.Cut(strings.TrimPrefix(name, "Benchmark"), "/")
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
	_, err := resultfile.Scan(path, func(r *benchfmt.Result) error {
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
// writer of purpose p may write path (resultfile.ErrRefused if not): it must be
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
func isQuick(config []resultfile.Config) bool {
	for _, c := range config {
		if c.Key == "quick" && c.Value == "true" {
			return true
		}
	}
	return false
}
