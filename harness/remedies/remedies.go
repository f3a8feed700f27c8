// Package remedies is the report of the remote-data remedies experiment
// (workloads.Remote, issue 34 items 5 and 6): it reads the experiment's
// runs (its BenchmarkRemote records, read back by workloads.RemoteCodec),
// calibrates the fetch model (package fetchmodel) on each dataset's
// no-round-trip points and the bounds measured beside them, predicts
// every other point and every check, and writes the Markdown report and
// its figure. Everything the report states is computed from the records
// and the file's configuration lines, so `headspace remote --from FILE`
// rebuilds it byte for byte.
package remedies

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/fetchmodel"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Dataset is one dataset of the grid (a format and a layout) with its
// measurements and its calibration.
type Dataset struct {
	Format, Layout string
	// Local is samples/s at level local (the same objects on local
	// disk): the bound without a network.
	Local float64
	// BytesPerSample and RequestsPerSample are the calibration point's
	// (round trip 0, the lowest concurrency).
	BytesPerSample, RequestsPerSample float64
	// Calibration is the model's input for this dataset.
	Calibration fetchmodel.Calibration
	// CalibrationLatency is the mean request latency it was taken from.
	CalibrationLatency time.Duration
	Points             []Point // the grid (round trip, then concurrency), then the checks
}

// Name is "format/layout".
func (d Dataset) Name() string { return d.Format + "/" + d.Layout }

// Point is one measured point of level none, with the model's
// prediction.
type Point struct {
	RTT         time.Duration // the grid's round trip; a check's link latency
	Concurrency int
	Check       string // the check's name; "" on the grid
	Link        fetchmodel.Link
	// Measured is the median samples/s of its runs; Runs how many.
	Measured  float64
	Runs      int
	Headspace float64 // 1 − Measured ÷ the device's samples/s
	ReqMean   time.Duration
	Predicted fetchmodel.Prediction
	// Calibration marks a point the model was fitted on (round trip 0):
	// its error is not a prediction's and is left out of the medians.
	Calibration bool
	APE         float64 // |predicted − measured| ÷ measured, %
}

// Report is everything the Markdown report states.
type Report struct {
	Config   []resultfile.Config // the file's configuration lines, in order
	Device   float64             // samples/s at level device
	Batch    int
	Window   int // samples the loader admits at once (prefetch × batch); 0 unknown
	Datasets []Dataset
	Checks   map[string]string // name → "<link spec> concurrency=N"
}

// WindowFor is the loader's window at a concurrency: Window, or under the
// rule a file records as fetch-window (loader.WindowRule) at least one
// sample per fetcher.
func (r Report) WindowFor(concurrency int) int {
	if r.Window > 0 && r.Get("fetch-window") == loader.WindowRule {
		return max(r.Window, concurrency)
	}
	return r.Window
}

// Get is the configuration line key's value, "" without one.
func (r Report) Get(key string) string {
	for _, c := range r.Config {
		if c.Key == key {
			return c.Value
		}
	}
	return ""
}

// Run is one run of a remote grid's point, as workloads.RemoteCodec
// reads it back from its record: its dataset ("" at level device), its
// level (none, local or device), its link (the grid's round trip, or a
// check's name) and requests in flight (at level none), and the
// record's figures (0 where it holds none).
type Run struct {
	Format, Layout string
	Level          level.Level
	RTT            time.Duration
	Check          string
	Concurrency    int
	// SamplesPerSec, ReqMean (ns), BytesPerSample and RequestsPerSample
	// are the record's samples/s, req-mean-ns, bytes/sample and
	// requests/sample.
	SamplesPerSec, ReqMean, BytesPerSample, RequestsPerSample float64
}

// Build makes the report from a remote run's runs and its result file's
// configuration.
func Build(runs []Run, config []resultfile.Config) (Report, error) {
	r := Report{Config: config, Checks: map[string]string{}}
	for _, c := range config {
		if name, ok := strings.CutPrefix(c.Key, "remote-check-"); ok {
			r.Checks[name] = c.Value
		}
	}
	b, err := strconv.Atoi(r.Get("batch"))
	if err != nil || b <= 0 {
		return r, fmt.Errorf("remedies: no batch line (headspace remote --out records it)")
	}
	r.Batch = b
	// The loader's window, prefetch × batch samples (the model's
	// Fetch.Window), and from files that record the fetch-window rule at
	// least one sample per fetcher (WindowFor); files from before the
	// prefetch line have none.
	if pf, err := strconv.Atoi(r.Get("prefetch")); err == nil && pf > 0 {
		r.Window = pf * b
	}
	m := collect(runs)
	if len(m.device) == 0 {
		return r, fmt.Errorf("remedies: no level=device record")
	}
	r.Device = summary.Median(m.device)
	for _, name := range m.order {
		d, err := r.calibrate(name, m)
		if err != nil {
			return r, err
		}
		r.Datasets = append(r.Datasets, d)
	}
	return r, nil
}

