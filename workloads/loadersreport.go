package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/preflight"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// loadersCommand is what headspace loaders' flags set beside the sweep:
// the data flags, a CPU profile and the plots' prefix.
type loadersCommand struct {
	df                     loader.DataFlags
	plotPrefix, cpuProfile string
}

// Flags are loaders': the sweep's, their defaults DefaultLoaders'.
func (l *Loaders) Flags(fs *flag.FlagSet) {
	p := &l.Config.Pipeline
	fs.Var(listFlag{"mode", &l.Modes, loadbench.Modes}, "mode", "comma-separated loader `modes`: goroutine, process")
	loader.WorkersListVar(fs, &l.Workers, "comma-separated worker `counts`")
	fs.IntVar(&l.Config.Batches, "batches", l.Config.Batches, "`batches` per run, at least 2 (the first is the time to first batch)")
	fs.IntVar(&p.Batch, "batch", p.Batch, "samples per `batch`")
	fs.Var(sizeFlag{"raw-size", &p.Dataset.Width, &p.Dataset.Height}, "raw-size", "raw image `size`, N or WxH")
	fs.IntVar(&p.Transforms.Crop, "crop", p.Transforms.Crop, "random crop `side`")
	fs.StringVar(&p.Impl, "transforms", p.Impl, "transform `implementation`: naive or fast")
	fs.IntVar(&p.Prefetch, "prefetch", p.Prefetch, "`batches` requested ahead per worker (DataLoader's prefetch_factor)")
	fs.Uint64Var(&p.Dataset.Seed, "seed", p.Dataset.Seed, "dataset and transform `seed`")
	fs.IntVar(&l.Repeats, "repeats", l.Repeats, "`times` the sweep runs")
	fs.IntVar(&l.TrainRuns, "train-runs", l.TrainRuns, "`runs` per mode of the training loop fed by each mode's loader (0: none)")
	fs.StringVar(&l.cmd.plotPrefix, "plot", "", "write `prefix`-ttfb.png and prefix-throughput.png")
	fs.StringVar(&l.cmd.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to `file` (samples carry stage labels: go tool pprof -tags)")
	l.cmd.df.Register(fs)
}

// The bounds of loaders' own flags beside the pipeline's.
var _ = cli.Declare(map[string]cli.Bound{
	"loaders repeats":    {Lo: 1, Hi: cli.MaxCount},
	"loaders train-runs": {Lo: 0, Hi: cli.MaxCount},
	"loaders crop":       {Lo: 1, Hi: 32768},
	"loaders batches":    {Lo: 2, Hi: cli.MaxBatches},
})

// Outputs are the plots; the CPU profile is a run's.
func (l *Loaders) Outputs() ([]string, error) {
	return []string{"plot"}, cli.CheckOutputs(cli.Figure(cli.Prefixed(l.cmd.plotPrefix, "-ttfb.png")), cli.Figure(cli.Prefixed(l.cmd.plotPrefix, "-throughput.png")),
		cli.Output{Path: l.cmd.cpuProfile, Kind: atomicfile.Profile})
}

// Prepare checks the sweep, prints what it runs and starts the CPU
// profile; its process workers are this binary.
func (l *Loaders) Prepare(ctx context.Context, stdout, stderr io.Writer) (s Setup, err error) {
	s.Close = func() { l.cmd.df.Close() } // the --link, if one was started
	if _, err := cli.ParseList("--transforms", l.Config.Pipeline.Impl, transforms.Names); err != nil {
		return s, err
	}
	if err := cli.InRange("--prefetch", l.Config.Pipeline.Prefetch, 1, loader.MaxPrefetch); err != nil {
		return s, err
	}
	cfg := &l.Config.Pipeline
	if *cfg, err = l.cmd.df.Resolve(ctx, *cfg); err != nil {
		return s, err
	}
	cfg.Workers = slices.Max(l.Workers)
	if err := cfg.Validate(); err != nil {
		return s, cli.UsageError{Msg: err.Error()}
	}
	// Goroutines share one pipeline; every worker process holds its own
	// samples and its prefetched batches.
	one := *cfg
	one.Workers = 1
	if err := cli.FirstErr(preflight.FitsPipeline(*cfg, 1, 0), preflight.FitsPipeline(one, cfg.Workers, 0)); err != nil {
		return s, err
	}
	if note := l.Config.PrefetchNote(cfg.Workers); note != "" {
		fmt.Fprintf(stderr, "headspace loaders: note: %s\n", note)
	}
	exe, err := os.Executable()
	if err != nil {
		return s, fmt.Errorf("finding the worker binary: %w", err)
	}
	stop, err := cli.StartCPUProfile(l.cmd.cpuProfile)
	if err != nil {
		return s, err
	}
	s.Close = func() { stop(false); l.cmd.df.Close() }
	fmt.Fprintf(stdout, "batch %d, raw %dx%d, crop %d, %s transforms, %d batches per run\n%s\n", cfg.Batch, cfg.Dataset.Width, cfg.Dataset.Height, cfg.Transforms.Crop, cfg.Impl, l.Config.Batches, loader.Describe(ctx, *cfg))
	s.Device = func() string { return "none" }
	if l.TrainRuns > 0 {
		s.Device = nil // emulated
	}
	s.Env = Env{Worker: procloader.Options{Exe: exe}, Result: func(r *benchfmt.Result) error {
		if ttfb, ok := resultfile.Value(r, "ttfb-ns"); ok {
			sps, _ := resultfile.Value(r, "samples/s")
			fmt.Fprintf(stderr, "%s: TTFB %v, %.0f samples/s\n", r.Name, time.Duration(ttfb).Round(1e5), sps)
		}
		return nil
	}}
	return s, nil
}

// Report is the table of the loaders' runs beside the document's, the
// training runs, and the plots.
func (l *Loaders) Report(o LoadersOutcome, w io.Writer) error {
	if err := loadbench.WriteText(w, o.Measurements); err != nil {
		return err
	}
	for _, t := range o.Training {
		fmt.Fprintf(w, "training fed by the %s loader, %d workers: %.3f steps/s\n", t.Mode, t.Workers, t.StepsPerSec)
	}
	if l.cmd.plotPrefix == "" {
		return nil
	}
	get := func(key string) string { return setting(o.Settings, key) }
	return loadbench.SavePlots(w, o.Measurements, l.cmd.plotPrefix, fmt.Sprintf("loaders: batch %s, raw %s, crop %s, %s", get("batch"), get("raw-size"), get("crop"), get("transforms")))
}
