package gate

// Canaries: the paired gate measured on itself. A canary is a paired
// session whose answer is known: an A/A session (the same code on both
// sides; every failure is false) or a session whose head is made slower
// on purpose (the headspace_inject build tag; every pass is a miss). The
// nightly runs one of each and files them in the history; ci/aa-paired.sh
// runs many. CanaryRates turns every canary ever run into the gate's
// false-failure rate and its power, each with its Clopper–Pearson
// interval, so docs/gate.md quotes a command's output, not a hand-kept
// table.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchfmt"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// CanaryBenchmark is the benchmark name of a canary record: one result
// "GateCanary/slowdown=S" with the units CanaryFailed (1 when the gate
// failed, exit 1), CanaryRerun (1 when it asked for a rerun, exit 3),
// CanaryNotSure (1 when that rerun was for a verdict metric not sure;
// records written before issue 52 lack it, and their gate passed such a
// session) and "rounds".
const CanaryBenchmark = "GateCanary"

// canaryLayout is the names of canary records,
// GateCanary/slowdown=FRACTION with a GOMAXPROCS suffix (CanaryRecord
// writes them; readCanaryRecords reads them through it).
var canaryLayout = resultfile.Layout{Owner: "the gate's canaries", Keys: map[string][]string{CanaryBenchmark: {"slowdown"}}, Procs: true}

// The canary record's units.
const (
	CanaryFailed  = "failed"
	CanaryRerun   = "rerun"
	CanaryNotSure = "not-sure"
)

// CanaryFile is the canary record's file in a session's folder.
const CanaryFile = "canary.txt"

// Canary is one canary session's outcome.
type Canary struct {
	// Slowdown is the head's injected slowdown (0.10 for 10%); 0 for an
	// A/A session.
	Slowdown float64
	// Failed: the gate exited 1; Rerun: it exited 3; NotSure: it exited
	// 3 because a verdict metric was not sure.
	Failed, Rerun, NotSure bool
	// File is the file it was read from.
	File string
	// Copies counts the times the same session was met again and not
	// counted: its file reached by another path (given twice, under two
	// paths, through a link), or a copy of its record (the store keeps
	// the session folder's canary.txt).
	Copies int
	// id is the session's identity: its file's real path and row for a
	// sessions.tsv line, its record's configuration, name and values for
	// a canary record.
	id string
	// real is the real path of the file it was read from.
	real string
}

// CanaryRecord is the result record of a finished session o run as a
// canary with the given slowdown.
func CanaryRecord(slowdown float64, o Outcome) *benchfmt.Result {
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	return &benchfmt.Result{
		Name:  benchfmt.Name(fmt.Sprintf("%s/slowdown=%s", CanaryBenchmark, strconv.FormatFloat(slowdown, 'f', -1, 64))),
		Iters: 1,
		Values: []benchfmt.Value{
			{Value: b2f(o.Failed()), Unit: CanaryFailed},
			{Value: b2f(o.Rerun()), Unit: CanaryRerun},
			{Value: b2f(o.Unsure()), Unit: CanaryNotSure},
			{Value: float64(len(o.Rounds)), Unit: "rounds"},
		},
	}
}

// ReadCanaries finds every canary under paths (files or folders, walked;
// a path given as a link is followed): canary records in result files
// (CanaryBenchmark), and the sessions ci/aa-paired.sh lists in a
// sessions.tsv (columns session, slowdown "aa" or a fraction,
// paired_exit, and not_sure where present). Each session counts once: a file met again by another
// path (the same path twice, a folder and a path under it, a link) is
// read once, and a record met again in another file (a copy: the store
// keeps a session's canary.txt) is the same session; Canary.Copies
// counts them. Paths that hold none between them are an error naming
// them.
func ReadCanaries(paths ...string) ([]Canary, error) {
	cr := canaryReader{at: map[string]int{}, read: map[string]bool{}}
	for _, p := range paths {
		if err := cr.walk(p); err != nil {
			return nil, err
		}
	}
	if len(cr.out) == 0 {
		return nil, fmt.Errorf("%s: no canary session (no %s record, no ci/aa-paired.sh sessions.tsv)", strings.Join(paths, ", "), CanaryBenchmark)
	}
	return cr.out, nil
}

