package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/headspace-bench/headspace/harness/level"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/internal/summary"
)

// LadderScript is the document's whole training script at each caching
// level (peers/torch/ladder.py), relative to the repository's root.
const LadderScript = "peers/torch/ladder.py"

// LadderSettings are the settings both ladders run at: the document's
// training loop at each caching level, on the emulated device.
type LadderSettings struct {
	Width, Height int    // raw image size
	Crop          int    // side of the random crop
	Batch         int    // samples per batch
	Workers       int    // DataLoader worker processes; goroutines per stage for ours
	Steps         int    // measured steps a run, after one warm-up step
	Seed          uint64 // dataset and transform seed
	// Device is the emulated device both sides train on: its step and
	// bandwidths are passed to the script as arguments (--step,
	// --pinned-gbps, --pageable-gbps), so there is one source of them.
	// Uploads are pinned, as the document's pin_memory=True.
	Device device.EmulatedConfig
}

// DefaultLadderSettings is the document's pipeline (1024×1024 raw images
// cropped to 256, batches of 256) on the emulated device dev, with the
// given workers and 8 measured steps a run.
func DefaultLadderSettings(dev device.EmulatedConfig, workers int) LadderSettings {
	return LadderSettings{Width: 1024, Height: 1024, Crop: 256, Batch: 256, Workers: workers, Steps: 8, Seed: 1, Device: dev}
}

// Pipeline is our loader's configuration at these settings with impl's
// transforms.
func (s LadderSettings) Pipeline(impl string) loader.Config {
	return s.settings().Pipeline(impl, s.Workers)
}

// settings are the pipeline's Settings: sizes, batch and seed.
func (s LadderSettings) settings() Settings {
	return Settings{Width: s.Width, Height: s.Height, Crop: s.Crop, Batch: s.Batch, Seed: s.Seed}
}

// Validate reports the first problem with s, as our loader and device
// would.
func (s LadderSettings) Validate() error {
	if s.Steps < 1 {
		return fmt.Errorf("steps %d: want at least 1 measured step", s.Steps)
	}
	if s.Workers < 1 {
		return fmt.Errorf("workers %d must be positive", s.Workers)
	}
	if err := s.Device.Validate(); err != nil {
		return err
	}
	return s.Pipeline(Fast).Validate()
}

// device opens the emulated device, pinned.
func (s LadderSettings) device() (device.Device, error) {
	c := s.Device
	c.Pinned = true
	return device.NewEmulated(c)
}

// LadderArgs is the script's argv (after its path) for these settings at
// the levels: --device emulated with the device's step and bandwidths,
// and the pipeline's arguments (its --steps count the warm-up step).
func (s LadderSettings) LadderArgs(levels []level.Level) []string {
	return append([]string{
		"--device", "emulated",
		"--step", s.Device.Step.String(),
		"--pinned-gbps", strconv.FormatFloat(s.Device.PinnedBandwidth/1e9, 'g', -1, 64),
		"--pageable-gbps", strconv.FormatFloat(s.Device.PageableBandwidth/1e9, 'g', -1, 64),
		"--levels", levelNames(levels),
	}, s.settings().args("--steps", s.Steps+1, strconv.Itoa(s.Workers))...)
}

// Config lists the settings as results configuration lines.
func (s LadderSettings) Config() []resultfile.Config {
	return []resultfile.Config{
		{Key: "raw-size", Value: fmt.Sprintf("%dx%d", s.Width, s.Height)},
		{Key: "crop", Value: strconv.Itoa(s.Crop)},
		{Key: "batch", Value: strconv.Itoa(s.Batch)},
		{Key: "workers", Value: strconv.Itoa(s.Workers)},
		{Key: "steps", Value: strconv.Itoa(s.Steps)},
		{Key: "warmup", Value: "1"},
		{Key: "seed", Value: strconv.FormatUint(s.Seed, 10)},
		{Key: "emulated-step", Value: s.Device.Step.String()},
		{Key: "emulated-pinned-gbps", Value: fmt.Sprint(s.Device.PinnedBandwidth / 1e9)},
		{Key: "emulated-pageable-gbps", Value: fmt.Sprint(s.Device.PageableBandwidth / 1e9)},
		{Key: "pinned", Value: "true"},
	}
}

func levelNames(levels []level.Level) string {
	names := make([]string, len(levels))
	for i, l := range levels {
		names[i] = l.String()
	}
	return strings.Join(names, ",")
}

// LadderMeasurement is one run of one implementation at one caching level:
// the training loop's steps/s after its warm-up step.
type LadderMeasurement struct {
	Impl        string
	Level       level.Level
	Workers     int
	Steps       int // measured steps
	Batch       int
	StepsPerSec float64
}