// pointKey names one measured point of a remote run: the dataset
// (format/layout), the link (a round trip, or a named check) and the
// requests in flight.
type pointKey struct {
	ds, check string
	rtt       time.Duration
	conc      int
}

// measured is a remote run's records grouped by point: each point's
// samples/s, request latency, bytes and requests per sample, in the order
// met; the local copy's samples/s per dataset; level device's.
type measured struct {
	samples, lat, bytes, reqs map[pointKey][]float64
	keys                      []pointKey
	local                     map[string][]float64
	device                    []float64
	order                     []string
}

// collect groups the runs of a remote run by point.
func collect(runs []Run) measured {
	m := measured{samples: map[pointKey][]float64{}, lat: map[pointKey][]float64{}, bytes: map[pointKey][]float64{},
		reqs: map[pointKey][]float64{}, local: map[string][]float64{}}
	seen := map[string]bool{}
	for _, run := range runs {
		ds := run.Format + "/" + run.Layout
		switch run.Level {
		case level.Device:
			m.device = append(m.device, run.SamplesPerSec)
		case level.Local:
			m.local[ds] = append(m.local[ds], run.SamplesPerSec)
		}
		if run.Level != level.None {
			continue
		}
		if !seen[ds] {
			seen[ds] = true
			m.order = append(m.order, ds)
		}
		k := pointKey{ds: ds, check: run.Check, conc: run.Concurrency}
		if k.check == "" {
			k.rtt = run.RTT
		}
		if _, ok := m.samples[k]; !ok {
			m.keys = append(m.keys, k)
		}
		m.samples[k] = append(m.samples[k], run.SamplesPerSec)
		m.lat[k] = append(m.lat[k], run.ReqMean)
		m.bytes[k] = append(m.bytes[k], run.BytesPerSample)
		m.reqs[k] = append(m.reqs[k], run.RequestsPerSample)
	}
	return m
}

// calibrate calibrates the model on one dataset's point at round trip 0 and
// the lowest concurrency, and predicts each of its points.
func (r Report) calibrate(name string, m measured) (Dataset, error) {
	format, layout, _ := strings.Cut(name, "/")
	d := Dataset{Format: format, Layout: layout}
	if v := m.local[name]; len(v) > 0 {
		d.Local = summary.Median(v)
	}
	// Calibration: round trip 0, the lowest concurrency.
	var cal *pointKey
	for i, k := range m.keys {
		if k.ds == name && k.check == "" && k.rtt == 0 && (cal == nil || k.conc < cal.conc) {
			cal = &m.keys[i]
		}
	}
	if cal == nil {
		return d, fmt.Errorf("remedies: %s: no point at round trip 0 to calibrate on", name)
	}
	d.BytesPerSample, d.RequestsPerSample = summary.Median(m.bytes[*cal]), summary.Median(m.reqs[*cal])
	d.CalibrationLatency = time.Duration(summary.Median(m.lat[*cal]))
	f0 := fetchmodel.Fetch{Concurrency: cal.conc, BytesPerSample: d.BytesPerSample, RequestsPerSample: d.RequestsPerSample, Window: r.WindowFor(cal.conc)}
	d.Calibration = fetchmodel.Calibration{
		ServerTime: fetchmodel.ServerTime(d.CalibrationLatency, f0.BytesPerRequest(), fetchmodel.Link{}),
		HostRate:   d.Local, DeviceRate: r.Device,
	}
	for _, k := range m.keys {
		if k.ds == name && k.check == "" && k.rtt == 0 {
			d.Calibration.ServerRate = max(d.Calibration.ServerRate, summary.Median(m.samples[k])*d.RequestsPerSample)
		}
	}
	for _, k := range m.keys {
		if k.ds != name {
			continue
		}
		pt, err := r.point(k, d, m)
		if err != nil {
			return d, err
		}
		d.Points = append(d.Points, pt)
	}
	return d, nil
}

