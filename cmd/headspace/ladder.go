package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/device"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/progress"
	"github.com/headspace-bench/headspace/harness/results"
)

func init() {
	register(command{name: "ladder", summary: "run the caching ladder: steps/s with data cached at each stage", run: runLadder})
}

const ladderUsage = `
Runs the document's training loop with data cached at each level of the
caching ladder (none, raw, sample, host, device) for each worker count and
transform implementation, prints steps/s per level with each level's ratio
to the device-cached upper bound and the stage each drop is attributed to,
and writes the same figures in Go benchmark format (benchstat reads it).

With --transfer uint8 the batches carry the masked crop as uint8 and the
device runs ConvertColor and Scale (the document's "postpone int8 to float32
datatype conversions to the GPU"): a quarter of the bytes to upload, plus a
conversion kernel per step, which the emulated device times at the assumed
--convert-gbps. Those results are named …/transfer=uint8.

An existing --out file from the same machine is resumed: points that already
have --count results are skipped.`

// pipelineFlags are the flags shared by every command that runs the pipeline.
type pipelineFlags struct {
	batch, crop, prefetch int
	rawSize               string
	seed                  uint64
	step                  time.Duration
	dev                   string
	pinned                bool
	pinnedBW, pageableBW  float64
	// transfer and convertBW are set by the ladder command's --transfer
	// and --convert-gbps; other commands leave float32 and the default.
	transfer  string
	convertBW float64
}

func (f *pipelineFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.batch, "batch", 256, "samples per `batch`")
	fs.StringVar(&f.rawSize, "raw-size", "1024", "raw image `size`, N or WxH (the document: 1024, then 256)")
	fs.IntVar(&f.crop, "crop", 256, "random crop `side`")
	fs.IntVar(&f.prefetch, "prefetch", 2, "`batches` prepared ahead of the training loop")
	fs.Uint64Var(&f.seed, "seed", 1, "dataset and transform `seed`")
	fs.DurationVar(&f.step, "step", 290*time.Millisecond, "emulated device: `time` of one training step (document: 1/3.45 s)")
	fs.StringVar(&f.dev, "device", "emulated", "`device`: emulated or cuda")
	fs.BoolVar(&f.pinned, "pinned", true, "upload from pinned host memory (false: pageable)")
	fs.Float64Var(&f.pinnedBW, "pinned-gbps", 24, "emulated device: pinned host-to-device `GB/s`")
	fs.Float64Var(&f.pageableBW, "pageable-gbps", 12, "emulated device: pageable host-to-device `GB/s`")
}

// config turns the flags into a pipeline configuration with the given
// workers and implementation, checked.
func (f *pipelineFlags) config(workers int, impl string) (ladder.Config, error) {
	cfg := ladder.DefaultConfig()
	w, h, err := parseSize("--raw-size", f.rawSize)
	if err != nil {
		return cfg, err
	}
	cfg.Dataset.Width, cfg.Dataset.Height, cfg.Dataset.Seed = w, h, f.seed
	cfg.Transforms.Crop = f.crop
	cfg.Impl = impl
	cfg.Batch = f.batch
	cfg.Workers = workers
	cfg.Prefetch = f.prefetch
	cfg.Transfer = f.transfer
	if f.prefetch <= 0 {
		return cfg, usagef("--prefetch %d must be positive", f.prefetch)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err.Error()}
	}
	return cfg, nil
}

// newDevice opens the device the flags name.
func (f *pipelineFlags) newDevice() (device.Device, error) {
	switch f.dev {
	case "emulated":
		cfg := device.EmulatedConfig{Step: f.step, Pinned: f.pinned, PinnedBandwidth: f.pinnedBW * 1e9, PageableBandwidth: f.pageableBW * 1e9, ConvertBandwidth: f.convertBW * 1e9}
		d, err := device.NewEmulated(cfg)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		return d, nil
	case "cuda":
		return openCUDA(f)
	}
	return nil, usagef("--device %q: want emulated or cuda", f.dev)
}

