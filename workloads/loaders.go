package workloads

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/train"
)

// Loaders is SPDL's thread-based loading against PyTorch's process-based
// DataLoader (document 002), with goroutines for threads: time to first
// batch, samples/s, peak resident memory and CPU time per mode and worker
// count, Repeats times over; then the training loop fed by each mode's
// loader, for the document's "2× faster training".
type Loaders struct {
	Config  loadbench.Config
	Modes   []string
	Workers []int
	// Repeats is the runs of every point, outermost, so that a slow spell
	// of a shared machine spreads over every point instead of spoiling one.
	Repeats int
	// Train is the training comparison's pipeline (the document 003's),
	// TrainSteps its measured steps and TrainRuns its runs per mode; no
	// comparison when TrainRuns is 0.
	Train      loader.Config
	TrainSteps int
	TrainRuns  int
	// cmd is what headspace loaders' flags set beside the sweep.
	cmd loadersCommand
}

// The article's claims for SPDL's thread-based loading over PyTorch's
// processes: 3× the loading throughput, 2× faster training, half the
// memory.
const (
	LoadersDocumentThroughput = 3.0
	LoadersDocumentTraining   = 2.0
	LoadersDocumentMemory     = 0.5
)

// DefaultLoaders is SPDL's sweep: both modes at 1 to 32 workers, batches
// of 32 of 512² images cropped to 224 with the fast transforms, 100
// batches a run, 3 runs; the training loop on the document 003's
// pipeline (one worker per core) for 10 steps, twice per mode.
func DefaultLoaders() Loaders {
	p := loader.DefaultConfig()
	p.Dataset.Width, p.Dataset.Height = 512, 512
	p.Transforms.Crop, p.Batch, p.Impl, p.Workers = 224, 32, transforms.Fast, 1
	t := loader.DefaultConfig()
	t.Workers = runtime.GOMAXPROCS(0)
	return Loaders{
		Config:  loadbench.Config{Pipeline: p, Batches: 100},
		Modes:   loadbench.Modes,
		Workers: []int{1, 2, 4, 8, 16, 32},
		Repeats: 3,
		Train:   t, TrainSteps: 10, TrainRuns: 2,
	}
}

// QuickLoaders runs both modes at 1 and 2 workers on tiny batches.
func QuickLoaders() Loaders {
	l := DefaultLoaders()
	p := &l.Config.Pipeline
	p.Dataset.Width, p.Dataset.Height, p.Transforms.Crop, p.Batch = 32, 32, 8, 4
	l.Config.Batches, l.Workers, l.Repeats = 3, []int{1, 2}, 1
	t := &l.Train
	t.Dataset.Width, t.Dataset.Height, t.Transforms.Crop, t.Batch = 64, 64, 16, 4
	l.TrainSteps, l.TrainRuns = 2, 1
	return l
}

// Name is "Loaders": BenchmarkLoaders/mode=…/workers=…, and
// BenchmarkLoadersTraining/mode=…/workers=….
func (Loaders) Name() string { return "Loaders" }

// Document is "002".
func (Loaders) Document() string { return "002" }

// trainConfig is the training comparison's loop: warm up past the
// batches either loader prepares ahead (the process loader asks Prefetch
// batches of each worker at start), so that the measured steps are the
// steady state of both, not a drain of a head start.
func (l Loaders) trainConfig() train.Config {
	return train.Config{Steps: l.TrainSteps, Warmup: l.Train.Prefetch*l.Train.Workers + 1}
}

// Settings is the configuration block of the comparison's result file:
// the loaders' pipeline and sweep, then the training comparison's, which
// a sweep without one (TrainRuns 0, as the command's) leaves out.
func (l Loaders) Settings() []resultfile.Config {
	rc := l.trainConfig()
	t := l.Train
	out := append(l.Config.Pipeline.Settings(),
		resultfile.Config{Key: "transforms", Value: l.Config.Pipeline.Impl},
		resultfile.Config{Key: "modes", Value: strings.Join(l.Modes, ",")},
		resultfile.Config{Key: "workers", Value: joinInts(l.Workers)},
		resultfile.Config{Key: "batches", Value: fmt.Sprint(l.Config.Batches)},
		resultfile.Config{Key: "repeats", Value: fmt.Sprint(l.Repeats)},
	)
	if l.TrainRuns == 0 {
		return out
	}
	return append(out,
		resultfile.Config{Key: "train-raw-size", Value: fmt.Sprintf("%dx%d", t.Dataset.Width, t.Dataset.Height)},
		resultfile.Config{Key: "train-crop", Value: fmt.Sprint(t.Transforms.Crop)},
		resultfile.Config{Key: "train-batch", Value: fmt.Sprint(t.Batch)},
		resultfile.Config{Key: "train-transforms", Value: t.Impl},
		resultfile.Config{Key: "train-workers", Value: fmt.Sprint(t.Workers)},
		resultfile.Config{Key: "train-steps", Value: fmt.Sprint(rc.Steps)},
		resultfile.Config{Key: "train-warmup", Value: fmt.Sprint(rc.Warmup)},
		resultfile.Config{Key: "train-runs", Value: fmt.Sprint(l.TrainRuns)},
	)
}

// LoadersOutcome is what a Loaders measured: every measurement of its
// sweeps, repeat after repeat, then every training run.
type LoadersOutcome struct {
	// Measurements are the loaders' measurements; a decoded one has no
	// Samples (the records hold its samples/s only).
	Measurements []loadbench.Measurement
	Training     []LoadersTraining
	// Settings are the result file's configuration lines, which the
	// command gives it (settled); the codec reads records alone.
	Settings []resultfile.Config
}

// settle gives o its file's settings.
func (o *LoadersOutcome) settle(s []resultfile.Config) { o.Settings = s }

