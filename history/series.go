package history

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchproc"

	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/history/changepoint"
	"github.com/headspace-bench/headspace/internal/summary"
)

// History is a store read into series.
type History struct {
	Dir      string
	Machines []*Machine
}

// Machine is one machine's runs and series.
type Machine struct {
	Key     string
	Machine gate.Machine
	Runs    []Run
	Series  []*Series
	// Latest compares the latest run with the one before it (nil with
	// fewer than two runs, or when they cannot be compared: LatestErr).
	Latest    *gate.Report
	LatestErr error
}

// Series is one benchmark × unit on one machine over its runs.
type Series struct {
	Machine   string
	Benchmark string // full name with the "Benchmark" prefix, as gate.Row
	Unit      string // tidied, as gate.Row
	Better    resultfile.Direction
	Points    []Point
	Changes   []Change
	// Suspect is a step in the series' last runs that the change-point
	// test cannot confirm yet (changepoint.Suspect), nil when none.
	Suspect *Change
}

// Point is one run's measurement of a series.
type Point struct {
	Run int // index into the machine's Runs
	summary.Summary
	// Values are the run's finite samples of the series, sorted: what
	// the page's charts and its compare of any two runs are computed
	// from.
	Values []float64
}

// Change is a change point of a series, attributed to the first run
// (and so the first commit) that shows it.
type Change struct {
	changepoint.Change
	Run    int
	Commit string
	Date   time.Time
}

// prev is the run of series s's point before the change (compare's old
// side), or the change's own run when it is at the first point.
func (c Change) prev(s *Series) int {
	if c.Index > 0 {
		return s.Points[c.Index-1].Run
	}
	return c.Run
}

// Regression says whether the change is for the worse.
func (c Change) Regression(better resultfile.Direction) bool {
	return better != resultfile.NoDirection && (c.Delta > 0) != (better == resultfile.HigherIsBetter)
}

// Options configure Load.
type Options struct {
	// ChangePoint configures the change-point detection.
	ChangePoint changepoint.Options
	// Gate configures the comparison of the latest run with the one
	// before it; gate.DefaultOptions when zero.
	Gate gate.Options
}

// Load reads the store in dir: every machine's runs, a series per
// benchmark and unit with its change points and suspected step, and the
// latest run compared with the one before (using the earlier runs'
// spread). It stops with ctx's error when ctx ends.
func Load(ctx context.Context, dir string, opt Options) (*History, error) {
	if opt.Gate.Alpha == 0 {
		opt.Gate = gate.DefaultOptions()
	}
	keys, err := Machines(dir)
	if err != nil {
		return nil, err
	}
	h := &History{Dir: dir}
	for _, k := range keys {
		m, err := loadMachine(ctx, dir, k, opt)
		if err != nil {
			return nil, err
		}
		if len(m.Runs) > 0 {
			h.Machines = append(h.Machines, m)
		}
	}
	// The longest histories first.
	sort.SliceStable(h.Machines, func(i, j int) bool { return len(h.Machines[i].Runs) > len(h.Machines[j].Runs) })
	return h, nil
}

type seriesKey struct{ name, unit string }

func loadMachine(ctx context.Context, dir, key string, opt Options) (*Machine, error) {
	runs, err := Runs(dir, key)
	if err != nil {
		return nil, err
	}
	m := &Machine{Key: key, Runs: runs}
	if len(runs) > 0 {
		m.Machine = runs[len(runs)-1].Machine
	}
	parser := benchproc.ProjectionParser{}
	proj, err := parser.Parse(".fullname", nil)
	if err != nil {
		return nil, err
	}
	byKey := map[seriesKey]*Series{}
	for i, run := range runs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		keys, vals, meta, err := scanRun(run.Path, proj)
		if err != nil {
			return nil, err
		}
		if err := gate.CheckUnits(run.Path, meta); err != nil {
			return nil, err
		}
		for _, k := range keys {
			s := byKey[k]
			if s == nil {
				s = &Series{Machine: key, Benchmark: k.name, Unit: k.unit, Better: resultfile.TrustedDirection(k.unit, meta)}
				byKey[k] = s
				m.Series = append(m.Series, s)
			}
			slices.Sort(vals[k])
			s.Points = append(s.Points, Point{Run: i, Summary: summary.Of(vals[k]), Values: vals[k]})
		}
	}
	if err := detectAll(ctx, m.Series, runs, opt.ChangePoint); err != nil {
		return nil, err
	}
	sort.SliceStable(m.Series, func(i, j int) bool {
		if m.Series[i].Benchmark != m.Series[j].Benchmark {
			return m.Series[i].Benchmark < m.Series[j].Benchmark
		}
		return unitRank(m.Series[i].Unit) < unitRank(m.Series[j].Unit)
	})
	if len(runs) >= 2 {
		m.Latest, m.LatestErr = latest(m.Series, runs, opt)
	}
	return m, nil
}

// scanRun reads one run's values, finite ones only, by series (full
// name and unit) in the order met, with the file's metadata.
func scanRun(path string, proj *benchproc.Projection) ([]seriesKey, map[seriesKey][]float64, benchfmt.UnitMetadataMap, error) {
	vals := map[seriesKey][]float64{}
	var keys []seriesKey
	meta, err := resultfile.Scan(path, func(r *benchfmt.Result) error {
		name := "Benchmark" + proj.Project(r).StringValues()
		for _, v := range r.Values {
			if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
				continue
			}
			k := seriesKey{name, v.Unit}
			if _, ok := vals[k]; !ok {
				keys = append(keys, k)
			}
			vals[k] = append(vals[k], v.Value)
		}
		return nil
	})
	return keys, vals, meta, err
}