// canaryReader gathers ReadCanaries' canaries, each session once.
type canaryReader struct {
	out  []Canary
	at   map[string]int  // session identity → index in out
	read map[string]bool // real paths of the files read
}

// walk reads every canary file under root, a file or a folder (a root
// given as a link is followed).
func (cr *canaryReader) walk(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 && path == root {
			// The path given is a link: take what it names.
			fi, err := os.Stat(path)
			if err != nil {
				return err
			}
			d = fs.FileInfoToDirEntry(fi)
		}
		if !d.Type().IsRegular() || !(d.Name() == "sessions.tsv" || strings.HasSuffix(d.Name(), ".txt")) {
			return nil
		}
		return cr.readFile(path, d.Name())
	})
}

// readFile reads the canaries of the file at path, named name, once by
// its real path: met again, every session in it counts as a copy.
func (cr *canaryReader) readFile(path, name string) error {
	real, err := realPath(path)
	if err != nil {
		return err
	}
	if cr.read[real] {
		// Counted already: every session in it is a copy.
		for _, i := range cr.at {
			if cr.out[i].real == real {
				cr.out[i].Copies++
			}
		}
		return nil
	}
	cr.read[real] = true
	var cs []Canary
	if name == "sessions.tsv" {
		cs, err = readSessionsTSV(path)
	} else {
		cs, err = readCanaryRecords(path)
	}
	for i := range cs {
		cs[i].real = real
	}
	cr.add(cs)
	return err
}

// add keeps the canaries not met before and counts the others as copies.
func (cr *canaryReader) add(cs []Canary) {
	for _, c := range cs {
		if i, ok := cr.at[c.id]; ok {
			cr.out[i].Copies++
			continue
		}
		cr.at[c.id] = len(cr.out)
		cr.out = append(cr.out, c)
	}
}

// realPath is path made absolute with its links resolved: the file it
// names, however it is spelled.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// readCanaryRecords reads the canary records of a result file; a file
// that names none is not read further.
func readCanaryRecords(path string) ([]Canary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(b, []byte("Benchmark"+CanaryBenchmark+"/")) {
		return nil, nil
	}
	rs, err := resultfile.Read(path)
	if err != nil {
		return nil, err
	}
	var out []Canary
	names := canaryLayout.Reader()
	for _, r := range rs {
		_, line := r.Pos()
		n, err := names.Read(r)
		if errors.Is(err, resultfile.ErrNotOurs) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		slowdown, err := strconv.ParseFloat(n.Keys["slowdown"], 64)
		if err != nil || !finite(slowdown) || slowdown < 0 {
			return nil, fmt.Errorf("%s:%d: %s: want %s/slowdown=FRACTION", path, line, r.Name, CanaryBenchmark)
		}
		c := Canary{Slowdown: slowdown, File: path, id: recordID(r)}
		for unit, to := range map[string]*bool{CanaryFailed: &c.Failed, CanaryRerun: &c.Rerun} {
			v, err := outcomeValue(r, unit)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %v", path, line, r.Name, err)
			}
			*to = v
		}
		if c.NotSure, err = optionalOutcome(r, CanaryNotSure); err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %v", path, line, r.Name, err)
		}
		switch {
		case c.Failed && c.Rerun:
			return nil, fmt.Errorf("%s:%d: %s: failed 1 and rerun 1: a session fails or is rerun, not both", path, line, r.Name)
		case c.NotSure && !c.Rerun:
			return nil, fmt.Errorf("%s:%d: %s: not-sure 1 without rerun 1: a session not sure is rerun", path, line, r.Name)
		}
		out = append(out, c)
	}
	return out, nil
}

