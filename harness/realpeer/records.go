package realpeer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Benchmark is the records' benchmark name (BenchmarkRealPeer/…).
const Benchmark = "RealPeer"

// Measurement is one run of ours or of one peer at one worker count.
type Measurement struct {
	Peer    string // Ours or a Peer's name
	Workers int
	Round   int // 1-based
	Batches int
	// TTFB is the time from the start of building the loader to its
	// first batch; SamplesPerSec the samples of batches 2..Batches over
	// the time from the first batch to the last; CPU every process's
	// user+system CPU over the run.
	TTFB          time.Duration
	SamplesPerSec float64
	CPU           time.Duration
	// PeakRSS is the peak of the summed resident memory of the run's
	// processes in bytes; -1 where it is not measured.
	PeakRSS int64
	// Missing, for a peer's run that failed, is the reason in one line;
	// the figures are then zero.
	Missing string
}

// BenchName is the run's benchmark name, e.g.
// "BenchmarkRealPeer/peer=spdl/workers=2".
func (m Measurement) BenchName() string {
	return fmt.Sprintf("Benchmark%s/peer=%s/workers=%d", Benchmark, m.Peer, m.Workers)
}

// Record is the run in benchmark format, in loadbench's units (ttfb-ns,
// samples/s, peak-rss-B where measured, cpu-s). A missing run has none:
// its reason is a configuration line (MissingKey).
func (m Measurement) Record() *benchfmt.Result {
	return loadbench.Result(m.BenchName(), m.Batches, m.TTFB, m.SamplesPerSec, m.PeakRSS, m.CPU)
}

// MissingKey is the configuration key that records a missing run's reason:
// missing-<peer>-w<workers>-r<round>.
func (m Measurement) MissingKey() string {
	return fmt.Sprintf("missing-%s-w%d-r%d", m.Peer, m.Workers, m.Round)
}

// Records are ms's records, in the order they ran, missing runs left out.
func Records(ms []Measurement) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, m := range ms {
		if m.Missing == "" {
			out = append(out, m.Record())
		}
	}
	return out
}

// MissingConfig are the configuration lines of ms's missing runs.
func MissingConfig(ms []Measurement) []resultfile.Config {
	var out []resultfile.Config
	for _, m := range ms {
		if m.Missing != "" {
			out = append(out, resultfile.Config{Key: m.MissingKey(), Value: oneLine(m.Missing)})
		}
	}
	return out
}

// oneLine is s on one line: newlines become spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ScriptOutput is what a peer's script printed: its configuration lines
// and its one run.
type ScriptOutput struct {
	Config []resultfile.Config
	Run    Measurement
}

// ParseScript reads a peer script's output: "key: value" lines, then
// exactly one BenchmarkRealPeer/peer=<name>/workers=<n> line with
// ttfb-ns, samples/s and cpu-s, finite and not negative, and at least two
// batches. With check (a --check run) it wants configuration lines and no
// benchmark line. name is used in errors.
func ParseScript(r io.Reader, name string, check bool) (ScriptOutput, error) {
	var o ScriptOutput
	data, err := io.ReadAll(r)
	if err != nil {
		return o, err
	}
	rd := benchfmt.NewReader(bytes.NewReader(data), name)
	names := scriptLayout.Reader()
	var runs []Measurement
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			return o, rec
		case *benchfmt.Result:
			n, err := names.Read(rec)
			var m Measurement
			if err == nil {
				m, err = MeasurementOf(n, rec)
			}
			if err != nil {
				file, line := rec.Pos()
				return o, fmt.Errorf("%s:%d: %w", file, line, err)
			}
			runs = append(runs, m)
		}
	}
	if err := rd.Err(); err != nil {
		return o, fmt.Errorf("%s: %w", name, err)
	}
	o.Config = configLines(data)
	switch {
	case check && len(runs) > 0:
		return o, fmt.Errorf("%s: --check printed a benchmark line", name)
	case check && len(o.Config) == 0:
		return o, fmt.Errorf("%s: --check printed no configuration lines", name)
	case !check && len(runs) != 1:
		return o, fmt.Errorf("%s: printed %d BenchmarkRealPeer lines, want 1", name, len(runs))
	}
	if !check {
		o.Run = runs[0]
	}
	return o, nil
}

