package workloads

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/cuda/kernels"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/preflight"
	reports "github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/timeline"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// checkCUDAFlags refuses what runs on the CUDA device alone off it: the
// device transform (its kernels), --cuda-graphs, --precision tf32 and
// --backend cudnn or auto (the emulated device's step is a set duration
// that no precision or library changes, so a "tf32" result there would
// measure nothing it names); and --device-crop without the device
// transform, and an unknown --precision or --backend.
func checkCUDAFlags(pf *pipelineFlags, impls []string) error {
	device, dev := slices.Contains(impls, transforms.DeviceName), pf.dev
	switch {
	case device && dev != "cuda":
		return cli.Usagef("--transforms device runs the transform as CUDA kernels: it needs --device cuda, not %s", dev)
	case pf.deviceCrop && !device:
		return cli.Usagef("--device-crop needs --transforms device")
	case pf.graphs && dev != "cuda":
		return cli.Usagef("--cuda-graphs needs --device cuda, not %s", dev)
	case !slices.Contains(kernels.Precisions, pf.precision):
		return cli.Usagef("--precision %q: want %s", pf.precision, strings.Join(kernels.Precisions, " or "))
	case pf.precision != kernels.PrecisionFP32 && dev != "cuda":
		return cli.Usagef("--precision %s needs --device cuda, not %s", pf.precision, dev)
	case pf.backend != "" && !slices.Contains([]string{cuda.BackendKernels, cuda.BackendLibraries, cuda.BackendAuto}, pf.backend):
		return cli.Usagef("--backend %q: want %s, %s or %s", pf.backend, cuda.BackendKernels, cuda.BackendLibraries, cuda.BackendAuto)
	case pf.backend != "" && pf.backend != cuda.BackendKernels && dev != "cuda":
		return cli.Usagef("--backend %s needs --device cuda, not %s", pf.backend, dev)
	}
	return nil
}

// The emulated device's flags' bounds (pipelineFlags).
var _ = cli.Declare(map[string]cli.Bound{
	"step":          {Lo: 0, Hi: float64(time.Hour)},
	"pinned-gbps":   {Lo: 0, Hi: 1e4},
	"pageable-gbps": {Lo: 0, Hi: 1e4},
	"convert-gbps":  {Lo: 0, Hi: 1e5},
})

// pipelineFlags are the flags shared by every command that runs the pipeline.
type pipelineFlags struct {
	batch, crop, prefetch int
	rawSize, content      string
	seed                  uint64
	step                  time.Duration
	dev                   string
	pinnedBW, pageableBW  float64
	convertBW             float64
	data                  loader.DataFlags
	deviceCrop            bool          // ladder: --device-crop, with --transforms device
	graphs                bool          // ladder: --cuda-graphs, with --device cuda
	precision             string        // ladder: --precision, the Net's convolutions on --device cuda
	backend               string        // ladder: --backend, the Net on the kernels or cuDNN on --device cuda ("" is the kernels)
	base                  loader.Config // the defaults' pipeline, config's start
}

func (f *pipelineFlags) register(fs *flag.FlagSet) { f.registerFrom(fs, loader.DefaultConfig()) }

// registerFrom defines the flags with def's values (an experiment's
// pipeline) as their defaults; config starts from def.
func (f *pipelineFlags) registerFrom(fs *flag.FlagSet, def loader.Config) {
	f.base = def
	emu := DocumentDevice()
	f.precision = kernels.PrecisionFP32
	fs.IntVar(&f.batch, "batch", def.Batch, "samples per `batch`")
	fs.StringVar(&f.rawSize, "raw-size", fmt.Sprint(def.Dataset.Width), "raw image `size`, N or WxH (the document: 1024, then 256)")
	fs.StringVar(&f.content, "content", datasets.ContentNoise, "synthetic images' `content`: noise (the document's) or natural (dead leaves); with --data the dataset's")
	fs.IntVar(&f.crop, "crop", def.Transforms.Crop, "random crop `side`")
	fs.IntVar(&f.prefetch, "prefetch", def.Prefetch, "`batches` prepared ahead of the training loop")
	fs.Uint64Var(&f.seed, "seed", def.Dataset.Seed, "dataset and transform `seed`")
	fs.DurationVar(&f.step, "step", emu.Step, "emulated device: `time` of one training step (document: 1/3.45 s)")
	fs.StringVar(&f.dev, "device", "emulated", "`device`: emulated or cuda")
	fs.Float64Var(&f.pinnedBW, "pinned-gbps", emu.PinnedBandwidth/1e9, "emulated device: pinned host-to-device `GB/s`")
	fs.Float64Var(&f.pageableBW, "pageable-gbps", emu.PageableBandwidth/1e9, "emulated device: pageable host-to-device `GB/s`")
	fs.Float64Var(&f.convertBW, "convert-gbps", device.DefaultConvertBandwidth/1e9, "emulated device, placement device: assumed on-device uint8→float32 conversion `GB/s` of float32 written")
	f.data.Register(fs)
}