// LoadersTraining is one run of the training loop fed by a mode's loader.
type LoadersTraining struct {
	Mode    string
	Workers int
	// Steps are the measured steps (at least 1: the record's iterations).
	Steps       int
	StepsPerSec float64
}

// Measure is MeasureEach with no callback.
func (l Loaders) Measure(ctx context.Context, env Env) (LoadersOutcome, error) {
	return l.MeasureEach(ctx, env, nil)
}

// MeasureEach measures every mode at every worker count, Repeats times
// over, passing each loadbench.Measurement to each (if not nil) as it is
// made, then trains on env's device fed by each mode's loader TrainRuns
// times over. Process workers start as env.Worker says. each is an
// argument of the one method that streams, rather than a field of the
// specification (the values that change a number) or of Env (what every
// experiment shares).
func (l Loaders) MeasureEach(ctx context.Context, env Env, each func(loadbench.Measurement)) (LoadersOutcome, error) {
	var out LoadersOutcome
	if env.Worker.Exe != "" {
		l.Config.Worker = env.Worker
	}
	if err := l.Config.Validate(); err != nil {
		return out, err
	}
	for rep := range l.Repeats {
		env.start(fmt.Sprintf("loaders, run %d/%d", rep+1, l.Repeats))
		ms, err := loadbench.Sweep(ctx, l.Config, l.Modes, l.Workers, each)
		if err != nil {
			return out, err // a sweep's measurements are kept whole or not at all
		}
		out.Measurements = append(out.Measurements, ms...)
	}
	if l.TrainRuns == 0 {
		return out, nil
	}
	dev, err := env.device().Open(true)
	if err != nil {
		return out, fmt.Errorf("opening the device: %w", err)
	}
	defer dev.Close()
	rc := l.trainConfig()
	for run := range l.TrainRuns {
		for _, mode := range l.Modes {
			env.start(fmt.Sprintf("training, %s loader, run %d/%d", mode, run+1, l.TrainRuns))
			var ld batching.Loader
			var err error
			n := rc.Warmup + rc.Steps
			if mode == loadbench.Process {
				ld, err = procloader.NewWithOptions(ctx, l.Train, n, l.Config.Worker)
			} else {
				ld, err = loader.New(ctx, level.None, l.Train, n)
			}
			if err != nil {
				return out, fmt.Errorf("training with the %s loader: %w", mode, err)
			}
			r, err := train.Run(ctx, ld, dev, l.Train.Batch, rc)
			if cerr := ld.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return out, fmt.Errorf("training with the %s loader: %w", mode, err)
			}
			out.Training = append(out.Training, LoadersTraining{Mode: mode, Workers: l.Train.Workers, Steps: max(r.Steps, 1), StepsPerSec: r.StepsPerSec()})
		}
	}
	return out, nil
}

// Run measures the sweep and the training and returns their records,
// each measurement's passed to env.Result as it is made (headspace
// loaders' live line), the training runs' at the end.
func (l Loaders) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	var rerr error
	o, err := l.MeasureEach(ctx, env, func(m loadbench.Measurement) {
		if rerr == nil {
			rerr = env.result(m.Benchmark())
		}
	})
	recs := LoadersCodec.Encode(o)
	for _, r := range recs[len(o.Measurements):] {
		if rerr == nil {
			rerr = env.result(r)
		}
	}
	return recs, cmp.Or(rerr, err)
}

// Codec is LoadersCodec.
func (Loaders) Codec() Codec[LoadersOutcome] { return LoadersCodec }

var _ Typed[LoadersOutcome] = Loaders{}

// LoadersCodec is a Loaders's records codec: a record a measurement,
// BenchmarkLoaders/mode=…/workers=… with ttfb-ns, samples/s, peak-rss-B
// and cpu-s (loadbench.Measurement.Benchmark), then a record a training
// run, BenchmarkLoadersTraining/mode=…/workers=… with steps/s.
var LoadersCodec = Codec[LoadersOutcome]{
	Experiment: "Loaders",
	Keys:       map[string][]string{"Loaders": {"mode", "workers"}, "LoadersTraining": {"mode", "workers"}},
	Order:      []string{"Loaders", "LoadersTraining"},
	encode: func(o LoadersOutcome) []*benchfmt.Result {
		out := recordsOf(o.Measurements, loadbench.Measurement.Benchmark)
		return append(out, recordsOf(o.Training, func(t LoadersTraining) *benchfmt.Result {
			return newRecord(fmt.Sprintf("LoadersTraining/mode=%s/workers=%d", t.Mode, t.Workers), 1, t.Steps, benchfmt.Value{Value: t.StepsPerSec, Unit: "steps/s"})
		})...)
	},
	decode: func(recs []Record) (LoadersOutcome, error) {
		var out LoadersOutcome
		for _, rec := range recs {
			workers, err := rec.count("workers", false)
			if err != nil {
				return out, err
			}
			if rec.Benchmark == "LoadersTraining" {
				sps, err := rec.Value("steps/s")
				if err != nil {
					return out, err
				}
				out.Training = append(out.Training, LoadersTraining{Mode: rec.Keys["mode"], Workers: workers, Steps: rec.Iters, StepsPerSec: sps})
				continue
			}
			m := loadbench.Measurement{Point: loadbench.Point{Mode: rec.Keys["mode"], Workers: workers}, Batches: rec.Iters, PeakRSS: -1}
			if m.TTFB, m.SamplesPerSec, m.CPU, err = rec.loading(); err != nil {
				return out, err
			}
			if rss, ok := resultfile.Value(rec.Result, "peak-rss-B"); ok {
				m.PeakRSS = int64(rss)
			}
			out.Measurements = append(out.Measurements, m)
		}
		return out, nil
	},
}
