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
// where <machine> is MachineKey: the readable slug `headspace baseline`
// names baselines by (gate.Machine.Key: device, GPU, CPU model, cores)
// and a short hash of the full description, so that two machines whose
// slugs collide keep two series ("emulated-amd-epyc-2c-3f0c5a1e"). A
// store made before the hash keeps its folders: a folder named by the slug
// alone goes on taking its machine's runs (MachineFolder). <date> is the
// run's UTC time, 20261123T031700Z, so a listing sorts by time. The files
// are the result files as written, byte for byte, readable by all (0644
// as every output); the store adds nothing to them. Machine folders and
// run files are real folders and files: a symbolic link in their place is
// refused by Add and by Load alike.
//
// Add puts a file in. It refuses a file with no results, without a
// commit, whose header names more than one machine, with a core count
// that is not a positive whole number, dated in the future, partial
// (unless asked), already in the store (by name or by content), or whose
// setup (every configuration key but commit, date, go and partial)
// differs from the latest run of its machine's series, naming the keys: a
// series compares like with like. Adds to one machine are serialised by
// the machine's writer lock (atomicfile.WaitLock on DIR/.<machine>.lock),
// so that the setup check and the write are one step. The copy is atomic
// and never replaces a file: it is written under a temporary name and
// hard-linked into place, which fails if another writer got there first.
// The setup and duplicate checks read the folder's index (index.go), not
// every earlier run, so an add costs the same in a store of a year of
// nights as in an empty one; the index is checked against the folder
// and rebuilt from the files when it cannot be trusted.
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
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// DateLayout is how a run's date appears in its file name in the store.
const DateLayout = "20060102T150405Z"

// ignoredSetupKeys may differ between the runs of one series: they are
// what a history is over (commit, date), what a series should show a
// change of (the Go toolchain), what says a run is partial (which Add
// accepts only when asked, and which must not wedge the series), or what
// describes the session rather than the setup (resultfile.SessionKeys: the
// machine was busy when the run began, which the gate reads, the run's
// date and run time; none is the series' definition).
var ignoredSetupKeys = append([]string{"commit", "go", PartialKey}, resultfile.SessionKeys...)

// buildKeys say what build made a run: the platform and the toolchain.
// Each holds one value through a run file; one that changes half-way
// (a file of two builds' results joined) is refused.
var buildKeys = []string{"goos", "goarch", "go"}

// PartialKey is the configuration key of a partial run: an interrupted
// run's "partial: true", a partial merge's list of the points it lacks.
const PartialKey = "partial"

// MaxFutureSkew is how far past now a run's date may be (clocks differ a
// little between machines); a later date is refused, since it would be
// the latest night for ever.
const MaxFutureSkew = 10 * time.Minute

// StoreMode is the permission of a run file in the store: that of every
// other output (atomicfile), readable by the other users of a shared
// machine.
const StoreMode = 0o644

// MachineKey is machine m's folder in a store: m.Key(), the readable slug
// `headspace baseline` uses, then "-" and the first 8 hex digits of the
// SHA-256 of the full description (device, GPU, CPU, cores, separated by
// NUL), so that descriptions whose slugs collide (two CPU names of
// non-ASCII letters only, "Intel" and "intel") keep apart:
// "emulated-amd-epyc-2c-3f0c5a1e". Empty when m names no machine.
func MachineKey(m gate.Machine) string {
	k := m.Key()
	if k == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(m.Device + "\x00" + m.GPU + "\x00" + m.CPU + "\x00" + m.Cores))
	return k + "-" + hex.EncodeToString(sum[:4])
}

// MachineFolder is the folder of machine m in the store in dir: its
// MachineKey, unless the store predates those keys and holds m's runs
// under m.Key() alone (a legacy folder whose latest run records exactly
// m, and no MachineKey folder): then that legacy folder, so that an
// existing store goes on as it was (rename the folder to the MachineKey
// to migrate it). A legacy folder of another description (a slug
// collision) is left alone.
func MachineFolder(dir string, m gate.Machine) (string, error) {
	key := MachineKey(m)
	if key == "" {
		return "", errors.New("the machine records no device or cpu")
	}
	if _, err := os.Lstat(filepath.Join(dir, key)); err == nil {
		return key, nil
	}
	legacy := m.Key()
	idx, _, err := readIndex(dir, legacy)
	if err != nil {
		return "", err
	}
	if last, ok := idx.latestRun(dir, legacy); ok && last.Machine == m {
		return legacy, nil
	}
	return key, nil
}