// config turns the flags into a pipeline configuration with the given
// workers and implementation, checked; ctx bounds indexing --data.
func (f *pipelineFlags) config(ctx context.Context, workers int, impl string) (loader.Config, error) {
	cfg := f.base
	if cfg.Batch == 0 {
		cfg = loader.DefaultConfig() // flags made without register (DeviceNamed)
	}
	w, h, err := cli.ParseSize("--raw-size", f.rawSize)
	if err != nil {
		return cfg, err
	}
	cfg.Dataset.Width, cfg.Dataset.Height, cfg.Dataset.Seed = w, h, f.seed
	if cfg.Dataset.Content, err = datasets.ParseContent(f.content); err != nil {
		return cfg, cli.Usagef("--%v", err)
	}
	if f.data.Dir != "" && f.data.Set("content") {
		return cfg, cli.Usagef("--content conflicts with --data: the dataset on disk has its own images")
	}
	if cfg, err = f.data.Resolve(ctx, cfg); err != nil {
		return cfg, err
	}
	cfg.Transforms.Crop, cfg.Impl, cfg.DeviceCrop = f.crop, impl, f.deviceCrop
	if cfg.DeviceDecodes() {
		if f.dev != "cuda" {
			return cfg, cli.Usagef("--decoder nvjpeg decodes the JPEGs on the GPU: it needs --device cuda, not %s", f.dev)
		}
		// The device decodes whole images, so it crops them too.
		cfg.DeviceCrop = true
	}
	if impl == transforms.DeviceName {
		// The device transform finishes on the device, always.
		cfg.Placement = loader.Device
	}
	cfg.Batch, cfg.Workers, cfg.Prefetch = f.batch, workers, f.prefetch
	if f.prefetch <= 0 {
		return cfg, cli.Usagef("--prefetch %d must be positive", f.prefetch)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, cli.UsageError{Msg: err.Error()}
	}
	return cfg, nil
}

// DeviceNamed is the device --device names ("emulated" or "cuda") with
// the given step, opened as the commands open it: headspace reproduce
// --device.
func DeviceNamed(ctx context.Context, name string, step time.Duration) (Device, error) {
	return (&pipelineFlags{dev: name, step: step, seed: loader.DefaultConfig().Dataset.Seed}).device(ctx)
}