// outcomeValue is a canary record's value of unit (failed or rerun),
// which must be there once and be 0 or 1: a record without it, or with
// NaN or -1, is no outcome, and must not count as a pass.
func outcomeValue(r *benchfmt.Result, unit string) (bool, error) {
	n, val := 0, 0.0
	for _, v := range r.Values {
		if v.Unit == unit {
			n, val = n+1, v.Value
		}
	}
	switch {
	case n == 0:
		return false, fmt.Errorf("no %s value: want %s 0 or 1", unit, unit)
	case n > 1:
		return false, fmt.Errorf("%d %s values: want one, 0 or 1", n, unit)
	case val != 0 && val != 1:
		return false, fmt.Errorf("%s %v: want 0 or 1", unit, val)
	}
	return val == 1, nil
}

// optionalOutcome is outcomeValue for a unit older records lack: false
// where it is absent.
func optionalOutcome(r *benchfmt.Result, unit string) (bool, error) {
	if _, ok := resultfile.Value(r, unit); !ok {
		return false, nil
	}
	return outcomeValue(r, unit)
}

// recordID is a canary record's identity: its configuration, name and
// values. Two nights' records differ in their date and commit; a copy of
// one (the store's of a session folder's canary.txt) does not.
func recordID(r *benchfmt.Result) string {
	var b strings.Builder
	for _, c := range r.Config {
		fmt.Fprintf(&b, "%s\x00%s\x00", c.Key, c.Value)
	}
	fmt.Fprintf(&b, "%s\x00%d", r.Name, r.Iters)
	for _, v := range r.Values {
		fmt.Fprintf(&b, "\x00%v %s", v.Value, v.Unit)
	}
	return b.String()
}

// finite says whether a slowdown read from a file is a number: ParseFloat
// takes "NaN" and "Inf", and a NaN slowdown is a key no map finds again
// (CanaryRates would fail on it).
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// readSessionsTSV reads ci/aa-paired.sh's table of sessions.
func readSessionsTSV(path string) ([]Canary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var col map[string]int
	var out []Canary
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), "\t")
		if col == nil {
			col = map[string]int{}
			for i, name := range fields {
				col[name] = i
			}
			for _, need := range []string{"session", "slowdown", "paired_exit"} {
				if _, ok := col[need]; !ok {
					return nil, fmt.Errorf("%s: no %q column: not a ci/aa-paired.sh sessions table", path, need)
				}
			}
			continue
		}
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(fields) {
				return fields[i]
			}
			return ""
		}
		c := Canary{File: path, id: fmt.Sprintf("%s\x00%d", path, line)}
		if s := get("slowdown"); s != "aa" {
			c.Slowdown, err = strconv.ParseFloat(s, 64)
			if err != nil || !finite(c.Slowdown) || c.Slowdown <= 0 {
				return nil, fmt.Errorf("%s:%d: slowdown %q: want aa or a fraction", path, line, s)
			}
		}
		switch e := get("paired_exit"); e {
		case "0":
		case "1":
			c.Failed = true
		case "3":
			c.Rerun = true
		default:
			return nil, fmt.Errorf("%s:%d: paired_exit %q: want 0, 1 or 3", path, line, e)
		}
		// not_sure (ci/aa-paired.sh since issue 52): 1 when the rerun was
		// for a verdict metric not sure.
		switch ns := get("not_sure"); {
		case ns == "" || ns == "0":
		case ns == "1" && c.Rerun:
			c.NotSure = true
		default:
			return nil, fmt.Errorf("%s:%d: not_sure %q: want 0, or 1 with paired_exit 3", path, line, ns)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

// CanaryRate is the gate's record at one slowdown.
type CanaryRate struct {
	// Slowdown is 0 for A/A sessions.
	Slowdown float64
	// Sessions counts the canaries; Failed those the gate failed (exit
	// 1), Rerun those it asked to rerun (exit 3, not failed), NotSure
	// those of them for a verdict metric not sure, and Passed the rest
	// (exit 0).
	Sessions, Failed, Rerun, NotSure, Passed int
	// Lo and Hi bound Failed/Sessions: the Clopper–Pearson interval at
	// Level.
	Lo, Hi, Level float64
}

// Rate is Failed/Sessions: at slowdown 0 the false-failure rate, above
// it the power (a rerun is no catch).
func (r CanaryRate) Rate() float64 { return float64(r.Failed) / float64(r.Sessions) }

// CanaryRates groups canaries by slowdown, A/A first, with each failure
// rate's Clopper–Pearson interval at level (0.95 when 0).
func CanaryRates(cs []Canary, level float64) []CanaryRate {
	if level == 0 {
		level = Confidence
	}
	by := map[float64]*CanaryRate{}
	for _, c := range cs {
		r := by[c.Slowdown]
		if r == nil {
			r = &CanaryRate{Slowdown: c.Slowdown, Level: level}
			by[c.Slowdown] = r
		}
		r.Sessions++
		if c.Failed {
			r.Failed++
		}
		if c.Rerun {
			r.Rerun++
		}
		if c.NotSure {
			r.NotSure++
		}
		if !c.Failed && !c.Rerun {
			r.Passed++
		}
	}
	out := make([]CanaryRate, 0, len(by))
	for _, k := range slices.Sorted(maps.Keys(by)) {
		r := by[k]
		r.Lo, r.Hi = ClopperPearson(r.Failed, r.Sessions, level)
		out = append(out, *r)
	}
	return out
}

// ClopperPearson is the exact (Clopper–Pearson) interval at level of a
// binomial proportion with k successes in n trials: the quantiles of
// Beta(k, n-k+1) and Beta(k+1, n-k) (gonum's stat/distuv).
func ClopperPearson(k, n int, level float64) (lo, hi float64) {
	if n <= 0 || k < 0 || k > n {
		return 0, 1
	}
	a := (1 - level) / 2
	lo, hi = 0, 1
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(a)
	}
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - a)
	}
	return lo, hi
}