// latest compares a machine's last run with the one before it, with each
// series' spread between runs, or says why it cannot.
func latest(series []*Series, runs []Run, opt Options) (*gate.Report, error) {
	n := len(runs)
	g := opt.Gate
	g.Spread = spreadOf(series, n-1)
	// One machine by construction (one folder), though files written
	// before the cores: line do not say so themselves.
	g.CrossMachine = true
	rep, err := gate.CompareFiles(runs[n-2].Path, runs[n-1].Path, g)
	if err == nil {
		err = rep.Evidence(g.MinCoverage)
	}
	rep.CrossMachine = false
	if err != nil {
		return nil, err
	}
	return &rep, nil
}

// detectAll finds the change points and the suspected step of every
// series, GOMAXPROCS series at a time: each series' detection is its own
// (its own seeded shuffles), so the result is the same in any order. It
// stops with ctx's error when ctx ends.
func detectAll(ctx context.Context, series []*Series, runs []Run, opt changepoint.Options) error {
	next := make(chan *Series)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(series)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				detect(s, runs, opt)
			}
		}()
	}
	var err error
	for _, s := range series {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- s
	}
	close(next)
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// detect finds series s's change points and suspected step.
func detect(s *Series, runs []Run, opt changepoint.Options) {
	xs := make([]float64, len(s.Points))
	for i, p := range s.Points {
		xs[i] = p.Median
	}
	for _, c := range changepoint.Detect(xs, opt) {
		r := s.Points[c.Index].Run
		s.Changes = append(s.Changes, Change{Change: c, Run: r, Commit: runs[r].Commit, Date: runs[r].Date})
	}
	from := 0
	if n := len(s.Changes); n > 0 {
		from = s.Changes[n-1].Index
	}
	if c, ok := changepoint.Suspect(xs, from, opt); ok {
		r := s.Points[c.Index].Run
		s.Suspect = &Change{Change: c, Run: r, Commit: runs[r].Commit, Date: runs[r].Date}
	}
}

// unitRank orders a benchmark's units: throughput first, then time, then
// the rest by name.
func unitRank(u string) string {
	for i, first := range []string{"steps/s", "samples/s", "sec/op"} {
		if u == first {
			return fmt.Sprint(i)
		}
	}
	return "9" + u
}

// SpreadRuns is how many of a series' latest points (after its last
// change point) its spread between runs is measured over.
const SpreadRuns = 20

// spreadOf measures each series' spread between runs over the points of
// runs before upTo: the robust standard deviation (1.4826 × the median
// absolute deviation) of the run medians after the series' last change
// point, at most SpreadRuns of them and at least 3, relative to their
// median.
func spreadOf(series []*Series, upTo int) map[gate.Metric]float64 {
	out := map[gate.Metric]float64{}
	for _, s := range series {
		start := 0
		for _, c := range s.Changes {
			if c.Run < upTo {
				start = c.Run
			}
		}
		var xs []float64
		for _, p := range s.Points {
			if p.Run >= start && p.Run < upTo {
				xs = append(xs, p.Median)
			}
		}
		if len(xs) > SpreadRuns {
			xs = xs[len(xs)-SpreadRuns:]
		}
		if len(xs) < 3 {
			continue
		}
		med := summary.Median(slices.Clone(xs))
		if med == 0 {
			continue
		}
		dev := make([]float64, len(xs))
		for i, x := range xs {
			dev[i] = math.Abs(x - med)
		}
		out[gate.Metric{Name: s.Benchmark, Unit: s.Unit}] = 1.4826 * summary.Median(dev) / math.Abs(med)
	}
	return out
}

// Spread returns each metric's spread between runs on machine (a folder
// of the store in dir: MachineFolder) over all its runs: what `headspace
// compare --history` gives the gate. An empty map when the machine has
// fewer than three runs.
func Spread(ctx context.Context, dir, machine string) (map[gate.Metric]float64, error) {
	m, err := loadMachine(ctx, dir, machine, Options{Gate: gate.DefaultOptions()})
	if err != nil {
		return nil, err
	}
	return spreadOf(m.Series, len(m.Runs)), nil
}

// Changes returns every change point of every series, newest first, then
// by machine, benchmark and unit.
func (h *History) Changes() []SeriesChange {
	var out []SeriesChange
	for _, m := range h.Machines {
		for _, s := range m.Series {
			for _, c := range s.Changes {
				out = append(out, SeriesChange{Series: s, Change: c})
			}
		}
	}
	return newestFirst(out)
}

// Suspects returns the suspected step of every series that has one,
// newest first, then by machine and benchmark.
func (h *History) Suspects() []SeriesChange {
	var out []SeriesChange
	for _, m := range h.Machines {
		for _, s := range m.Series {
			if s.Suspect != nil {
				out = append(out, SeriesChange{Series: s, Change: *s.Suspect, Suspected: true})
			}
		}
	}
	return newestFirst(out)
}

// newestFirst sorts changes newest first, then by machine and benchmark.
func newestFirst(out []SeriesChange) []SeriesChange {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Date.Equal(b.Date) {
			return a.Date.After(b.Date)
		}
		if a.Series.Machine != b.Series.Machine {
			return a.Series.Machine < b.Series.Machine
		}
		return a.Series.Benchmark < b.Series.Benchmark
	})
	return out
}

// SeriesChange is a change with its series.
type SeriesChange struct {
	Series *Series
	Change
	// Suspected: a suspected step at the end of the series, not a change
	// point the test confirmed.
	Suspected bool
}