func runLadder(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ladder", ladderUsage, stdout)
	var pf pipelineFlags
	pf.register(fs)
	levelsFlag := fs.String("levels", "none,raw,sample,host,device", "comma-separated `levels` to run")
	workersFlag := fs.String("workers", "1,2,4", "comma-separated worker `counts`")
	implsFlag := fs.String("transforms", "naive,fast", "comma-separated transform `implementations`")
	steps := fs.Int("steps", 10, "measured training `steps` per run")
	warmup := fs.Int("warmup", 1, "`steps` run before measuring")
	count := fs.Int("count", 1, "`runs` of each point (benchstat wants at least 6)")
	out := fs.String("out", "", "benchmark-format result `file` (written atomically; resumed if present)")
	fresh := fs.Bool("fresh", false, "overwrite --out instead of resuming it")
	shard := fs.String("shard", "", "run only shard `i/n` of the sweep's points (0-based)")
	tlPrefix := fs.String("timeline", "", "record the first run of each point and write `prefix`-<point>.png, .svg and .json (Chrome trace)")
	fs.StringVar(&pf.transfer, "transfer", "float32", "`dtype` of the uploaded batches: float32, or uint8 (ConvertColor and Scale run on the device)")
	fs.Float64Var(&pf.convertBW, "convert-gbps", device.DefaultConvertBandwidth/1e9, "emulated device, --transfer uint8: assumed on-device uint8→float32 conversion `GB/s` of float32 written")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !slices.Contains(ladder.Transfers, pf.transfer) {
		return usagef("--transfer %q: want %s", pf.transfer, strings.Join(ladder.Transfers, " or "))
	}
	if !(pf.convertBW > 0) {
		return usagef("--convert-gbps %v must be positive", pf.convertBW)
	}
	levels, err := ladder.ParseLevels(*levelsFlag)
	if err != nil {
		return usageError{err.Error()}
	}
	workers, err := parseInts("--workers", *workersFlag)
	if err != nil {
		return err
	}
	impls, err := parseList("--transforms", *implsFlag, transforms.Names)
	if err != nil {
		return err
	}
	switch {
	case *steps <= 0:
		return usagef("--steps %d must be positive", *steps)
	case *warmup < 0:
		return usagef("--warmup %d must not be negative", *warmup)
	case *count <= 0:
		return usagef("--count %d must be positive", *count)
	}
	si, sn, err := parseShard(*shard)
	if err != nil {
		return err
	}
	for _, impl := range impls {
		if _, err := pf.config(workers[0], impl); err != nil {
			return err
		}
	}

	dev, err := pf.newDevice()
	if err != nil {
		return err
	}
	defer dev.Close()

	var file *results.File
	if *out != "" {
		if *fresh {
			if err := os.Remove(*out); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		file, err = results.Open(*out, ladderConfig(dev.Name(), pf))
		if err != nil {
			return err
		}
	}

	all := ladder.Points(levels, workers, impls)
	var points []ladder.Point
	for i, p := range all {
		p.Transfer = pf.transfer
		if i%sn == si {
			points = append(points, p)
		}
	}
	todo := 0
	for _, p := range points {
		todo += *count - done(file, p)
	}
	bar := progress.New(os.Stderr, todo)
	defer bar.Finish()

	var ms []ladder.Measurement
	if file != nil {
		ms = append(ms, measurementsFrom(file, points)...)
	}
	for _, p := range points {
		cfg, err := pf.config(p.Workers, p.Impl)
		if err != nil {
			return err
		}
		for run := range *count - done(file, p) {
			bar.Set(p.Name())
			rc := ladder.RunConfig{Steps: *steps, Warmup: *warmup}
			var rec *pipeline.Recorder
			if *tlPrefix != "" && run == 0 {
				rec = pipeline.NewRecorder()
				cfg.Recorder, rc.Model = rec, rec.Track("model", 0)
			}
			res, err := ladder.Run(ctx, p.Level, cfg, dev, rc)
			cfg.Recorder = nil
			if err != nil {
				return fmt.Errorf("%s: %w", p.Name(), err)
			}
			if rec != nil {
				name := fmt.Sprintf("%s-level=%s-workers=%d-transforms=%s", *tlPrefix, p.Level, p.Workers, p.Impl)
				title := fmt.Sprintf("ladder level=%s workers=%d transforms=%s", p.Level, p.Workers, p.Impl)
				if pf.transfer == "uint8" {
					name += "-transfer=uint8"
					title += " transfer=uint8"
				}
				t := ladder.Timeline(title+" on "+dev.Name(), rec, cfg.Batch)
				if err := writeTimeline(stdout, t, name); err != nil {
					return err
				}
			}
			ms = append(ms, ladder.Measurement{Point: p, StepsPerSec: res.StepsPerSec()})
			if file != nil {
				if err := file.Add(res.Benchmark(p)); err != nil {
					return err
				}
			}
			bar.Add(1)
		}
	}
	bar.Finish()
	transfer := "" // float32, the default, goes unsaid, as in the result names
	if pf.transfer == "uint8" {
		transfer = ", transfer uint8"
		if pf.dev == "emulated" {
			transfer += fmt.Sprintf(" (conversion at an assumed %v GB/s)", pf.convertBW)
		}
	}
	fmt.Fprintf(stdout, "device %s, batch %d, raw %s, crop %d%s, %s of %s each\n\n",
		dev.Name(), pf.batch, pf.rawSize, pf.crop, transfer, plural(*count, "run"), plural(*steps, "step"))
	if err := ladder.WriteTable(stdout, ms); err != nil {
		return err
	}
	if file != nil {
		fmt.Fprintf(stdout, "results: %s (compare with: go tool benchstat %s)\n", *out, *out)
	}
	return nil
}

// ladderConfig is the configuration block of a ladder result file.
func ladderConfig(dev string, pf pipelineFlags) []results.Config {
	cfg := results.Environment(dev)
	cfg = append(cfg,
		results.Config{Key: "batch", Value: fmt.Sprint(pf.batch)},
		results.Config{Key: "raw-size", Value: pf.rawSize},
		results.Config{Key: "crop", Value: fmt.Sprint(pf.crop)},
		results.Config{Key: "pinned", Value: fmt.Sprint(pf.pinned)},
	)
	if pf.dev == "emulated" {
		cfg = append(cfg, results.Config{Key: "emulated-step", Value: pf.step.String()})
		if pf.transfer == "uint8" {
			// The assumption that uint8 results depend on; float32 files
			// keep the keys they always had.
			cfg = append(cfg, results.Config{Key: "emulated-convert-gbps", Value: fmt.Sprint(pf.convertBW)})
		}
	}
	return cfg
}

func done(f *results.File, p ladder.Point) int {
	if f == nil {
		return 0
	}
	return f.Done(p.BenchName())
}

// measurementsFrom reads back the steps/s of points already in a resumed file.
func measurementsFrom(f *results.File, points []ladder.Point) []ladder.Measurement {
	var ms []ladder.Measurement
	for _, p := range points {
		for _, v := range f.Values(p.BenchName(), "steps/s") {
			ms = append(ms, ladder.Measurement{Point: p, StepsPerSec: v})
		}
	}
	return ms
}