// BenchName is the measurement's benchmark name, e.g.
// "BenchmarkPeerLadder/impl=torch/level=raw/workers=2".
func (m LadderMeasurement) BenchName() string {
	return fmt.Sprintf("BenchmarkPeerLadder/impl=%s/level=%s/workers=%d", m.Impl, m.Level, m.Workers)
}

// Benchmark is the measurement in benchmark format: steps/s and
// samples/s, the ladder's units.
func (m LadderMeasurement) Benchmark() *benchfmt.Result {
	return &benchfmt.Result{
		Name:  benchfmt.Name(m.BenchName()),
		Iters: m.Steps,
		Values: []benchfmt.Value{
			{Value: m.StepsPerSec, Unit: "steps/s"},
			{Value: m.StepsPerSec * float64(m.Batch), Unit: "samples/s"},
		},
	}
}

// LadderOutput is what ladder.py printed: its configuration lines and a
// measurement per level.
type LadderOutput struct {
	Config  []resultfile.Config
	Results []LadderMeasurement
}

// Get returns the value of the configuration key, or "".
func (o LadderOutput) Get(key string) string { return Output{Config: o.Config}.Get(key) }

// ParseLadder reads ladder.py's output: "key: value" configuration lines
// and one BenchmarkTorchLadder/level=<level>/workers=<n>[-procs] line per
// level with a positive, finite steps/s and samples/s. batch, the
// samples per batch, checks samples/s against steps/s. name is used in
// errors.
func ParseLadder(r io.Reader, name string, batch int) (LadderOutput, error) {
	config, ms, err := parseScript(r, name, TorchLadderLayout, func(n resultfile.Name, r *benchfmt.Result) (LadderMeasurement, error) {
		return ladderMeasurement(n, r, batch)
	})
	return LadderOutput{Config: config, Results: ms}, err
}

// TorchLadderLayout is the names of ladder.py's lines,
// BenchmarkTorchLadder/level=<level>/workers=<n>[-procs] (ParseLadder).
var TorchLadderLayout = resultfile.Layout{Owner: "ladder.py", Keys: map[string][]string{"TorchLadder": {"level", "workers"}}, Procs: true}

// ladderMeasurement checks one of ladder.py's results, whose name n gives
// (TorchLadderLayout), and converts it.
func ladderMeasurement(n resultfile.Name, r *benchfmt.Result, batch int) (LadderMeasurement, error) {
	m := LadderMeasurement{Impl: Torch, Level: -1, Batch: batch}
	full := resultfile.FullName(r)
	var err error
	if m.Level, err = level.Parse(n.Keys["level"]); err != nil {
		return m, fmt.Errorf("%s: %w", full, err)
	}
	if m.Workers, err = n.Count("workers", false); err != nil {
		return m, fmt.Errorf("%s: %w", full, err)
	}
	m.Steps = r.Iters
	sps, err := value(r, "steps/s", true)
	if err == nil && !(sps > 0) {
		err = fmt.Errorf("steps/s %g must be positive", sps)
	}
	if err != nil {
		return m, fmt.Errorf("%s: %w", full, err)
	}
	if samples, err := value(r, "samples/s", false); err != nil {
		return m, fmt.Errorf("%s: %w", full, err)
	} else if batch > 0 && samples > 0 && math.Abs(samples-sps*float64(batch)) > 0.01*samples+0.1 {
		return m, fmt.Errorf("%s: %g samples/s is not %g steps/s × a batch of %d", full, samples, sps, batch)
	}
	m.StepsPerSec = sps
	return m, nil
}

// RunLadder runs the script on the emulated device at settings s for the
// levels (one DataLoader per level, in the order given) and returns what
// it printed, checked: one measurement per level, of s's workers and
// steps, on the device s gives.
func (p Peer) RunLadder(ctx context.Context, s LadderSettings, levels []level.Level) (LadderOutput, error) {
	if len(levels) == 0 {
		return LadderOutput{}, errors.New("peer ladder: no levels")
	}
	out, err := p.exec(ctx, []int{s.Workers}, s.LadderArgs(levels)...)
	if err != nil {
		return LadderOutput{}, err
	}
	name := fmt.Sprintf("%s (levels=%s)", p.Script, levelNames(levels))
	o, err := ParseLadder(bytes.NewReader(out), name, s.Batch)
	if err != nil {
		return LadderOutput{}, err
	}
	if got, want := o.Get("torch-device"), "emulated"; got != want {
		return LadderOutput{}, fmt.Errorf("%s: ran on %q, want %q", name, got, want)
	}
	if got, want := o.Get("emulated-step"), s.Device.Step.String(); got != want {
		return LadderOutput{}, fmt.Errorf("%s: emulated step %q, want %q", name, got, want)
	}
	if len(o.Results) != len(levels) {
		return LadderOutput{}, fmt.Errorf("%s: printed %d results, want one per level", name, len(o.Results))
	}
	for i, m := range o.Results {
		if m.Level != levels[i] || m.Workers != s.Workers || m.Steps != s.Steps {
			return LadderOutput{}, fmt.Errorf("%s: result %d is level %s, %d workers, %d steps; want level %s, %d workers, %d steps",
				name, i+1, m.Level, m.Workers, m.Steps, levels[i], s.Workers, s.Steps)
		}
	}
	return o, nil
}

