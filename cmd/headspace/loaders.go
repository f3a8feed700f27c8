package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/workloads"
)

func init() {
	register(command{name: "loaders", summary: "compare goroutine and process (DataLoader-style) loaders: TTFB, samples/s, RSS, CPU", runs: []workloads.Experiment{workloads.Loaders{}}, run: runLoaders})
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

func runLoaders(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("loaders", loadersUsage, stdout)
	modesFlag := fs.String("mode", "goroutine,process", "comma-separated loader `modes`: goroutine, process")
	workersFlag := fs.String("workers", "1,2,4,8,16,32", "comma-separated worker `counts`")
	batches := fs.Int("batches", 20, "`batches` per run, at least 2 (the first is the time to first batch)")
	batch := fs.Int("batch", 32, "samples per `batch`")
	rawSize := fs.String("raw-size", "512", "raw image `size`, N or WxH")
	crop := fs.Int("crop", 224, "random crop `side`")
	impl := fs.String("transforms", "fast", "transform `implementation`: naive or fast")
	prefetch := fs.Int("prefetch", 2, "`batches` requested ahead per worker (DataLoader's prefetch_factor)")
	seed := fs.Uint64("seed", 1, "dataset and transform `seed`")
	out := fs.String("out", "", "benchmark-format result `file` (written atomically)")
	plotPrefix := fs.String("plot", "", "write `prefix`-ttfb.png and prefix-throughput.png")
	force := fs.Bool("force", false, "let --out replace a results file holding more results")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the runs to `file` (samples carry stage labels: go tool pprof -tags)")
	var df dataFlags
	df.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	modes, err := parseList("--mode", *modesFlag, loadbench.Modes)
	if err != nil {
		return err
	}
	workers, err := parseInts("--workers", *workersFlag)
	if err != nil {
		return err
	}
	if _, err := parseList("--transforms", *impl, transforms.Names); err != nil {
		return err
	}
	w, h, err := parseSize("--raw-size", *rawSize)
	if err != nil {
		return err
	}
	if err := firstErr(inRange("--batches", *batches, 2, maxBatches), inRange("--prefetch", *prefetch, 1, loader.MaxPrefetch)); err != nil {
		return err
	}
	cfg := loader.DefaultConfig()
	cfg.Dataset.Width, cfg.Dataset.Height, cfg.Dataset.Seed = w, h, *seed
	defer df.close() // the --link, if one was started
	if cfg, err = df.apply(ctx, cfg); err != nil {
		return err
	}
	cfg.Transforms.Crop = *crop
	cfg.Impl, cfg.Batch, cfg.Prefetch, cfg.Workers = *impl, *batch, *prefetch, slices.Max(workers)
	if err := cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	// Goroutines share one pipeline; every worker process holds its own
	// samples and its prefetched batches.
	one := cfg
	one.Workers = 1
	if err := firstErr(fitsPipeline(cfg, 1, 0), fitsPipeline(one, cfg.Workers, 0)); err != nil {
		return err
	}
	resultsOut := driver.Output{Path: *out, Benchmarks: []string{"Loaders"}, Force: *force, Beside: true}
	if err := firstErr(checkOutputs(figure(prefixed(*plotPrefix, "-ttfb.png")), figure(prefixed(*plotPrefix, "-throughput.png")),
		output{*cpuProfile, atomicfile.Profile}), driver.Check(resultsOut)); err != nil {
		return err
	}
	if maxW := slices.Max(workers); *batches <= *prefetch*maxW+1 {
		fmt.Fprintf(stderr, "headspace loaders: note: with %d workers, %d batches are requested at start; "+
			"--batches %d leaves samples/s measuring mostly prefetched batches\n", maxW, *prefetch*maxW, *batches)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the worker binary: %w", err)
	}
	// One run of the sweep, no training: what the loaders alone do.
	exp := workloads.Loaders{Config: loadbench.Config{Pipeline: cfg, Batches: *batches}, Modes: modes, Workers: workers, Repeats: 1}

	// Read before the runs: it may start git, whose CPU is no loader's.
	var env []resultfile.Config
	if *out != "" {
		env = driver.Settings("none", exp.Settings())
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	run := workloads.Env{Worker: procloader.Options{Exe: exe}}
	var ms []loadbench.Measurement
	run.Details.Loader = func(m loadbench.Measurement) {
		ms = append(ms, m)
		fmt.Fprintf(stderr, "%s: TTFB %v, %.0f samples/s\n", m.BenchName(), m.TTFB.Round(1e5), m.SamplesPerSec)
	}
	rs, err := exp.Run(ctx, run)
	if perr := stopProfile(err != nil); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "batch %d, raw %dx%d, crop %d, %s transforms, %d batches per run\n%s\n", *batch, cfg.Dataset.Width, cfg.Dataset.Height, *crop, *impl, *batches, describe(ctx, cfg))
	if err := loadbench.WriteTable(stdout, ms); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nSPDL document (ImageNet, loader only):\n\n")
	if err := loadbench.WriteDocumented(stdout); err != nil {
		return err
	}
	if *out != "" {
		wrote, err := driver.Write(resultsOut, env, rs, false)
		if err != nil {
			return err
		}
		keptNote(stdout, *out, wrote)
		fmt.Fprintf(stdout, "\nresults: %s\n", wrote)
	}
	if *plotPrefix != "" {
		paths, err := loadbench.Plots(ms, *plotPrefix, fmt.Sprintf("loaders: batch %d, raw %s, crop %d, %s", *batch, *rawSize, *crop, *impl))
		if err != nil {
			return err
		}
		for _, p := range paths {
			fmt.Fprintf(stdout, "plot: %s\n", p)
		}
	}
	return nil
}
