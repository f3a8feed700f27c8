package workloads

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/internal/disturb"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Ladder is the caching ladder of "A Caching Strategy for Identifying
// Bottlenecks on the Data Input Pipeline" (document 003): the document's
// toy pipeline (1024×1024 random raw images, RandomCrop 256, RandomMask
// 0.25 with dilation, ConvertColor, Scale; batch 256) trained at every
// level of the ladder, for each worker count, transform implementation,
// placement and pinning: the sweep `make bench` runs, `headspace ladder`
// runs, the 003 report runs and BenchmarkLadder runs.
type Ladder struct {
	Levels     []level.Level
	Workers    []int
	Transforms []string
	Placements []loader.Placement
	Pinned     []bool
	// Pipeline is every point's pipeline; Workers, Impl and Placement are
	// set per point.
	Pipeline loader.Config
	Train    train.Config
	Count    int // runs of each point
	// Shard and Shards run every Shards-th point from the Shard-th
	// (0-based): one shard of the sweep, which `headspace merge` joins
	// with the others (ShardSettings); Shards 0 means all.
	Shard, Shards int
	// Under is the benchmark path the points' records are named under
	// (PointName): "" is "Ladder", BenchmarkLadder/level=…/…; the 003
	// report's steps run under "Ladder/step=a" (BenchmarkLadder/step=a/
	// level=…/…), the on-disk matrix's cases under "LadderOnDisk/<case>".
	// A name, not a number: it is in no settings block.
	Under string
	// Disturb says when a run is disturbed (its run-queue delay beyond
	// MaxDelay of its wall time) and how often a disturbed run is
	// repeated (package disturb). Every run's disturbance is measured
	// and recorded whatever the policy; the zero Policy repeats none.
	Disturb disturb.Policy
	// cmd is what headspace ladder's flags set beside the sweep.
	cmd ladderCommand
}

// The document's own numbers (A10G, PyTorch 2.6, 4 DataLoader workers on
// 4 vCPUs).
var (
	// LadderDocument is the document's table: steps/s at each level with
	// the naive transforms.
	LadderDocument = map[level.Level]float64{level.Device: 3.45, level.Host: 3.33, level.Sample: 3.23, level.Raw: 1.72, level.None: 0.89}
	// LadderDocumentAU is its accelerator utilisation in %: 22 at the
	// baseline, about 95 with a device-cached batch.
	LadderDocumentAU = map[level.Level]float64{level.None: 22, level.Device: 95}
	// LadderDocumentFixed is after the transform fix: raw 3.23, none 1.28
	// (raw data loading now bounds it).
	LadderDocumentFixed = map[level.Level]float64{level.Raw: 3.23, level.None: 1.28}
	// LadderDocumentSmall is after the raw image shrinks from 1024² to
	// 256²: none 3.23.
	LadderDocumentSmall = map[level.Level]float64{level.None: 3.23}
)

// LadderDocumentWorkers and LadderDocumentBatch are the document's
// DataLoader workers and batch size; LadderDocumentSmallRaw is the side
// of its shrunk raw image (1024² → 256²).
const (
	LadderDocumentWorkers  = 4
	LadderDocumentBatch    = 256
	LadderDocumentSmallRaw = 256
)

// DefaultLadder is the sweep `make bench` runs: the document's five
// levels (level.Document, not every level of the table), both
// transform implementations, one worker per core (the document's 4 workers
// on 4 vCPUs), placement host from pinned memory, 4 measured steps after 1
// warm-up, 6 runs of each point (benchstat's minimum for a confidence
// interval).
func DefaultLadder() Ladder {
	return Ladder{
		Levels:     level.Document,
		Workers:    []int{runtime.GOMAXPROCS(0)},
		Transforms: transforms.Names,
		Placements: []loader.Placement{loader.Host},
		Pinned:     []bool{true},
		Pipeline:   loader.DefaultConfig(),
		Train:      train.Config{Steps: 4, Warmup: 1},
		Count:      6,
	}
}

// QuickLadder is the ladder at a size that runs in seconds: every code
// path, no comparable numbers.
func QuickLadder() Ladder {
	l := DefaultLadder()
	l.Pipeline.Dataset.Width, l.Pipeline.Dataset.Height = 96, 96
	l.Pipeline.Transforms.Crop, l.Pipeline.Batch = 32, 8
	l.Train = train.Config{Steps: 2, Warmup: 1}
	l.Count = 1
	return l
}

// Points lists the sweep's points in the order they run.
func (l Ladder) Points() []ladder.Point {
	return ladder.Points(l.Levels, l.Workers, l.Transforms, l.Placements, l.Pinned)
}