// device is the device the flags name, opened per pinning: the one place
// the commands choose between the emulated device and the GPU. A device
// whose step cannot be scaled (the GPU) has no Scale. ctx is the
// command's: the GPU's opening (a driver's initialisation, which can hang)
// gives up when it ends.
func (f *pipelineFlags) device(ctx context.Context) (Device, error) {
	switch f.dev {
	case "emulated":
		for _, bw := range []struct {
			flag string
			v    float64
		}{{"--pinned-gbps", f.pinnedBW}, {"--pageable-gbps", f.pageableBW}, {"--convert-gbps", f.convertBW}} {
			// Below 1 MB/s a batch takes minutes to copy: a typo, not a setting.
			if !(bw.v >= 0.001 && bw.v <= 1e6) {
				return Device{}, cli.Usagef("%s %v: want 0.001 to 1000000 GB/s", bw.flag, bw.v)
			}
		}
		// Pinned is Scale's (the what-if's checks upload pinned); Open
		// sets its own.
		cfg := device.EmulatedConfig{Step: f.step, Pinned: true, PinnedBandwidth: f.pinnedBW * 1e9, PageableBandwidth: f.pageableBW * 1e9, ConvertBandwidth: f.convertBW * 1e9}
		if err := cfg.Validate(); err != nil {
			return Device{}, cli.UsageError{Msg: err.Error()}
		}
		return Emulated(cfg), nil
	case "cuda":
		settings, err := cudaSettings(ctx)
		if err != nil {
			return Device{}, err
		}
		if f.graphs {
			// Recorded only when set, so earlier files keep their setup.
			settings = append(settings, resultfile.Config{Key: "cuda-graphs", Value: "true"})
		}
		if f.precision != kernels.PrecisionFP32 {
			// Likewise: a file without the line is fp32.
			settings = append(settings, resultfile.Config{Key: "precision", Value: f.precision})
		}
		if f.backend != "" && f.backend != cuda.BackendKernels {
			// Likewise: a file without the line is on the kernels. auto
			// is resolved here, once, and the file says what it chose.
			b, err := cuda.ChooseBackend(f.backend, cuda.LoadDNN())
			if err != nil {
				return Device{}, err
			}
			f.backend = b.Name
			settings = append(settings, resultfile.Config{Key: "backend", Value: b.Name})
			settings = append(settings, DNNSettings(b)...)
		}
		if f.data.Decoder == ondisk.DecoderNvjpeg {
			nv, err := nvjpegSettings(ctx)
			if err != nil {
				return Device{}, err
			}
			settings = append(settings, nv...)
		}
		return Device{Open: func(pinned bool) (device.Device, error) { return openCUDA(ctx, f, pinned) }, Settings: settings}, nil
	}
	return Device{}, cli.Usagef("--device %q: want emulated or cuda", f.dev)
}

// scalable reports whether the device the flags name can scale its step
// (device's Scale is set), known before it is opened.
func (f *pipelineFlags) scalable() bool { return f.dev == "emulated" }

// ladderCommand is what headspace ladder's flags set beside the sweep:
// the pipeline's, the disturbance policy's and the own loop's flags, the
// sweep's as given (sweep parses them), and what a run's report reads.
type ladderCommand struct {
	pf pipelineFlags
	lf ladderFlags
	df preflight.DisturbFlags
	of ownFlags
	// out is command.CommandOf's --out: a run that writes it waits for quiet.
	out flag.Value
	// points and describe are a run's: the points its table shows, and
	// its dataset's line; --from's table shows the file's.
	points   []ladder.Point
	describe func() string
	// handoff is ladder -- COMMAND's run, handed to the command layer.
	handoff *Handoff
}

// ladderFlags are the ladder's own flags, beside the pipeline's, the
// disturbance policy's and a command's.
type ladderFlags struct {
	levels, impls, placements, pinned string
	workers                           *loader.Workers
	steps, warmup, count              int
	shard, timeline                   string
}

// register defines the flags on fs, their defaults def's.
func (lf *ladderFlags) register(fs *flag.FlagSet, def Ladder) {
	fs.StringVar(&lf.levels, "levels", "", "comma-separated `levels` to run (default none,raw,sample,host,device; with --data also encoded)")
	lf.workers = loader.WorkersFlag(fs, true, "comma-separated worker `counts` (default: one per core)", def.Workers...)
	fs.StringVar(&lf.impls, "transforms", strings.Join(def.Transforms, ","), "comma-separated transform `implementations`: naive, fast, or device (the mask, ConvertColor and Scale as CUDA kernels; --device cuda and --placement device)")
	fs.StringVar(&lf.placements, "placement", "host", "comma-separated `placements` of ConvertColor and Scale: host (float32 uploads) or device (uint8 uploads, converted on the device)")
	fs.StringVar(&lf.pinned, "pinned", "true", "comma-separated: upload from pinned host memory (`true`), pageable (false), or both")
	fs.IntVar(&lf.steps, "steps", def.Train.Steps, "measured training `steps` per run")
	fs.IntVar(&lf.warmup, "warmup", def.Train.Warmup, "`steps` run before measuring")
	fs.IntVar(&lf.count, "count", def.Count, "`runs` of each point (benchstat wants at least 6)")
	fs.StringVar(&lf.shard, "shard", "", "run only shard `i/n` of the sweep's points (0-based)")
	fs.StringVar(&lf.timeline, "timeline", "", "record the first run of each point and write `prefix`-<point>.png, .svg and .json (Chrome trace)")
}