// Calibration is this machine's speed against the document's host, for
// the document's code: the DataLoader's samples/s at levels raw and none
// (the document's sizes, 4 workers, no step) over the document's 1.72 and
// 0.89 steps/s × 256 samples. Ratio is their geometric mean; Step is the
// document's 290 ms step over Ratio.
type Calibration struct {
	Ratio  float64
	Step   time.Duration
	Config []resultfile.Config // the script's configuration lines: calibration-*, torch, …
}

// Calibrate runs the script with --calibrate and reads its figures.
func (p Peer) Calibrate(ctx context.Context, batches int) (Calibration, error) {
	out, err := p.exec(ctx, nil, "--device", "emulated", "--calibrate", "--calibration-batches", strconv.Itoa(batches))
	if re := (*RunError)(nil); errors.As(err, &re) {
		re.What = "--calibrate"
	}
	if err != nil {
		return Calibration{}, err
	}
	name := p.Script + " --calibrate"
	rd := benchfmt.NewReader(bytes.NewReader(out), name)
	var c Calibration
	for rd.Scan() {
		if _, ok := rd.Result().(*benchfmt.SyntaxError); ok {
			return Calibration{}, fmt.Errorf("%s: %v", name, rd.Result())
		}
	}
	if err := rd.Err(); err != nil {
		return Calibration{}, fmt.Errorf("%s: %w", name, err)
	}
	// The configuration lines are the reader's alone: no result follows.
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && !strings.ContainsAny(k, " \t") && k != "" {
			c.Config = append(c.Config, resultfile.Config{Key: k, Value: strings.TrimSpace(v)})
		}
	}
	get := Output{Config: c.Config}.Get
	c.Ratio, err = strconv.ParseFloat(get("calibration-ratio"), 64)
	if err != nil || !(c.Ratio > 0) || math.IsInf(c.Ratio, 0) {
		return Calibration{}, fmt.Errorf("%s: calibration-ratio %q is not a positive number", name, get("calibration-ratio"))
	}
	c.Step, err = time.ParseDuration(get("calibrated-step"))
	if err != nil || c.Step <= 0 {
		return Calibration{}, fmt.Errorf("%s: calibrated-step %q is not a positive duration", name, get("calibrated-step"))
	}
	return c, nil
}

// LadderImpls lists the ladder comparison's implementations in the order
// of its table: the document's code, then ours.
var LadderImpls = []string{Torch, Naive, Fast}

// LadderConfig is one ladder comparison.
type LadderConfig struct {
	Peer     Peer
	Settings LadderSettings
	Levels   []level.Level // from device down; nil means level.Document
	// Impls are the implementations measured, a subset of LadderImpls;
	// nil means all of them.
	Impls []string
	// Count is the number of rounds; 0 means 1.
	Count int
}

// LevelOrder is the levels c runs, in the order it runs them: device
// first, down to none.
func (c LadderConfig) LevelOrder() []level.Level {
	ls := c.Levels
	if ls == nil {
		ls = level.Document
	}
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b level.Level) int { return int(b) - int(a) }) // device first
	return ls
}

func (c LadderConfig) impls() []string {
	if c.Impls == nil {
		return LadderImpls
	}
	return c.Impls
}

// Validate reports the first problem with c.
func (c LadderConfig) Validate() error {
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	for _, l := range c.LevelOrder() {
		if l.OnDisk() {
			return fmt.Errorf("level %s needs a dataset on disk; the document's ladder has none", l)
		}
		if err := ladder.Check(l, c.Settings.Pipeline(Fast)); err != nil {
			return err
		}
	}
	return checkImpls(c.impls(), LadderImpls, c.Count)
}

// LadderResult is what a LadderSweep measured: every run in the order
// they ran, and the script's configuration lines (nil if torch was not
// measured).
type LadderResult struct {
	Measurements []LadderMeasurement
	PeerConfig   []resultfile.Config
}