// Validate reports the first problem with the sweep, before anything runs.
func (l Ladder) Validate() error {
	switch {
	case len(l.Levels) == 0 || len(l.Workers) == 0 || len(l.Transforms) == 0 || len(l.Placements) == 0 || len(l.Pinned) == 0:
		return errors.New("the sweep has no points: every dimension needs a value")
	case l.Count <= 0:
		return fmt.Errorf("count %d must be positive", l.Count)
	case strings.ContainsAny(l.Under, " \t\n") || strings.HasPrefix(l.Under, "/") || strings.HasSuffix(l.Under, "/"):
		return fmt.Errorf("under %q: want a benchmark path (no spaces, no leading or trailing /)", l.Under)
	}
	if err := l.Train.Validate(); err != nil {
		return err
	}
	for _, p := range l.Points() {
		c := l.config(p)
		if err := c.Validate(); err != nil {
			return fmt.Errorf("%s: %w", p.Name(), err)
		}
		if err := ladder.Check(p.Level, c); err != nil {
			return err
		}
	}
	return nil
}

// config is the pipeline of point p.
func (l Ladder) config(p ladder.Point) loader.Config {
	c := l.Pipeline
	c.Workers, c.Impl, c.Placement = p.Workers, p.Impl, p.Placement
	return c
}

// Settings is the configuration block of the sweep's result file: every
// pipeline and loop setting that changes a number and is not in a
// benchmark's name. The device's settings are the Device's.
func (l Ladder) Settings() []resultfile.Config {
	s := append(l.Pipeline.Settings(),
		resultfile.Config{Key: "steps", Value: fmt.Sprint(l.Train.Steps)},
		resultfile.Config{Key: "warmup", Value: fmt.Sprint(l.Train.Warmup)},
	)
	if l.Disturb != (disturb.Policy{}) {
		s = append(s, l.disturbSettings()...)
	}
	return s
}

// Device opens the device a sweep trains on, once per pinning, and
// describes its settings for the result file.
type Device struct {
	// Open opens the device with uploads from pinned (or pageable) memory.
	Open func(pinned bool) (device.Device, error)
	// Scale, if set, opens the device with its step scaled by m (the
	// what-if model's checks); nil for a device whose step cannot be
	// scaled (CUDA).
	Scale func(m float64) (device.Device, error)
	// Settings are the device's settings that change a number, for the
	// result file (the emulated device's assumed step and bandwidths).
	Settings []resultfile.Config
}

// Emulated is the emulated device with cfg's step and bandwidths; Pinned
// is set per point.
func Emulated(cfg device.EmulatedConfig) Device {
	return Device{
		Open: func(pinned bool) (device.Device, error) {
			c := cfg
			c.Pinned = pinned
			return device.NewEmulated(c)
		},
		Scale: EmulatedWhatIf(cfg),
		Settings: []resultfile.Config{
			{Key: "emulated-step", Value: cfg.Step.String()},
			{Key: "emulated-pinned-gbps", Value: fmt.Sprint(cfg.PinnedBandwidth / 1e9)},
			{Key: "emulated-pageable-gbps", Value: fmt.Sprint(cfg.PageableBandwidth / 1e9)},
			{Key: "emulated-convert-gbps", Value: fmt.Sprint(cfg.ConvertBandwidthOrDefault() / 1e9)},
		},
	}
}

// Opened is dev, already open, as the Device of experiments run one
// after another on it (the 003 report's steps): every Open hands it out,
// pinned or not, and an experiment's Close leaves it open for its owner
// to close. It has no Settings and no Scale.
func Opened(dev device.Device) Device {
	return Device{Open: func(bool) (device.Device, error) { return unclosed{dev}, nil }}
}

// once is d opened at most once per pinning, for several sweeps in a
// row: its Open hands out the device opened first (whose Close does
// nothing), and closeAll closes them.
func (d Device) once() (shared Device, closeAll func()) {
	devs := map[bool]device.Device{}
	shared = d
	shared.Open = func(pinned bool) (device.Device, error) {
		dev, ok := devs[pinned]
		if !ok {
			var err error
			if dev, err = d.Open(pinned); err != nil {
				return nil, err
			}
			devs[pinned] = dev
		}
		return unclosed{dev}, nil
	}
	return shared, func() {
		for _, dev := range devs {
			dev.Close()
		}
	}
}

// unclosed is a device whose Close leaves it open, for its opener to
// close.
type unclosed struct{ device.Device }

// Close does nothing.
func (unclosed) Close() error { return nil }

// DocumentStep is the emulated device's step: the document's
// device-cached 3.45 steps/s, 1/3.45 s = 289.9 ms, rounded to 290 ms.
const DocumentStep = 290 * time.Millisecond