// Flags are ladder's: their defaults DefaultLadder's.
func (l *Ladder) Flags(fs *flag.FlagSet) {
	c := &l.cmd
	c.out = fs.Lookup("out").Value
	c.pf.registerFrom(fs, l.Pipeline)
	c.lf.register(fs, *l)
	fs.BoolVar(&c.pf.graphs, "cuda-graphs", false, "with --device cuda: replay each step from a CUDA Graph (captured once per device buffer) instead of launching its kernels one by one")
	fs.StringVar(&c.pf.precision, "precision", kernels.PrecisionFP32, "with --device cuda: the Net's convolutions in `fp32` (exact float32, the default) or tf32 (TF32 tensor cores, mma.sync; docs/gpu.md)")
	fs.StringVar(&c.pf.backend, "backend", cuda.BackendKernels, "with --device cuda: the Net's step on our `kernels` (the default), on cudnn (cuDNN's convolutions, bias and ReLU; an error where cuDNN and cuBLAS do not load), or auto (cuDNN where it loads, else the kernels; the file says which); docs/gpu.md")
	fs.BoolVar(&c.pf.deviceCrop, "device-crop", false, "with --transforms device: upload whole raw images and crop on the GPU too, instead of uploading the host's crops")
	c.df.Register(fs)
	c.of.registerLadder(fs)
}

// File is driver.Stream: each run on disk as it finishes, a file of the
// same setup resumed.
func (*Ladder) File() driver.Mode { return driver.Stream }

