package peer

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"

	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// The implementations: our transforms at level none, and the peer.
const (
	Naive = "naive" // our goroutine loader, naive transforms
	Fast  = "fast"  // our goroutine loader, fast transforms
	Torch = "torch" // the PyTorch DataLoader
)

// Measurement is one run of one implementation at one worker count, as
// loadbench.Measurement defines its figures.
type Measurement struct {
	Impl    string
	Workers int
	Batches int
	// TTFB is the time to the first batch, from the start of the loader
	// (ours: its construction; torch: creating the DataLoader iterator).
	TTFB time.Duration
	// SamplesPerSec is the throughput after the first batch.
	SamplesPerSec float64
	// CPU is the CPU time of every process involved; 0 if not reported.
	CPU time.Duration
}

// BenchName is the measurement's benchmark name, e.g.
// "BenchmarkPeer/impl=torch/workers=2".
func (m Measurement) BenchName() string {
	return fmt.Sprintf("BenchmarkPeer/impl=%s/workers=%d", m.Impl, m.Workers)
}

// Benchmark is the measurement in benchmark format, in loadbench's units
// ttfb-ns, samples/s and cpu-s (loadbench.Result; no peak RSS).
func (m Measurement) Benchmark() *benchfmt.Result {
	return loadbench.Result(m.BenchName(), m.Batches, m.TTFB, m.SamplesPerSec, -1, m.CPU)
}

// Output is what the script printed: its configuration lines (in order,
// as the first result saw them) and its results.
type Output struct {
	Config  []resultfile.Config
	Results []Measurement
}

// Get returns the value of the configuration key, or "".
func (o Output) Get(key string) string {
	for _, c := range o.Config {
		if c.Key == key {
			return c.Value
		}
	}
	return ""
}

// maxErrors is how many bad lines Parse names before summarising.
const maxErrors = 5

// Parse reads the script's output: Go benchmark format, "key: value"
// configuration lines and one BenchmarkPeer/impl=<impl>/workers=<n> line
// per run carrying ttfb-ns and samples/s (and optionally cpu-s), all finite
// and not negative. name is used in errors. It fails on syntax errors, on
// any other benchmark, and on output with no result.
func Parse(r io.Reader, name string) (Output, error) {
	config, ms, err := parseScript(r, name, Layout, MeasurementOf)
	return Output{Config: config, Results: ms}, err
}

// parseScript reads a peer script's output in Go benchmark format: it
// reads every result's name by layout (whose one benchmark the script
// prints), converts the result with convert and keeps the configuration lines as
// the first good result saw them. Syntax errors and results convert
// refuses are named with their file and line, the first maxErrors of them,
// then counted. Output with no result is an error naming the benchmark
// the script should print. Parse, ParseRemote and ParseLadder read
// through it.
func parseScript[M any](r io.Reader, name string, layout resultfile.Layout, convert func(resultfile.Name, *benchfmt.Result) (M, error)) ([]resultfile.Config, []M, error) {
	rd := benchfmt.NewReader(r, name)
	names := layout.Reader()
	var config []resultfile.Config
	var out []M
	var errs []error
	bad := 0
	fail := func(err error) {
		if bad++; bad <= maxErrors {
			errs = append(errs, err)
		}
	}
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			fail(rec)
		case *benchfmt.Result:
			n, err := names.Read(rec)
			var m M
			if err == nil {
				m, err = convert(n, rec)
			}
			if err != nil {
				file, line := rec.Pos()
				fail(fmt.Errorf("%s:%d: %w", file, line, err))
				continue
			}
			if len(out) == 0 {
				// The reader reuses rec: copy its configuration now.
				for _, c := range rec.Config {
					if c.File {
						config = append(config, resultfile.Config{Key: c.Key, Value: string(c.Value)})
					}
				}
			}
			out = append(out, m)
		}
	}
	if err := rd.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if bad > maxErrors {
		errs = append(errs, fmt.Errorf("%s: %d more bad lines", name, bad-maxErrors))
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: no %s lines in the output", name, strings.Join(benchNames(layout), ", "))
	}
	return config, out, nil
}

