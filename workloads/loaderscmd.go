package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/command"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Command is headspace loaders.
func (Loaders) Command() cli.Command {
	return cli.Command{Name: "loaders", Summary: "compare goroutine and process (DataLoader-style) loaders: TTFB, samples/s, RSS, CPU", Runs: []string{"Loaders"}, Run: runLoaders}
}

const loadersUsage = `
Compares the goroutine loader (the ladder's pipeline) with a process-based
loader built as PyTorch's DataLoader is (one worker process per worker, each
building whole batches), as the SPDL document compares threads with
processes. For each mode and worker count it measures the time to first
batch (from the loader's construction to the first batch), the samples/s of
the remaining batches, the peak resident memory of all processes together
and their CPU seconds. No training step runs: each batch is released as soon
as it arrives.

--data DIR reads a dataset on disk (headspace dataset write, an ImageFolder
or WebDataset shards; docs/real-data.md): the load stage
becomes fetch then decode, each with its statistics; --page-cache and
--max-failures as in headspace ladder.`

// loadersFlags are loaders' flags.
type loadersFlags struct {
	modes           string
	workers         *loader.Workers
	batches, batch  int
	rawSize         string
	crop            int
	impl            string
	prefetch        int
	seed            uint64
	out, plotPrefix string
	force           bool
	cpuProfile      string
	df              loader.DataFlags
}

// register defines f's flags on fs.
func (f *loadersFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.modes, "mode", "goroutine,process", "comma-separated loader `modes`: goroutine, process")
	f.workers = loader.WorkersFlag(fs, true, "comma-separated worker `counts`", 1, 2, 4, 8, 16, 32)
	fs.IntVar(&f.batches, "batches", 20, "`batches` per run, at least 2 (the first is the time to first batch)")
	fs.IntVar(&f.batch, "batch", 32, "samples per `batch`")
	fs.StringVar(&f.rawSize, "raw-size", "512", "raw image `size`, N or WxH")
	fs.IntVar(&f.crop, "crop", 224, "random crop `side`")
	fs.StringVar(&f.impl, "transforms", "fast", "transform `implementation`: naive or fast")
	fs.IntVar(&f.prefetch, "prefetch", 2, "`batches` requested ahead per worker (DataLoader's prefetch_factor)")
	fs.Uint64Var(&f.seed, "seed", 1, "dataset and transform `seed`")
	fs.StringVar(&f.out, "out", "", "benchmark-format result `file` (written atomically)")
	fs.StringVar(&f.plotPrefix, "plot", "", "write `prefix`-ttfb.png and prefix-throughput.png")
	fs.BoolVar(&f.force, "force", false, "let --out replace a results file holding more results")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to `file` (samples carry stage labels: go tool pprof -tags)")
	f.df.Register(fs)
}

func runLoaders(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("loaders", loadersUsage, stdout)
	var f loadersFlags
	f.register(fs)
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	defer f.df.Close() // the --link, if one was started
	exp, err := f.experiment(ctx)
	if err != nil {
		return err
	}
	if err := cli.CheckOutputs(cli.Figure(cli.Prefixed(f.plotPrefix, "-ttfb.png")), cli.Figure(cli.Prefixed(f.plotPrefix, "-throughput.png")),
		cli.Output{Path: f.cpuProfile, Kind: atomicfile.Profile}); err != nil {
		return err
	}
	return f.run(ctx, exp, driver.Output{Path: f.out, Benchmarks: []string{"Loaders"}, Force: f.force, Beside: true}, stdout, stderr)
}