// configLines are the "key: value" lines of a script's output, in order,
// as benchfmt reads them (a later line of a key replaces the earlier).
func configLines(data []byte) []resultfile.Config {
	var out []resultfile.Config
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" || strings.HasPrefix(k, "Benchmark") || strings.ContainsAny(k, " \t") || k != strings.ToLower(k) {
			continue
		}
		c := resultfile.Config{Key: k, Value: strings.TrimSpace(v)}
		if i := slices.IndexFunc(out, func(o resultfile.Config) bool { return o.Key == k }); i >= 0 {
			out[i] = c
		} else {
			out = append(out, c)
		}
	}
	return out
}

// Layout is the names of the real peers' records:
// BenchmarkRealPeer/peer=<name>/workers=<n> a run,
// BenchmarkRealPeerLimit/workers=<n> the limit's. A script's line
// (ParseScript) and a results file's record (package workloads'
// RealPeerCodec is built from it) are read by it alike.
var Layout = resultfile.Layout{Owner: "RealPeer", Keys: map[string][]string{
	Benchmark:      {"peer", "workers"},
	LimitBenchmark: {"workers"},
}}

// scriptLayout is Layout's run, the one benchmark a script prints.
var scriptLayout = resultfile.Layout{Owner: Layout.Owner, Keys: map[string][]string{Benchmark: Layout.Keys[Benchmark]}}

// MeasurementOf is the run of one BenchmarkRealPeer record whose name n
// gives (Layout): the peer known, its workers positive, the figures
// checked. A script's line (ParseScript) and a results file's record
// (package workloads' RealPeerCodec) decode through it. Its Round is 0.
func MeasurementOf(n resultfile.Name, r *benchfmt.Result) (Measurement, error) {
	full := resultfile.FullName(r)
	m := Measurement{Peer: n.Keys["peer"], PeakRSS: -1, Batches: r.Iters}
	workers, err := n.Count("workers", true)
	if err != nil {
		return m, fmt.Errorf("%s: %w", full, err)
	}
	m.Workers = workers
	if m.Peer != Ours {
		if _, ok := Lookup(m.Peer); !ok {
			return m, fmt.Errorf("%s: no peer %q", full, m.Peer)
		}
	}
	if m.Batches < 2 {
		return m, fmt.Errorf("%s: %d batches, want at least 2", full, m.Batches)
	}
	var errs []error
	get := func(unit string, required bool) float64 {
		v, err := value(r, unit, required)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", full, err))
		}
		return v
	}
	ttfb, sps, cpu := get("ttfb-ns", true), get("samples/s", true), get("cpu-s", true)
	if rss, ok := resultfile.Value(r, "peak-rss-B"); ok {
		if rss < 0 || math.IsNaN(rss) || math.IsInf(rss, 0) || rss > math.MaxInt64 {
			errs = append(errs, fmt.Errorf("%s: peak-rss-B %g must be finite and not negative", full, rss))
		}
		m.PeakRSS = int64(rss)
	}
	if err := errors.Join(errs...); err != nil {
		return m, err
	}
	if ttfb > math.MaxInt64 || cpu*1e9 > math.MaxInt64 {
		return m, fmt.Errorf("%s: ttfb-ns %g or cpu-s %g is out of range", full, ttfb, cpu)
	}
	m.TTFB, m.SamplesPerSec, m.CPU = time.Duration(math.Round(ttfb)), sps, time.Duration(math.Round(cpu*1e9))
	return m, nil
}

// value is r's value in unit (benchfmt may have tidied it: ttfb-ns reads
// as ttfb-sec), there at most once (once if required), finite and not
// negative.
func value(r *benchfmt.Result, unit string, required bool) (float64, error) {
	n, found := 0, 0.0
	for _, v := range r.Values {
		if v.OrigUnit == unit || (v.OrigUnit == "" && v.Unit == unit) {
			n++
			found = v.OrigValue
			if v.OrigUnit == "" {
				found = v.Value
			}
		}
	}
	switch {
	case n == 0 && required:
		return 0, fmt.Errorf("no %s value", unit)
	case n > 1:
		return 0, fmt.Errorf("%s given %d times", unit, n)
	case math.IsNaN(found) || math.IsInf(found, 0) || found < 0:
		return 0, fmt.Errorf("%s %g must be finite and not negative", unit, found)
	}
	return found, nil
}
