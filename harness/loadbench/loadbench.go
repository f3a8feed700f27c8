// Package loadbench measures loaders the way the SPDL document compares
// thread-based loading with PyTorch's process-based DataLoader: for each
// mode (goroutine: loader.New; process: procloader) and worker count,
// the time to first batch, the throughput after it, the peak resident memory
// of every process involved, and the CPU time they used.
//
// The consumer takes each batch and releases it at once: no training step,
// so the figures are the loader's alone, like the document's loader-only
// benchmark.
package loadbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/internal/rusage"
)

// The loader modes.
const (
	Goroutine = "goroutine" // loader.New at level.None: goroutine workers in this process
	Process   = "process"   // procloader: one worker process per worker, DataLoader style
)

// Modes lists the modes Measure knows.
var Modes = []string{Goroutine, Process}

// Config is what every point of a sweep shares.
type Config struct {
	// Pipeline is the dataset and transforms; Workers is set per point.
	Pipeline loader.Config
	// Batches is the number of batches each run loads, at least 2: the
	// first gives the time to first batch, the rest the throughput.
	Batches int
	// Worker says how to start a process-mode worker.
	Worker procloader.Options
	// SampleEvery is the period of the resident-memory sampler; 0 means
	// 10 ms.
	SampleEvery time.Duration
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	if c.Batches < 2 {
		return fmt.Errorf("batches %d: want at least 2 (the first is the time to first batch)", c.Batches)
	}
	if c.SampleEvery < 0 {
		return fmt.Errorf("sample period %v must not be negative", c.SampleEvery)
	}
	return c.Pipeline.Validate()
}

// Point is one mode and worker count.
type Point struct {
	Mode    string
	Workers int
}

// BenchName is the point's benchmark name, e.g.
// "BenchmarkLoaders/mode=process/workers=4".
func (p Point) BenchName() string {
	return fmt.Sprintf("BenchmarkLoaders/mode=%s/workers=%d", p.Mode, p.Workers)
}

// Measurement is one run of one point.
type Measurement struct {
	Point
	Batches int
	Samples int           // samples after the first batch
	TTFB    time.Duration // from the start of the loader's construction to the first batch
	// SamplesPerSec is the throughput after the first batch: samples of
	// batches 2..Batches over the time from the first batch to the last.
	SamplesPerSec float64
	// PeakRSS is the largest sum of VmRSS over this process and the
	// loader's worker processes, sampled every SampleEvery, in bytes.
	PeakRSS int64
	// CPU is the user and system time of this process during the run plus
	// that of every worker process.
	CPU time.Duration
}

// Benchmark is the measurement in benchmark format, in the units ttfb-ns,
// samples/s, peak-rss-B and cpu-s (Result).
func (m Measurement) Benchmark() *benchfmt.Result {
	return Result(m.BenchName(), m.Batches, m.TTFB, m.SamplesPerSec, m.PeakRSS, m.CPU)
}

// Result is a loader's figures as the benchmark result name over batches:
// the time to the first batch in ttfb-ns, the throughput after it in
// samples/s, the peak RSS in peak-rss-B (left out when peakRSS is
// negative: not sampled, as a peer cannot) and the CPU time in cpu-s.
// Measurement and a peer's measurement (harness/peer) both write
// their results through it.
func Result(name string, batches int, ttfb time.Duration, samplesPerSec float64, peakRSS int64, cpu time.Duration) *benchfmt.Result {
	r := &benchfmt.Result{Name: benchfmt.Name(name), Iters: batches}
	r.Values = append(r.Values,
		benchfmt.Value{Value: float64(ttfb.Nanoseconds()), Unit: "ttfb-ns"},
		benchfmt.Value{Value: samplesPerSec, Unit: "samples/s"})
	if peakRSS >= 0 {
		r.Values = append(r.Values, benchfmt.Value{Value: float64(peakRSS), Unit: "peak-rss-B"})
	}
	r.Values = append(r.Values, benchfmt.Value{Value: cpu.Seconds(), Unit: "cpu-s"})
	return r
}

// Sweep measures every mode at every worker count, modes outermost, calling
// each (if not nil) after every point.
func Sweep(ctx context.Context, c Config, modes []string, workers []int, each func(Measurement)) ([]Measurement, error) {
	var ms []Measurement
	for _, mode := range modes {
		for _, w := range workers {
			m, err := Measure(ctx, c, Point{Mode: mode, Workers: w})
			if err != nil {
				return ms, fmt.Errorf("mode=%s workers=%d: %w", mode, w, err)
			}
			ms = append(ms, m)
			if each != nil {
				each(m)
			}
		}
	}
	return ms, nil
}