// experiment is the sweep f sets, checked: one run of each point, no
// training, what the loaders alone do.
func (f *loadersFlags) experiment(ctx context.Context) (Loaders, error) {
	var exp Loaders
	modes, err := cli.ParseList("--mode", f.modes, loadbench.Modes)
	if err != nil {
		return exp, err
	}
	workers, err := f.workers.Counts()
	if err != nil {
		return exp, err
	}
	if _, err := cli.ParseList("--transforms", f.impl, transforms.Names); err != nil {
		return exp, err
	}
	w, h, err := cli.ParseSize("--raw-size", f.rawSize)
	if err != nil {
		return exp, err
	}
	if err := cli.FirstErr(cli.InRange("--batches", f.batches, 2, cli.MaxBatches), cli.InRange("--prefetch", f.prefetch, 1, loader.MaxPrefetch)); err != nil {
		return exp, err
	}
	cfg := loader.DefaultConfig()
	cfg.Dataset.Width, cfg.Dataset.Height, cfg.Dataset.Seed = w, h, f.seed
	if cfg, err = f.df.Resolve(ctx, cfg); err != nil {
		return exp, err
	}
	cfg.Transforms.Crop = f.crop
	cfg.Impl, cfg.Batch, cfg.Prefetch, cfg.Workers = f.impl, f.batch, f.prefetch, slices.Max(workers)
	if err := cfg.Validate(); err != nil {
		return exp, cli.UsageError{Msg: err.Error()}
	}
	// Goroutines share one pipeline; every worker process holds its own
	// samples and its prefetched batches.
	one := cfg
	one.Workers = 1
	if err := cli.FirstErr(command.FitsPipeline(cfg, 1, 0), command.FitsPipeline(one, cfg.Workers, 0)); err != nil {
		return exp, err
	}
	return Loaders{Config: loadbench.Config{Pipeline: cfg, Batches: f.batches}, Modes: modes, Workers: workers, Repeats: 1}, nil
}

// run runs the sweep exp, its process workers this binary, and prints
// and writes its outcome.
func (f *loadersFlags) run(ctx context.Context, exp Loaders, resultsOut driver.Output, stdout, stderr io.Writer) error {
	var env []resultfile.Config
	var ms []loadbench.Measurement
	measure := func(ctx context.Context, _ *driver.Hooks) ([]*benchfmt.Result, error) {
		if note := exp.Config.PrefetchNote(slices.Max(exp.Workers)); note != "" {
			fmt.Fprintf(stderr, "headspace loaders: note: %s\n", note)
		}
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the worker binary: %w", err)
		}
		// Read before the runs: it may start git, whose CPU is no loader's.
		if f.out != "" {
			env = driver.Settings("none", exp.Settings())
		}
		stopProfile, err := cli.StartCPUProfile(f.cpuProfile)
		if err != nil {
			return nil, err
		}
		o, err := exp.MeasureEach(ctx, Env{Worker: procloader.Options{Exe: exe}}, func(m loadbench.Measurement) {
			fmt.Fprintf(stderr, "%s: TTFB %v, %.0f samples/s\n", m.BenchName(), m.TTFB.Round(1e5), m.SamplesPerSec)
		})
		if perr := stopProfile(err != nil); err == nil {
			err = perr
		}
		if err != nil {
			return nil, err
		}
		ms = o.Measurements
		cfg := exp.Config.Pipeline
		fmt.Fprintf(stdout, "batch %d, raw %dx%d, crop %d, %s transforms, %d batches per run\n%s\n", f.batch, cfg.Dataset.Width, cfg.Dataset.Height, f.crop, f.impl, f.batches, loader.Describe(ctx, cfg))
		return exp.Codec().Encode(o), loadbench.WriteText(stdout, ms)
	}
	o, err := driver.Run(ctx, driver.Job{Settings: func() []resultfile.Config { return env }, Measure: measure}, resultsOut)
	if err != nil {
		return err
	}
	if f.out != "" {
		cli.KeptNote(stdout, f.out, o.Path)
		fmt.Fprintf(stdout, "\nresults: %s\n", o.Path)
	}
	if f.plotPrefix != "" {
		return loadbench.SavePlots(stdout, ms, f.plotPrefix, fmt.Sprintf("loaders: batch %d, raw %s, crop %d, %s", f.batch, f.rawSize, f.crop, f.impl))
	}
	return nil
}