// Layout is the names of a peer comparison's records,
// BenchmarkPeer/impl=<impl>/workers=<n>: the script's lines (Parse) and a
// results file's (package workloads' PeerCodec is built from it) alike.
var Layout = resultfile.Layout{Owner: "Peer", Keys: map[string][]string{"Peer": {"impl", "workers"}}}

// benchNames are the full names of layout's benchmarks ("BenchmarkPeer").
func benchNames(layout resultfile.Layout) []string {
	var out []string
	for _, b := range layout.Benchmarks() {
		out = append(out, "Benchmark"+b)
	}
	return out
}

// MeasurementOf is the run of one BenchmarkPeer record whose name n gives
// (Layout): its implementation one of Impls, its workers positive, at
// least 2 batches, and its ttfb-ns and samples/s (and cpu-s, where it has
// one) once each, finite and not negative. A script's line (Parse) and a
// results file's record (package workloads' PeerCodec) decode through it.
func MeasurementOf(n resultfile.Name, r *benchfmt.Result) (Measurement, error) {
	var m Measurement
	full := resultfile.FullName(r)
	if !slices.Contains(Impls, n.Keys["impl"]) {
		return m, fmt.Errorf("%s: unknown impl %q (want one of %s)", full, n.Keys["impl"], strings.Join(Impls, ", "))
	}
	m.Impl = n.Keys["impl"]
	workers, err := n.Count("workers", true)
	if err != nil {
		return m, fmt.Errorf("%s: %w", full, err)
	}
	m.Workers = workers
	m.Batches = r.Iters
	ttfb, err := value(r, "ttfb-ns", true)
	if err != nil {
		return m, fmt.Errorf("%s: %w", full, err)
	}
	if ttfb > float64(math.MaxInt64) {
		return m, fmt.Errorf("%s: ttfb-ns %g is out of range", full, ttfb)
	}
	sps, err := value(r, "samples/s", true)
	if err != nil {
		return m, fmt.Errorf("%s: %w", full, err)
	}
	cpu, err := value(r, "cpu-s", false)
	if err != nil {
		return m, fmt.Errorf("%s: %w", full, err)
	}
	if cpu*1e9 > float64(math.MaxInt64) {
		return m, fmt.Errorf("%s: cpu-s %g is out of range", full, cpu)
	}
	if m.Batches < 2 {
		return m, fmt.Errorf("%s: %d batches, want at least 2", full, m.Batches)
	}
	m.TTFB = time.Duration(math.Round(ttfb))
	m.SamplesPerSec = sps
	m.CPU = time.Duration(math.Round(cpu * 1e9))
	return m, nil
}

// value returns r's value in unit (which benchfmt may have tidied: ttfb-ns
// is read as ttfb-sec), checking it is there at most once (at least once if
// required), finite and not negative.
func value(r *benchfmt.Result, unit string, required bool) (float64, error) {
	factor, tidied := benchunit.Tidy(1, unit)
	found, n := 0.0, 0
	for _, v := range r.Values {
		switch {
		case v.OrigUnit == unit:
			found = v.OrigValue
		case v.OrigUnit == "" && v.Unit == unit:
			found = v.Value
		case v.OrigUnit == "" && v.Unit == tidied:
			found = v.Value / factor
		default:
			continue
		}
		n++
	}
	switch {
	case n == 0 && required:
		return 0, fmt.Errorf("no value in %s", unit)
	case n > 1:
		return 0, fmt.Errorf("%s given %d times", unit, n)
	case math.IsNaN(found) || math.IsInf(found, 0) || found < 0:
		return 0, fmt.Errorf("%s %g must be finite and not negative", unit, found)
	}
	return found, nil
}
