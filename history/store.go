// Package history remembers benchmark results across commits and
// machines, finds where each metric changed, and publishes it as one page.
//
// # The store
//
// A store is a folder of Go benchmark-format files, one per run, kept in
// git (see docs/history.md for why a folder committed beside the code):
//
//	DIR/<machine>/<date>-<commit>.txt
//
// where <machine> is the key `headspace baseline` names baselines by
// (gate.Machine.Key: device, GPU, CPU model, cores, e.g.
// "emulated-amd-epyc-2c") and <date> is the run's UTC time,
// 20261123T031700Z, so a listing sorts by time. The files are the result
// files as written, byte for byte; the store adds nothing to them.
//
// Add puts a file in. It refuses a file with no results, without a
// commit, already in the store (by name or by content), or whose setup
// (every configuration key but commit, date and go) differs from the
// latest run of its machine's series, naming the keys: a series compares
// like with like. The copy is atomic and never replaces a file: it is
// written under a temporary name and hard-linked into place, which fails
// if another writer got there first.
//
// # The report
//
// Load reads a store into series, one per machine × benchmark × unit,
// each point a run's median with its 95% confidence interval (package
// summary, as benchstat), and finds change points in each series
// (package changepoint). WriteText, WriteMarkdown and WritePage render
// them.
package history

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/blocks/results"
	"github.com/headspace-bench/headspace/harness/engines/gate"
)

// DateLayout is how a run's date appears in its file name in the store.
const DateLayout = "20060102T150405Z"

// ignoredSetupKeys may differ between the runs of one series: they are
// what a history is over (commit, date) or what a series should show a
// change of (the Go toolchain).
var ignoredSetupKeys = []string{"commit", "date", "go"}

// Run is one results file in the store.
type Run struct {
	Machine gate.Machine
	Key     string    // Machine.Key(): the folder
	Commit  string    // the file's commit: line
	Date    time.Time // its date: line, else the file's modification time; UTC
	Path    string    // the file in the store
	Setup   map[string]string
	hasDate bool // the file records its date
}

// Name is the run's file name in the store: <date>-<commit>.txt.
func (r Run) Name() string {
	return r.Date.UTC().Format(DateLayout) + "-" + slugCommit(r.Commit) + ".txt"
}

// slugCommit keeps a commit usable as part of a file name.
func slugCommit(c string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, c)
}

// inspect reads what the store needs to know about the results file at
// path: its machine, commit, date and setup. The setup is every file
// configuration key but those of ignoredSetupKeys and the machine's own,
// with the values a file holds joined by ", " when there are several.
func inspect(path string) (Run, int, error) {
	r := Run{Path: path, Setup: map[string]string{}}
	values := map[string][]string{}
	n := 0
	_, err := results.Scan(path, func(res *benchfmt.Result) error {
		if n == 0 {
			r.Machine = gate.MachineOf(res)
		}
		n++
		for _, c := range res.Config {
			if !c.File {
				continue
			}
			if v := string(c.Value); !slices.Contains(values[c.Key], v) {
				values[c.Key] = append(values[c.Key], v)
			}
		}
		return nil
	})
	if err != nil {
		return r, 0, err
	}
	if n == 0 {
		return r, 0, fmt.Errorf("%s holds no benchmark results", path)
	}
	if r.Key = r.Machine.Key(); r.Key == "" {
		return r, n, fmt.Errorf("%s records no device or cpu: it names no machine", path)
	}
	commits := values["commit"]
	switch len(commits) {
	case 0:
		return r, n, fmt.Errorf("%s records no commit: line: a history is over commits", path)
	case 1:
		r.Commit = commits[0]
	default:
		return r, n, fmt.Errorf("%s records %d commits (%s): add one run at a time", path, len(commits), strings.Join(commits, ", "))
	}
	if ds := values["date"]; len(ds) > 0 {
		d, err := parseDate(ds[0])
		if err != nil {
			return r, n, fmt.Errorf("%s: date: %q: %v", path, ds[0], err)
		}
		r.Date, r.hasDate = d, true
	} else {
		fi, err := os.Stat(path)
		if err != nil {
			return r, n, err
		}
		r.Date = fi.ModTime().UTC().Truncate(time.Second)
	}
	for k, vs := range values {
		if slices.Contains(ignoredSetupKeys, k) || slices.Contains(gate.MachineKeys, k) {
			continue
		}
		slices.Sort(vs)
		r.Setup[k] = strings.Join(vs, ", ")
	}
	return r, n, nil
}