// DocumentDevice is the emulated device at the document's step, with the
// emulated device's assumed bandwidths.
func DocumentDevice() device.EmulatedConfig {
	c := device.DefaultEmulated()
	c.Step = DocumentStep
	return c
}

// Selected is the sweep's points that its shard takes (all of them
// without Shards), in the order they run.
func (l Ladder) Selected() []ladder.Point {
	var out []ladder.Point
	for i, p := range l.Points() {
		if l.Shards <= 1 || i%l.Shards == l.Shard {
			out = append(out, p)
		}
	}
	return out
}

// Todo is the runs Run still has to make in env: Count of each selected
// point, less those env.Done says a resumed file holds.
func (l Ladder) Todo(env Env) int {
	n := 0
	for _, p := range l.Selected() {
		n += l.Count - min(env.done(l.benchName(p)), l.Count)
	}
	return n
}

// PointName is point p's benchmark name without the "Benchmark" prefix
// and the GOMAXPROCS suffix, under the sweep's Under:
// "Ladder/level=raw/workers=4/…" (ladder.Point.Name), or with Under
// "Ladder/step=a", "Ladder/step=a/level=raw/workers=4/…". It is the name
// Env.Start and Env.Recorded receive.
func (l Ladder) PointName(p ladder.Point) string {
	under := l.Under
	if under == "" {
		under = l.Name()
	}
	return under + "/" + p.Sub()
}

// benchName is point p's benchmark name as `go test -bench` prints it:
// its records' name, GOMAXPROCS suffix included (resultfile.BenchName).
func (l Ladder) benchName(p ladder.Point) string {
	return resultfile.BenchName(l.PointName(p), runtime.GOMAXPROCS(0))
}

// Only is the sweep of point p alone: its level, workers, transforms,
// placement and pinning, with the rest of l (pipeline, loop, runs,
// Under).
func (l Ladder) Only(p ladder.Point) Ladder {
	l.Levels, l.Workers, l.Transforms = []level.Level{p.Level}, []int{p.Workers}, []string{p.Impl}
	l.Placements, l.Pinned = []loader.Placement{p.Placement}, []bool{p.Pinned}
	l.Shard, l.Shards = 0, 0
	return l
}

// PointRun is one run of one point of a ladder: an element of what a
// Ladder measured (LadderOutcome).
type PointRun struct {
	Point ladder.Point
	// Result is the whole run (Measure's); a decoded run has none: its
	// figures are its record's.
	Result train.Result
	Record *benchfmt.Result // named by PointName
}

// LadderOutcome is what a Ladder measured: every run of every point, in
// the order they were made.
type LadderOutcome struct {
	Runs []PointRun
	// settings are its result file's, for headspace ladder --from's
	// table.
	settings []resultfile.Config
}

// settle keeps the result file's settings (command.go's settled).
func (o *LadderOutcome) settle(settings []resultfile.Config) { o.settings = settings }

var _ Typed[LadderOutcome] = Ladder{}

// Name is "Ladder": BenchmarkLadder/level=…/workers=…/….
func (Ladder) Name() string { return "Ladder" }

// Document is "003".
func (Ladder) Document() string { return "003" }

// Measure is MeasureEach with no callback.
func (l Ladder) Measure(ctx context.Context, env Env) (LadderOutcome, error) {
	return l.MeasureEach(ctx, env, nil)
}

// MeasureEach runs the sweep (every point, or its shard's) on env's
// device, the device opened once per pinning: for each selected point,
// Count runs (less those env.Done says a resumed file holds), each a
// PointRun whose record is named by PointName, passed to each (if not
// nil) as it finishes: Run passes its record on to env.Result there, so
// an interrupted sweep's file keeps every finished run. With
// env.Recorded, the first run of each point (of those env.Record picks,
// where set) is recorded as a timeline. It stops at the first error
// (each's too), or when ctx is done, returning the runs made before.
func (l Ladder) MeasureEach(ctx context.Context, env Env, each func(PointRun) error) (LadderOutcome, error) {
	var out LadderOutcome
	if err := l.Validate(); err != nil {
		return out, err
	}
	shared, closeAll := env.device().once()
	defer closeAll()
	for _, p := range l.Selected() {
		dev, err := shared.Open(p.Pinned)
		if err != nil {
			return out, fmt.Errorf("opening the device: %w", err)
		}
		name := l.PointName(p)
		record := env.Recorded != nil && (env.Record == nil || env.Record(name))
		for run := range l.Count - min(env.done(l.benchName(p)), l.Count) {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			env.start(name)
			m, err := l.runMeasured(ctx, p, dev, record && run == 0)
			if err != nil {
				return out, fmt.Errorf("%s: %w", name, err)
			}
			res := m.res
			if m.rec != nil {
				if err := env.Recorded(name, m.rec); err != nil {
					return out, err
				}
			}
			b := p.Benchmark(res)
			ladder.AddDisturbance(b, m.sample, res.Steps, m.reruns, m.disturbed)
			b.Name = benchfmt.Name(l.benchName(p)) // under Under
			r := PointRun{Point: p, Result: res, Record: b}
			out.Runs = append(out.Runs, r)
			if each != nil {
				if err := each(r); err != nil {
					return out, err
				}
			}
		}
	}
	return out, nil
}