// Measure runs one point: it builds the loader, takes every batch and
// releases it, then closes the loader.
func Measure(ctx context.Context, c Config, p Point) (Measurement, error) {
	m := Measurement{Point: p, Batches: c.Batches}
	cfg := c.Pipeline
	cfg.Workers = p.Workers
	cfg.Recorder = nil
	c.Pipeline = cfg
	if err := c.Validate(); err != nil {
		return m, err
	}
	if p.Mode != Goroutine && p.Mode != Process {
		return m, fmt.Errorf("unknown mode %q (want %s)", p.Mode, strings.Join(Modes, " or "))
	}
	// Leave as little of the previous run in this process's RSS as can be.
	runtime.GC()
	debug.FreeOSMemory()
	period := c.SampleEvery
	if period == 0 {
		period = 10 * time.Millisecond
	}
	rss := startSampler(period)
	defer rss.stop()
	cpu0, err := rusage.ProcessCPU()
	if err != nil {
		return m, err
	}

	start := time.Now()
	l, pl, err := open(ctx, c, p.Mode, rss)
	if err != nil {
		return m, err
	}
	defer l.Close()
	first, last, err := drain(ctx, l, c.Batches)
	if err != nil {
		return m, err
	}
	rss.sample()
	m.PeakRSS = rss.stop()
	if err := l.Close(); err != nil {
		return m, err
	}
	cpu1, err := rusage.ProcessCPU()
	if err != nil {
		return m, err
	}
	m.CPU = cpu1 - cpu0
	if pl != nil {
		m.CPU += pl.ChildCPU()
	}
	m.TTFB = first.Sub(start)
	m.Samples = (c.Batches - 1) * cfg.Batch
	if d := last.Sub(first); d > 0 {
		m.SamplesPerSec = float64(m.Samples) / d.Seconds()
	}
	return m, nil
}

// open starts the loader of mode at c's settings: goroutines in this
// process, or worker processes (pl, whose PIDs rss then samples too).
func open(ctx context.Context, c Config, mode string, rss *sampler) (l batching.Loader, pl *procloader.Loader, err error) {
	switch mode {
	case Goroutine:
		l, err = loader.New(ctx, level.None, c.Pipeline, c.Batches)
	case Process:
		pl, err = procloader.NewWithOptions(ctx, c.Pipeline, c.Batches, c.Worker)
		if err == nil {
			l = pl
			rss.setPIDs(pl.PIDs())
		}
	}
	return l, pl, err
}

// drain takes n batches from l, releasing each, and checks that l then
// ends; it returns when the first and the last batch arrived.
func drain(ctx context.Context, l batching.Loader, n int) (first, last time.Time, err error) {
	for k := range n {
		b, err := l.Next(ctx)
		if err != nil {
			return first, last, fmt.Errorf("batch %d: %w", k, err)
		}
		if k == 0 {
			first = time.Now()
		}
		l.Release(b)
	}
	last = time.Now()
	if _, err := l.Next(ctx); !errors.Is(err, io.EOF) {
		return first, last, fmt.Errorf("after the last batch: %v, want EOF", err)
	}
	return first, last, nil
}

// sampler keeps the peak of the summed VmRSS of this process and pids.
type sampler struct {
	mu   sync.Mutex
	pids []int
	peak int64

	quit chan struct{}
	done chan struct{}
	once sync.Once
}

func startSampler(period time.Duration) *sampler {
	s := &sampler{quit: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				s.sample()
			case <-s.quit:
				return
			}
		}
	}()
	return s
}

func (s *sampler) setPIDs(pids []int) {
	s.mu.Lock()
	s.pids = pids
	s.mu.Unlock()
	s.sample()
}

// sample adds one sample; processes already gone count as zero.
func (s *sampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := vmRSS(os.Getpid())
	for _, pid := range s.pids {
		sum += vmRSS(pid)
	}
	s.peak = max(s.peak, sum)
}

// stop stops the sampler and returns the peak.
func (s *sampler) stop() int64 {
	s.once.Do(func() { close(s.quit); <-s.done })
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// vmRSS is the resident set size of pid in bytes, from /proc/pid/status,
// or 0 if it cannot be read.
func vmRSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	return parseVmRSS(string(data))
}

func parseVmRSS(status string) int64 {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// WriteTable writes the measurements as a table, one row per point.
func WriteTable(w io.Writer, ms []Measurement) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tworkers\tTTFB (ms)\tsamples/s\tpeak RSS (MiB)\tCPU (s)\t")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.1f\t%.2f\t\n",
			m.Mode, m.Workers, float64(m.TTFB)/1e6, m.SamplesPerSec, float64(m.PeakRSS)/(1<<20), m.CPU.Seconds())
	}
	return tw.Flush()
}

// Documented is the SPDL document's loader-only comparison: time to first
// batch (seconds) and throughput (items/s) at 1, 2, 4, 8, 16 and 32 workers,
// for SPDL (threads) and PyTorch's DataLoader (processes).
var Documented = struct {
	Workers                 []int
	SPDLTTFB, PyTorchTTFB   []float64
	SPDLItems, PyTorchItems []float64
}{
	Workers:      []int{1, 2, 4, 8, 16, 32},
	SPDLTTFB:     []float64{3.86, 3.57, 3.55, 3.95, 3.72, 4.07},
	PyTorchTTFB:  []float64{3.49, 6.79, 13.32, 26.6, 55.32, 107.43},
	SPDLItems:    []float64{251, 455, 774, 1147, 1517, 1764},
	PyTorchItems: []float64{265, 410, 446, 321, 173, 92},
}

// WriteDocumented writes the document's figures as a table.
func WriteDocumented(w io.Writer) error {
	d := Documented
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\tSPDL TTFB (s)\tPyTorch TTFB (s)\tSPDL items/s\tPyTorch items/s\t")
	for i, n := range d.Workers {
		fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t%.0f\t%.0f\t\n", n, d.SPDLTTFB[i], d.PyTorchTTFB[i], d.SPDLItems[i], d.PyTorchItems[i])
	}
	return tw.Flush()
}