// LadderSweep runs the document's script and our ladder on the same
// emulated device, alternating as Sweep does, level by level. The script
// runs once per level (ladder.py --levels <level>); ours is ladder.Run on
// a fresh emulated device. each, if not nil, is called after every run
// with the run and everything so far (to save it: nothing is lost when a
// later run fails or the sweep is interrupted). On error the runs so far
// are returned with it.
func LadderSweep(ctx context.Context, c LadderConfig, each func(LadderMeasurement, LadderResult) error) (LadderResult, error) {
	var res LadderResult
	if err := c.Validate(); err != nil {
		return res, err
	}
	err := alternate(ctx, c.Count, c.LevelOrder(), c.impls(), func(round int, l level.Level, impl string) error {
		m, err := measureLevel(ctx, c, &res, impl, l)
		if err != nil {
			return fmt.Errorf("round %d, %s, level %s: %w", round+1, impl, l, err)
		}
		res.Measurements = append(res.Measurements, m)
		if each != nil {
			return each(m, res)
		}
		return nil
	})
	return res, err
}

// measureLevel runs impl once at level l; the script's first run sets
// res.PeerConfig.
func measureLevel(ctx context.Context, c LadderConfig, res *LadderResult, impl string, l level.Level) (LadderMeasurement, error) {
	s := c.Settings
	if impl == Torch {
		out, err := c.Peer.RunLadder(ctx, s, []level.Level{l})
		if err != nil {
			return LadderMeasurement{}, err
		}
		peerConfig(&res.PeerConfig, out.Config)
		return out.Results[0], nil
	}
	return RunOurLadder(ctx, s, impl, l)
}

// RunOurLadder runs our training loop (ladder.Run) once at level l with
// impl's transforms on a fresh emulated device of s's.
func RunOurLadder(ctx context.Context, s LadderSettings, impl string, l level.Level) (LadderMeasurement, error) {
	dev, err := s.device()
	if err != nil {
		return LadderMeasurement{}, err
	}
	defer dev.Close()
	r, err := ladder.Run(ctx, l, s.Pipeline(impl), dev, train.Config{Steps: s.Steps, Warmup: 1})
	if err != nil {
		return LadderMeasurement{}, err
	}
	return LadderMeasurement{Impl: impl, Level: l, Workers: s.Workers, Steps: r.Steps, Batch: s.Batch, StepsPerSec: r.StepsPerSec()}, nil
}

// LadderRow is one level of the comparison: each implementation's median
// steps/s and its ratio to that implementation's own level device.
type LadderRow struct {
	Level  level.Level
	Runs   map[string][]float64 // steps/s of every run, by implementation
	Median map[string]float64
	// Ratio is Median over the implementation's median at level device;
	// NaN where device was not measured.
	Ratio map[string]float64
}

// SummarizeLadder returns one row per level, device first, from the
// measurements.
func SummarizeLadder(ms []LadderMeasurement) []LadderRow {
	by := map[level.Level]*LadderRow{}
	var levels []level.Level
	for _, m := range ms {
		r := by[m.Level]
		if r == nil {
			r = &LadderRow{Level: m.Level, Runs: map[string][]float64{}, Median: map[string]float64{}, Ratio: map[string]float64{}}
			by[m.Level] = r
			levels = append(levels, m.Level)
		}
		r.Runs[m.Impl] = append(r.Runs[m.Impl], m.StepsPerSec)
	}
	slices.SortFunc(levels, func(a, b level.Level) int { return int(b) - int(a) })
	rows := make([]LadderRow, 0, len(levels))
	for _, l := range levels {
		r := by[l]
		for impl, runs := range r.Runs {
			r.Median[impl] = summary.Median(runs)
		}
		rows = append(rows, *r)
	}
	dev := map[string]float64{}
	if d, ok := by[level.Device]; ok {
		dev = d.Median
	}
	for i := range rows {
		for impl, med := range rows[i].Median {
			rows[i].Ratio[impl] = math.NaN()
			if d, ok := dev[impl]; ok && d > 0 {
				rows[i].Ratio[impl] = med / d
			}
		}
	}
	return rows
}

// WriteLadderTable writes the rows as a plain-text table: per level, each
// implementation's median steps/s and its ratio to its own device level,
// in LadderImpls' order.
func WriteLadderTable(w io.Writer, rows []LadderRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"level"}
	var impls []string
	for _, impl := range LadderImpls {
		if slices.ContainsFunc(rows, func(r LadderRow) bool { _, ok := r.Median[impl]; return ok }) {
			impls = append(impls, impl)
			head = append(head, impl+" steps/s", impl+" ÷ device")
		}
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		cells := []string{r.Level.String()}
		for _, impl := range impls {
			med, ok := r.Median[impl]
			if !ok {
				cells = append(cells, "-", "-")
				continue
			}
			ratio := "-"
			if !math.IsNaN(r.Ratio[impl]) {
				ratio = fmt.Sprintf("%.2f", r.Ratio[impl])
			}
			cells = append(cells, fmt.Sprintf("%.3f", med), ratio)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	return tw.Flush()
}