// ErrNoCanaries is returned by WriteCanaryText for an empty list.
var ErrNoCanaries = errors.New("no canary sessions")

// WriteCanaryText writes the canaries' rates (CanaryRates at the 95%
// level) as a table for people: per slowdown the sessions, passes,
// failures, reruns (and those for a verdict metric not sure), the failure
// rate with its interval, and what it measures
// against the target docs/gate.md holds the gate to (false failures
// ≤ 2%; power ≥ 90% at +10%, ≥ 50% at +5%).
func WriteCanaryText(w io.Writer, cs []Canary) error {
	rates := CanaryRates(cs, 0)
	if len(rates) == 0 {
		return ErrNoCanaries
	}
	files := map[string]bool{}
	copies := 0
	for _, c := range cs {
		files[c.File] = true
		copies += c.Copies
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d canary sessions of the paired gate from %d files; the failure rate with its %g%% Clopper–Pearson interval\n", len(cs), len(files), 100*rates[0].Level)
	if copies > 0 {
		fmt.Fprintf(&b, "(%d more met again, by another path to the same file or as a copy of a record, counted once)\n", copies)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "slowdown\tsessions\tpassed\tfailed\trerun\tnot sure\tfailure rate\tinterval\tmeasures")
	for _, r := range rates {
		name, measures := "A/A", "false failures (target ≤ 2%)"
		if r.Slowdown > 0 {
			name = "+" + strconv.FormatFloat(100*r.Slowdown, 'f', -1, 64) + "%"
			measures = "power"
			switch {
			case r.Slowdown >= 0.10:
				measures = "power (target ≥ 90%)"
			case r.Slowdown >= 0.05:
				measures = "power (target ≥ 50%)"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.1f%%\t[%.1f%%, %.1f%%]\t%s\n", name, r.Sessions, r.Passed, r.Failed, r.Rerun, r.NotSure, 100*r.Rate(), 100*r.Lo, 100*r.Hi, measures)
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}