// point is one measured point of dataset d beside the model's prediction.
func (r Report) point(k pointKey, d Dataset, m measured) (Point, error) {
	pt := Point{RTT: k.rtt, Concurrency: k.conc, Check: k.check, Measured: summary.Median(m.samples[k]), Runs: len(m.samples[k]),
		ReqMean: time.Duration(summary.Median(m.lat[k])), Calibration: k.check == "" && k.rtt == 0}
	if k.check != "" {
		spec, _, _ := strings.Cut(r.Checks[k.check], " concurrency=")
		cfg, err := link.Parse(spec)
		if err != nil {
			return pt, fmt.Errorf("remedies: check %s: %w", k.check, err)
		}
		pt.RTT = cfg.Latency
		pt.Link = Model(cfg)
	} else {
		pt.Link = fetchmodel.Link{RTT: k.rtt}
	}
	pt.Headspace = fetchmodel.Headspace(pt.Measured, r.Device)
	pt.Predicted = fetchmodel.Predict(d.Calibration, fetchmodel.Fetch{Concurrency: k.conc, BytesPerSample: d.BytesPerSample, RequestsPerSample: d.RequestsPerSample, Window: r.WindowFor(k.conc)}, pt.Link)
	pt.APE = fetchmodel.APE(pt.Predicted.SamplesPerSec, pt.Measured)
	return pt, nil
}

// Model is an emulated link as the model sees it.
func Model(c link.Config) fetchmodel.Link {
	return fetchmodel.Link{RTT: c.Latency, Bandwidth: float64(c.Bandwidth), ConnBandwidth: float64(c.ConnBandwidth), RequestRate: c.RequestRate}
}

// Errors is the prediction errors (APE, %) of the points pick selects,
// calibration points left out.
func (r Report) Errors(pick func(d Dataset, p Point) bool) []float64 {
	var out []float64
	for _, d := range r.Datasets {
		for _, p := range d.Points {
			if !p.Calibration && pick(d, p) {
				out = append(out, p.APE)
			}
		}
	}
	return out
}

// Knee is where more requests in flight stop helping a dataset at a
// round trip: the lowest concurrency whose samples/s is within 10% of
// the best at that round trip, and the best.
func (d Dataset) Knee(rtt time.Duration) (conc int, best float64) {
	for _, p := range d.Points {
		if p.Check == "" && p.RTT == rtt {
			best = max(best, p.Measured)
		}
	}
	conc = math.MaxInt
	for _, p := range d.Points {
		if p.Check == "" && p.RTT == rtt && p.Measured >= 0.9*best {
			conc = min(conc, p.Concurrency)
		}
	}
	return conc, best
}

// point is d's grid point at rtt and conc, or nil.
func (d Dataset) point(rtt time.Duration, conc int) *Point {
	for i := range d.Points {
		if p := &d.Points[i]; p.Check == "" && p.RTT == rtt && p.Concurrency == conc {
			return p
		}
	}
	return nil
}

// Ratios is the median over the grid's common points of a's samples/s
// over b's: how much one dataset's layout or format gains on another's.
func Ratios(a, b Dataset) float64 {
	var rs []float64
	for _, p := range a.Points {
		if p.Check != "" {
			continue
		}
		if q := b.point(p.RTT, p.Concurrency); q != nil && q.Measured > 0 {
			rs = append(rs, p.Measured/q.Measured)
		}
	}
	if len(rs) == 0 {
		return math.NaN()
	}
	return summary.Median(rs)
}

// RTTs is the grid's round trips, ascending; Concurrencies its
// concurrencies.
func (r Report) RTTs() []time.Duration {
	return gridValues(r, func(p Point) time.Duration { return p.RTT })
}

// Concurrencies is the grid's concurrencies, ascending.
func (r Report) Concurrencies() []int {
	return gridValues(r, func(p Point) int { return p.Concurrency })
}

// gridValues is the distinct values of one of the grid's dimensions
// (the points that are not checks), ascending.
func gridValues[T cmp.Ordered](r Report, of func(Point) T) []T {
	var out []T
	for _, d := range r.Datasets {
		for _, p := range d.Points {
			if v := of(p); p.Check == "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// dataset is the dataset of format and layout, or nil.
func (r Report) dataset(format, layout string) *Dataset {
	for i := range r.Datasets {
		if d := &r.Datasets[i]; d.Format == format && d.Layout == layout {
			return d
		}
	}
	return nil
}

// MedianError is the model's median absolute percentage error over
// every predicted point (the grid's with a round trip, and the checks).
func MedianError(r Report) float64 {
	return fetchmodel.Median(r.Errors(func(Dataset, Point) bool { return true }))
}