// Run is one results file in the store.
type Run struct {
	Machine gate.Machine
	Key     string    // Machine.Key(): the folder
	Commit  string    // the file's commit: line
	Date    time.Time // its date: line, else the file's modification time; UTC
	Path    string    // the file in the store
	Setup   map[string]string
	Partial bool     // the file has a partial: line
	hasDate bool     // the file records its date
	cores   []string // the file's cores: lines
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
	_, err := resultfile.Scan(path, func(res *benchfmt.Result) error {
		m := gate.MachineOf(res)
		if n == 0 {
			r.Machine = m
		} else if m != r.Machine {
			// One machine per run: filed under its first machine, the rest
			// would mix two machines' numbers in one series.
			return fmt.Errorf("%s: its header changes machine at result %d (%s, then %s): a run is one machine's; add one machine's file at a time",
				path, n+1, describe(r.Machine), describe(m))
		}
		n++
		for _, c := range res.Config {
			if !c.File {
				continue
			}
			v, vs := string(c.Value), values[c.Key]
			if len(vs) > 0 && vs[0] != v && slices.Contains(buildKeys, c.Key) {
				// One build per run: numbers of two platforms or toolchains
				// in one run would read as one build's.
				return fmt.Errorf("%s: its header changes %s at result %d (%q, then %q): a run is one build's; add one build's file at a time",
					path, c.Key, n, vs[0], v)
			}
			if !slices.Contains(vs, v) {
				values[c.Key] = append(vs, v)
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
	if r.Key = MachineKey(r.Machine); r.Key == "" {
		return r, n, fmt.Errorf("%s records no device or cpu: it names no machine", path)
	}
	r.Partial = len(values[PartialKey]) > 0
	r.cores = values["cores"]
	if err := r.commitAndDate(values); err != nil {
		return r, n, err
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

// commitAndDate sets the run's commit, which its file must name once, and
// its date: its date: line, else the file's time.
func (r *Run) commitAndDate(values map[string][]string) error {
	path := r.Path
	commits := values["commit"]
	switch len(commits) {
	case 0:
		return fmt.Errorf("%s records no commit: line: a history is over commits", path)
	case 1:
		r.Commit = commits[0]
	default:
		return fmt.Errorf("%s records %d commits (%s): add one run at a time", path, len(commits), strings.Join(commits, ", "))
	}
	if ds := values["date"]; len(ds) > 0 {
		d, err := parseDate(ds[0])
		if err != nil {
			return fmt.Errorf("%s: date: %q: %v", path, ds[0], err)
		}
		r.Date, r.hasDate = d, true
	} else {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		r.Date = fi.ModTime().UTC().Truncate(time.Second)
	}
	return nil
}

// describe is a machine as its header says it, for messages.
func describe(m gate.Machine) string {
	s := fmt.Sprintf("device %q", m.Device)
	if m.GPU != "" {
		s += fmt.Sprintf(", gpu %q", m.GPU)
	}
	return s + fmt.Sprintf(", cpu %q, cores %q", m.CPU, m.Cores)
}

// checkCores refuses a cores: line that is not a positive whole number
// (a file without one takes its benchmark names' GOMAXPROCS suffix).
func checkCores(path string, values []string) error {
	for _, v := range values {
		if c, err := strconv.Atoi(v); err != nil || c < 1 {
			return fmt.Errorf("%s: cores: %q is not a positive whole number of cores", path, v)
		}
	}
	return nil
}

// CheckDate refuses a run date later than now plus MaxFutureSkew.
func CheckDate(d, now time.Time) error {
	if d.After(now.Add(MaxFutureSkew)) {
		return fmt.Errorf("%s is in the future (now %s): a run cannot be dated later than it ran",
			d.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
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
	for _, k := range slices.Sorted(maps.Keys(keys)) {
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

// AddOptions configure Add.
type AddOptions struct {
	// Date, when not zero, is the run's date for a file that records none
	// (instead of its modification time): a backfill passes the commit's
	// date.
	Date time.Time
	// Log, when not nil, takes a line when the store's index of the
	// machine folder was missing or could not be trusted and was rebuilt
	// from the files.
	Log io.Writer
	// Partial accepts a partial file (a partial: line: an interrupted run,
	// a partial merge), which Add otherwise refuses: its missing points
	// would show as gaps, or as steps, in its machine's series.
	Partial bool
}

// Add adds the results file at path to the store in dir (created if
// missing) and returns its run, with Path in the store. See the package
// doc for what it refuses. It waits for another add to the same machine
// to finish, until ctx ends.
func Add(ctx context.Context, dir, path string, opt AddOptions) (Run, error) {
	run, err := addable(path, opt)
	if err != nil {
		return Run{}, err
	}
	data, err := atomicfile.ReadFileLimit(path, maxRunBytes)
	if err != nil {
		return Run{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Run{}, err
	}
	// One add per machine at a time: the setup check below and the write
	// are one step.
	lock, err := atomicfile.WaitLock(ctx, filepath.Join(dir, run.Key))
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w", path, err)
	}
	defer lock.Release()
	folder, err := MachineFolder(dir, run.Machine)
	if err != nil {
		return Run{}, err
	}
	run.Key = folder
	mdir := filepath.Join(dir, folder)
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	idx, err := trustedIndex(dir, folder, data, hexSum, opt)
	if err != nil {
		return Run{}, err
	}
	if err := sweepTemps(mdir); err != nil {
		return Run{}, err
	}
	if err := joins(path, run, idx, dir, folder, hexSum); err != nil {
		return Run{}, err
	}
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		return Run{}, err
	}
	target := filepath.Join(mdir, run.Name())
	if _, err := os.Lstat(target); err == nil {
		return Run{}, fmt.Errorf("%s: the store already holds a run of commit %s at %s (%s)", path, run.Commit, run.Date.Format(time.RFC3339), target)
	}
	if err := driver.Place(target, data, StoreMode); errors.Is(err, fs.ErrExist) {
		return Run{}, fmt.Errorf("%s: the store already holds %s", path, target)
	} else if err != nil {
		return Run{}, err
	}
	run.Path = target
	// The index last: a kill before this leaves a run the index lacks,
	// which the next add notices and rebuilds from.
	idx.Runs = append(idx.Runs, entryOf(run, filepath.Base(target), data))
	slices.SortStableFunc(idx.Runs, entryOrder)
	if err := writeIndex(mdir, idx); err != nil {
		return run, fmt.Errorf("%s is in the store, but its index %s was not updated (the next add rebuilds it): %v", target, filepath.Join(mdir, IndexName), err)
	}
	return run, nil
}

// joins refuses a run (read from path, of content hash hexSum) that the
// machine folder's index already holds, or whose setup differs from the
// folder's latest run.
func joins(path string, run Run, idx *index, dir, folder, hexSum string) error {
	for _, old := range idx.Runs {
		if old.SHA256 == hexSum {
			return fmt.Errorf("%s is already in the store as %s", path, filepath.Join(dir, folder, old.Name))
		}
	}
	if last, ok := idx.latestRun(dir, folder); ok {
		if d := SetupDiff(run.Setup, last.Setup); len(d) > 0 {
			return fmt.Errorf("%s: its setup differs from the series of %s (latest run %s): %s; a series compares like with like: use another store for another setup",
				path, folder, filepath.Base(last.Path), strings.Join(d, "; "))
		}
	}
	return nil
}

// addable reads the run at path and refuses what a store never takes:
// cores that are no positive number, a partial run without opt.Partial,
// a date in the future. A run with no date: line takes opt.Date.
func addable(path string, opt AddOptions) (Run, error) {
	run, _, err := inspect(path)
	if err != nil {
		return Run{}, err
	}
	if err := checkCores(path, run.cores); err != nil {
		return Run{}, err
	}
	if run.Partial && !opt.Partial {
		return Run{}, fmt.Errorf("%s is a partial run (partial: line): its missing points would read as changes in the series of its machine; complete it, or add it knowingly with --partial", path)
	}
	if !run.hasDate && !opt.Date.IsZero() {
		run.Date = opt.Date.UTC().Truncate(time.Second)
	}
	if err := CheckDate(run.Date, time.Now()); err != nil {
		return Run{}, fmt.Errorf("%s: its date %v", path, err)
	}
	return run, nil
}

// trustedIndex is what the machine folder holds, from its index, checked
// against the folder and rebuilt from the files when it cannot be trusted
// (said on opt.Log): the duplicate and setup checks read no earlier run.
// data and hexSum are the run being added and its SHA-256.
func trustedIndex(dir, folder string, data []byte, hexSum string, opt AddOptions) (*index, error) {
	mdir := filepath.Join(dir, folder)
	idx, why, err := readIndex(dir, folder)
	if err != nil {
		return idx, err
	}
	if why == "" {
		// A duplicate by the index is refused only if the file it names
		// holds this content: an index is never trusted to refuse.
		for _, old := range idx.Runs {
			if old.SHA256 != hexSum {
				continue
			}
			if od, err := atomicfile.ReadFileLimit(filepath.Join(mdir, old.Name), maxRunBytes); err != nil || !bytes.Equal(od, data) {
				why = fmt.Sprintf("%s: it records the content of %s wrongly; rebuilt it from the %d run files", filepath.Join(mdir, IndexName), old.Name, len(idx.Runs))
				if idx, err = buildIndexOf(mdir); err != nil {
					return idx, err
				}
				break
			}
		}
	}
	if why != "" {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "history: %s\n", why)
		}
		if err := writeIndex(mdir, idx); err != nil {
			return idx, fmt.Errorf("%s: %v", filepath.Join(mdir, IndexName), err)
		}
	}
	return idx, nil
}

// Machines lists the machine folders of the store, sorted. A symbolic
// link in the store's top level is listed too, for Runs to refuse.
func Machines(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if (e.IsDir() || e.Type()&fs.ModeSymlink != 0) && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// errLink refuses a symbolic link where the store holds a real folder or
// file: Add would write through it into another tree, and git keeps the
// link, not what it points to.
func errLink(path string) error {
	return fmt.Errorf("%s is a symbolic link: a history store holds real folders and files only (replace the link with what it points to)", path)
}

// Runs lists the runs of one machine folder in the store, oldest first;
// none (and no error) when the folder does not exist yet. Each run's Key
// is the folder.
func Runs(dir, machine string) ([]Run, error) {
	mdir := filepath.Join(dir, machine)
	ents, err := runFiles(mdir)
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, e := range ents {
		r, _, err := inspect(filepath.Join(mdir, e.Name()))
		if err != nil {
			return nil, err
		}
		r.Key = machine
		r.Date = nameDate(e.Name(), r.Date) // the date it was added under
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Date.Before(out[j].Date) })
	return out, nil
}