// TakeCommand hands ladder -- COMMAND, OwnLoopLadder, and --from of its
// file to the command layer (ownLadderHandoff, ownLadderFrom), or refuses
// the own loop's flags without a command.
func (l *Ladder) TakeCommand(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (bool, error) {
	c := &l.cmd
	c.handoff = nil
	if from := fs.Lookup("from").Value.String(); from != "" && !hasCommand(fs, args) && IsOwnLoopLadderFile(from) {
		if err := cli.ParseFlags(fs, args); err != nil {
			return true, err
		}
		var err error
		c.handoff, err = ownLadderFrom(fs, from)
		return true, err
	}
	if !hasCommand(fs, args) {
		return false, checkOwnFlags(fs, false)
	}
	var err error
	c.handoff, err = ownLadderHandoff(fs, &c.of, ownLadderFlags{levels: c.lf.levels, steps: c.lf.steps, warmup: c.lf.warmup, count: c.lf.count, out: c.out.String()}, stderr)
	return true, err
}

// HandedOff is what TakeCommand handed to the command layer to run in
// the ladder's place (ladder -- COMMAND, and --from of its file), or nil.
func (l *Ladder) HandedOff() *Handoff { return l.cmd.handoff }

// Prepare checks the sweep, opens its device, checks --timeline's files
// and, with --out, waits for a quiet machine (the file's machine-busy
// line where it never is).
func (l *Ladder) Prepare(ctx context.Context, stdout, stderr io.Writer) (Setup, error) {
	c := &l.cmd
	s := Setup{Close: func() { c.pf.data.Close() }} // the --link, if one was started
	sw, err := c.lf.sweep(ctx, *l, &c.pf, &c.df)
	if err != nil {
		return s, err
	}
	sw.cmd = *c // the flags' state: a --link sweep started
	*l = sw
	if s.Env.Device, err = c.pf.device(ctx); err != nil {
		return s, err
	}
	if err := l.timeline(&s.Env, c.pf.dev, stdout); err != nil {
		return s, err
	}
	var busy []resultfile.Config
	if c.out.String() != "" {
		if busy, err = c.df.WaitQuiet(ctx, stderr); err != nil {
			return s, err
		}
	}
	s.Settings = slices.Concat(l.Settings(), s.Env.Device.Settings, busy)
	if c.lf.shard != "" {
		s.Settings = append(s.Settings, l.ShardSettings(l.Shards)...) // what headspace merge reads
	}
	dev, pipeline := c.pf.dev, l.Pipeline
	s.Device = func() string { return dev }
	c.points, c.describe = l.Selected(), func() string { return loader.Describe(ctx, pipeline) }
	s.Todo, s.Partial, s.Benchstat = l.Todo, "the table shows the runs finished before it", true
	return s, nil
}

// timeline checks --timeline's files, one set a point, and has env
// record the first run of each point as one.
func (l *Ladder) timeline(env *Env, devName string, stdout io.Writer) error {
	prefix := l.cmd.lf.timeline
	if prefix == "" {
		return nil
	}
	var outs []cli.Output
	for _, p := range l.Selected() {
		name := timelinePath(prefix, p.Sub())
		outs = append(outs, cli.Figure(name+".png"), cli.Figure(name+".svg"), cli.Output{Path: name + ".json", Kind: cli.TraceKind})
	}
	batch := l.Pipeline.Batch
	env.Recorded = func(name string, rec *pipeline.Recorder) error {
		sub := strings.TrimPrefix(name, "Ladder/")
		t := timeline.FromRecorder("ladder "+strings.ReplaceAll(sub, "/", " ")+" on "+devName, rec, batch)
		return WriteTimeline(stdout, t, timelinePath(prefix, sub))
	}
	return cli.CheckOutputs(outs...)
}

// Report prints the setup's line and the table of o's steps/s per point:
// a run's selected points, or --from's, the file's in the order they
// ran, its setup the file's settings.
func (l *Ladder) Report(o LadderOutcome, w io.Writer) error {
	steps, disturbed := map[ladder.Point][]float64{}, map[ladder.Point]int{}
	var points []ladder.Point
	for _, r := range o.Runs {
		if _, ok := steps[r.Point]; !ok {
			points = append(points, r.Point)
		}
		v, _ := resultfile.Value(r.Record, "steps/s")
		steps[r.Point] = append(steps[r.Point], v)
		if d, ok := resultfile.Value(r.Record, disturb.DisturbedUnit); ok && d > 0 {
			disturbed[r.Point]++
		}
	}
	head := ladderHead{dev: "emulated", pipeline: l.Pipeline, count: l.Count, steps: l.Train.Steps}
	if l.cmd.points != nil {
		points, head.dev, head.data = l.cmd.points, l.cmd.pf.dev, l.cmd.describe()
	} else if err := head.settle(o.settings, steps); err != nil {
		return err
	}
	p := head.pipeline
	fmt.Fprintf(w, "device %s, batch %d, raw %dx%d, crop %d, %s of %s each\n%s\n", head.dev, p.Batch,
		p.Dataset.Width, p.Dataset.Height, p.Transforms.Crop, reports.Plural(head.count, "run"), reports.Plural(head.steps, "step"), head.data)
	return ladder.WriteTable(w, LadderGroups(points, func(p ladder.Point) []float64 { return steps[p] }, func(p ladder.Point) int { return disturbed[p] }), LadderDocument)
}

// ladderHead is the setup a ladder's table is headed by: its device,
// pipeline, runs of each point and steps of each run, and its dataset's
// line.
type ladderHead struct {
	dev          string
	pipeline     loader.Config
	count, steps int
	data         string
}

// settle sets the head from a result file's settings (--from): its
// device, batch, raw size, crop and steps, and the most runs of a point
// in steps.
func (h *ladderHead) settle(settings []resultfile.Config, steps map[ladder.Point][]float64) error {
	h.count = 0
	for _, vs := range steps {
		h.count = max(h.count, len(vs))
	}
	h.dev = cmp.Or(setting(settings, "device"), h.dev)
	var err error
	p := &h.pipeline
	for _, f := range []struct {
		key string
		n   *int
	}{{"batch", &p.Batch}, {"crop", &p.Transforms.Crop}, {"steps", &h.steps}} {
		if v := setting(settings, f.key); v != "" {
			if *f.n, err = strconv.Atoi(v); err != nil {
				return fmt.Errorf("the file's %s: %q is not a number", f.key, v)
			}
		}
	}
	if v := setting(settings, "raw-size"); v != "" {
		if p.Dataset.Width, p.Dataset.Height, err = cli.ParseSize("raw-size", v); err != nil {
			return fmt.Errorf("the file's %v", err)
		}
	}
	return nil
}

// timelinePath is the path, without its extension, of the timeline of
// the point sub (Point.Sub) under --timeline's prefix, which keeps its
// folder.
func timelinePath(prefix, sub string) string {
	return prefix + "-" + strings.ReplaceAll(sub, "/", "-")
}

// sweep is the sweep the flags ask for: def with the levels (by default
// level.Default of the data's source), workers, transforms, placements,
// pinning, steps, runs and shard given, and the pipeline's flags'
// configuration, checked.
func (lf *ladderFlags) sweep(ctx context.Context, def Ladder, pf *pipelineFlags, df *preflight.DisturbFlags) (Ladder, error) {
	l := def
	var err error
	if lf.levels != "" {
		if l.Levels, err = level.ParseList(lf.levels); err != nil {
			return l, cli.UsageError{Msg: err.Error()}
		}
	} else if bucket.IsURL(pf.data.Dir) {
		l.Levels = level.Default(level.Bucket)
	} else if pf.data.Dir != "" {
		l.Levels = level.Default(level.Disk)
	}
	if l.Workers, err = lf.workers.Counts(); err != nil {
		return l, err
	}
	if l.Transforms, err = cli.ParseList("--transforms", lf.impls, append(slices.Clone(transforms.Names), transforms.DeviceName)); err != nil {
		return l, err
	}
	if err := checkCUDAFlags(pf, l.Transforms); err != nil {
		return l, err
	}
	if l.Placements, err = loader.ParsePlacements(lf.placements); err != nil {
		return l, err
	}
	if l.Pinned, err = cli.ParseBools("--pinned", lf.pinned); err != nil {
		return l, err
	}
	if err := cli.FirstErr(cli.InRange("--steps", lf.steps, 1, cli.MaxSteps), cli.InRange("--warmup", lf.warmup, 0, cli.MaxSteps),
		cli.InRange("--count", lf.count, 1, cli.MaxCount)); err != nil {
		return l, err
	}
	if l.Disturb, err = df.Policy(); err != nil {
		return l, err
	}
	l.Train.Steps, l.Train.Warmup, l.Count = lf.steps, lf.warmup, lf.count
	if l.Pipeline, err = pf.config(ctx, slices.Max(l.Workers), l.Transforms[0]); err != nil {
		return l, err
	}
	if err := l.Validate(); err != nil {
		return l, cli.UsageError{Msg: err.Error()}
	}
	// The largest point: most workers, and a kept batch on the host and
	// on the device beside the loader's.
	if err := preflight.FitsPipeline(l.Pipeline, 1, 2*l.Pipeline.BatchBytes()); err != nil {
		return l, err
	}
	l.Shard, l.Shards, err = cli.ParseShard(lf.shard)
	return l, err
}

// WriteTimeline writes t to prefix.png, prefix.svg and prefix.json and
// names them on w (ladder --timeline, sim --timeline).
func WriteTimeline(w io.Writer, t *timeline.Timeline, prefix string) error {
	prefix = strings.TrimSuffix(prefix, ".png")
	if err := t.WritePNG(prefix+".png", 1200, 60+28*len(t.DisplayTracks())); err != nil {
		return err
	}
	if err := t.WriteSVG(prefix+".svg", 900, 45+21*len(t.DisplayTracks())); err != nil {
		return err
	}
	if err := atomicfile.WriteKind(prefix+".json", cli.TraceKind, t.WriteChromeTrace); err != nil {
		return err
	}
	fmt.Fprintf(w, "timeline: %s.png, %s.svg, %s.json (open the JSON in Perfetto)\n", prefix, prefix, prefix)
	return nil
}