func parseDate(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, "2006-01-02 15:04 UTC", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02", DateLayout} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("not a date (want RFC 3339, e.g. 2026-11-23T03:17:00Z)")
}

// SetupDiff describes the setup keys whose values differ between a file's
// setup a and its series' setup b, as `key: this file "x", the series "y"`
// ("not set" for a key one lacks), sorted by key.
func SetupDiff(a, b map[string]string) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		va, oka := a[k]
		vb, okb := b[k]
		if oka && okb && va == vb {
			continue
		}
		show := func(v string, ok bool) string {
			if !ok {
				return "not set"
			}
			return fmt.Sprintf("%q", v)
		}
		out = append(out, fmt.Sprintf("%s: this file %s, the series %s", k, show(va, oka), show(vb, okb)))
	}
	return out
}

// Add adds the results file at path to the store in dir (created if
// missing) and returns its run, with Path in the store. See the package
// doc for what it refuses. date, when not zero, is the run's date for a
// file that records none (instead of its modification time): a backfill
// passes the commit's date.
func Add(dir, path string, date time.Time) (Run, error) {
	run, _, err := inspect(path)
	if err != nil {
		return Run{}, err
	}
	if !run.hasDate && !date.IsZero() {
		run.Date = date.UTC().Truncate(time.Second)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Run{}, err
	}
	series, err := Runs(dir, run.Key)
	if err != nil {
		return Run{}, err
	}
	sum := sha256.Sum256(data)
	for _, old := range series {
		od, err := os.ReadFile(old.Path)
		if err != nil {
			return Run{}, err
		}
		if sha256.Sum256(od) == sum {
			return Run{}, fmt.Errorf("%s is already in the store as %s", path, old.Path)
		}
	}
	if len(series) > 0 {
		last := series[len(series)-1]
		if d := SetupDiff(run.Setup, last.Setup); len(d) > 0 {
			return Run{}, fmt.Errorf("%s: its setup differs from the series of %s (latest run %s): %s; a series compares like with like: use another store for another setup",
				path, run.Key, filepath.Base(last.Path), strings.Join(d, "; "))
		}
	}
	mdir := filepath.Join(dir, run.Key)
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		return Run{}, err
	}
	target := filepath.Join(mdir, run.Name())
	if _, err := os.Lstat(target); err == nil {
		return Run{}, fmt.Errorf("%s: the store already holds a run of commit %s at %s (%s)", path, run.Commit, run.Date.Format(time.RFC3339), target)
	}
	tmp, err := os.CreateTemp(mdir, ".add-*.tmp")
	if err != nil {
		return Run{}, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return Run{}, fmt.Errorf("%s: %v", target, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return Run{}, fmt.Errorf("%s: %v", target, err)
	}
	if err := tmp.Close(); err != nil {
		return Run{}, fmt.Errorf("%s: %v", target, err)
	}
	// A hard link never replaces: if another add got there first, it fails.
	if err := os.Link(tmp.Name(), target); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Run{}, fmt.Errorf("%s: the store already holds %s", path, target)
		}
		return Run{}, fmt.Errorf("%s: %v", target, err)
	}
	run.Path = target
	return run, nil
}

// Machines lists the machine folders of the store, sorted.
func Machines(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Runs lists the runs of one machine in the store, oldest first; none
// (and no error) when the machine has no folder yet.
func Runs(dir, machine string) ([]Run, error) {
	mdir := filepath.Join(dir, machine)
	ents, err := os.ReadDir(mdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".txt") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(mdir, e.Name())
		r, _, err := inspect(p)
		if err != nil {
			return nil, err
		}
		if name, _, _ := strings.Cut(e.Name(), "-"); len(name) == len(DateLayout) {
			if d, err := time.Parse(DateLayout, name); err == nil {
				r.Date = d // the store's name is the date it was added under
			}
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Date.Before(out[j].Date) })
	return out, nil
}