// Run is MeasureEach, each run's record passed to env.Result as it
// finishes; it returns the records (LadderCodec).
func (l Ladder) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	o, err := l.MeasureEach(ctx, env, func(r PointRun) error { return env.result(r.Record) })
	return LadderCodec.Encode(o), err
}

// Codec is LadderCodec.
func (Ladder) Codec() Codec[LadderOutcome] { return LadderCodec }

// LadderCodec is a Ladder's records codec: a record a run, in the order
// they ran, BenchmarkLadder/level=…/workers=…/transforms=…/placement=…/pinned=…
// (ladder.Point.Benchmark) with a GOMAXPROCS suffix. Decode reads each
// run's point back, its record kept (its figures); files from before
// placement and pinning were recorded lack them (host, not pinned). A
// sweep run under another path (Under) is its composite's: Caching's,
// OnDisk's, Remote's codecs read those.
var LadderCodec = Codec[LadderOutcome]{
	Experiment: "Ladder",
	Keys:       map[string][]string{"Ladder": pointKeys},
	Optional:   map[string][]string{"Ladder": {"placement", "pinned"}},
	Procs:      true,
	encode:     func(o LadderOutcome) []*benchfmt.Result { return recordsOf(o.Runs, PointRun.record) },
	decode: func(recs []Record) (LadderOutcome, error) {
		runs, err := decodeEach(recs, Record.pointRun)
		return LadderOutcome{Runs: runs}, err
	},
}

// pointKeys are the keys of a ladder point's part of a record's name
// (ladder.Point.Sub).
var pointKeys = []string{"level", "workers", "transforms", "placement", "pinned"}

// record is the run's record: what a codec encodes of it.
func (r PointRun) record() *benchfmt.Result { return r.Record }

// pointRun is the run of a ladder point a record gives (point), its
// record kept (its figures).
func (r Record) pointRun() (PointRun, error) {
	p, err := r.point()
	return PointRun{Point: p, Record: r.Result}, err
}

// point is the ladder point a record's name gives (pointKeys): a name
// without placement or pinning (a file from before they were recorded)
// is host, not pinned.
func (r Record) point() (ladder.Point, error) {
	name := fullName(r.Result)
	l, err := level.Parse(r.Keys["level"])
	if err != nil {
		return ladder.Point{}, fmt.Errorf("%s: %w", name, err)
	}
	workers, err := r.count("workers", false)
	if err != nil {
		return ladder.Point{}, err
	}
	p := ladder.Point{Level: l, Workers: workers, Impl: r.Keys["transforms"], Pinned: r.Keys["pinned"] == "true"}
	if pl := r.Keys["placement"]; pl != "" {
		if p.Placement, err = loader.ParsePlacement(pl); err != nil {
			return ladder.Point{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	return p, nil
}

// LadderGroups sets the steps/s of every point in values (by benchmark
// name, from a result file or a run) into one table group per setting,
// medians by package summary, every run's value kept (the table's spread
// and noise test), in the sweep's order; disturbed, when not nil, counts
// a point's runs that stayed disturbed.
func LadderGroups(points []ladder.Point, values func(p ladder.Point) []float64, disturbed func(p ladder.Point) int) []ladder.Group {
	var groups []ladder.Group
	index := map[string]int{}
	for _, p := range points {
		vs := values(p)
		if len(vs) == 0 {
			continue
		}
		title := fmt.Sprintf("transforms=%s workers=%d placement=%s pinned=%v", p.Impl, p.Workers, p.Placement, p.Pinned)
		i, ok := index[title]
		if !ok {
			i = len(groups)
			index[title] = i
			groups = append(groups, ladder.Group{Title: title, Median: map[level.Level]float64{}, Runs: map[level.Level]int{},
				Samples: map[level.Level][]float64{}, Disturbed: map[level.Level]int{}})
		}
		groups[i].Median[p.Level] = summary.Median(vs)
		groups[i].Runs[p.Level] = len(vs)
		groups[i].Samples[p.Level] = slices.Clone(vs)
		if disturbed != nil {
			groups[i].Disturbed[p.Level] = disturbed(p)
		}
	}
	return groups
}

// QuickStep is the emulated step of a quick run.
const QuickStep = 20 * time.Millisecond
