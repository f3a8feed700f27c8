package workloads

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/timeline"
	"github.com/headspace-bench/headspace/harness/whatif"
)

// Caching is document 003's whole experiment, composed of the others
// (issue 33): the caching ladder and its optimisation steps (CachingSteps:
// four Ladder sweeps on one device), the what-if model's profiles of the
// pipelines of steps (a) and (b) (WhatIf, stopped after its profile), and
// step (e), the raw-data remedies on real files (OnDisk). Its records are
// theirs (BenchmarkLadder/step=<key>/…, BenchmarkLadderOnDisk/…), and its
// Settings is its result file's whole configuration block. Last, the
// yardstick: the document's own code beside ours (CachingYardstick, a
// PeerLadder of the script alone). What it measured beside its records
// is in its outcome (CachingOutcome): the timeline of the first naive
// run at level none, the two profiles (CachingModel) and the
// yardstick's lines of the result file, which only its run knows.
type Caching struct {
	// Ladder is the document's pipeline, loop and runs (Count, as
	// rounds of every step): each step's sweep is made from it.
	Ladder Ladder
	// SmallRaw is the side of the smaller raw image of steps (c) and (d).
	SmallRaw int
	// Workers is the loader workers per stage of every step.
	Workers int
	// Step is the device's step, as the result file records it; with
	// Emulated the what-if model's profiles run at it too (a real device
	// is profiled at its own).
	Step     time.Duration
	Emulated bool
	// Model is the what-if model's experiment of the size; its pipeline
	// and loop are replaced by each step's (Profile).
	Model WhatIf
	// OnDisk is step (e); its workers are Workers.
	OnDisk OnDisk
	// Yardstick is the document's code run after ours; with its zero
	// value it does not run, and the result file says so.
	Yardstick CachingYardstick
}

// CachingStep is one step of the document's ladder: a pipeline
// configuration measured at some levels.
type CachingStep struct {
	Key        string // "a": its records are BenchmarkLadder/step=a/…
	Impl       string // the transforms
	Raw        int    // the raw image's side
	Placements []loader.Placement
	Levels     []level.Level
}

// CachingSteps are the document's four steps, with the raw image at raw
// and shrunk to small: (a) the caching ladder, (b) the transform fix, (c)
// the smaller raw image, (d) the uint8 transfer converted on the device.
func CachingSteps(raw, small int) []CachingStep {
	all := level.Descending(level.Document) // the document's five, device first
	host := []loader.Placement{loader.Host}
	return []CachingStep{
		{Key: "a", Impl: transforms.Naive, Raw: raw, Placements: host, Levels: all},
		{Key: "b", Impl: transforms.Fast, Raw: raw, Placements: host, Levels: all},
		{Key: "c", Impl: transforms.Fast, Raw: small, Placements: host, Levels: []level.Level{level.Device, level.None}},
		{Key: "d", Impl: transforms.Fast, Raw: small, Placements: []loader.Placement{loader.Host, loader.Device},
			Levels: []level.Level{level.Device, level.Host, level.None}},
	}
}

// CachingOnDiskBatch is step (e)'s largest batch: to keep `make
// reproduce` within minutes on 2 cores it runs batches of at most this
// (not the document's 256).
const CachingOnDiskBatch = 64

// caching is the experiment at a size: the ladder's, what-if model's and
// on-disk matrix's own, and the document's smaller raw image. Step (e)
// is OnDisk's whole matrix (the document's remedies and issue 23's two
// corrections) with fast transforms, as after the document's transform
// fix, and batches of at most CachingOnDiskBatch; OnDisk.Plan's sharing
// makes it 222 runs instead of 672 on Linux.
func caching(l Ladder, w WhatIf, o OnDisk, small int, step time.Duration) Caching {
	o.Ladder.Transforms = []string{transforms.Fast}
	o.Ladder.Pipeline.Batch = min(o.Ladder.Pipeline.Batch, CachingOnDiskBatch)
	return Caching{Ladder: l, SmallRaw: small, Workers: l.Workers[0], Step: step, Emulated: true, Model: w, OnDisk: o}
}

// DefaultCaching is the document's experiment at its sizes, on the
// emulated device at the document's step.
func DefaultCaching() Caching {
	return caching(DefaultLadder(), DefaultWhatIf(), DefaultOnDisk(), LadderDocumentSmallRaw, DocumentStep)
}

// QuickCaching runs every code path in seconds: the raw image is shrunk
// to half its side.
func QuickCaching() Caching {
	l := QuickLadder()
	return caching(l, QuickWhatIf(), QuickOnDisk(), l.Pipeline.Dataset.Width/2, QuickStep)
}

// Name is "Caching"; its records are its parts' (Ladder, LadderOnDisk).
func (Caching) Name() string { return "Caching" }

// Document is "003".
func (Caching) Document() string { return "003" }

// Steps is the experiment's four steps at its raw sizes.
func (c Caching) Steps() []CachingStep {
	return CachingSteps(c.Ladder.Pipeline.Dataset.Width, c.SmallRaw)
}

// Sweep is the ladder of step st: one run of every point per call, its
// records BenchmarkLadder/step=<key>/level=…/….
func (c Caching) Sweep(st CachingStep) Ladder {
	w := c.Ladder
	w.Levels, w.Workers, w.Transforms, w.Placements, w.Pinned = st.Levels, []int{c.Workers}, []string{st.Impl}, st.Placements, []bool{true}
	// One run of every point, Ladder.Count times over (Run), so the runs
	// of each level spread over the machine's ups and downs alike.
	w.Count = 1
	w.Pipeline.Dataset.Width, w.Pipeline.Dataset.Height = st.Raw, st.Raw
	w.Under = w.Name() + "/step=" + st.Key
	return w
}

// Profile is the what-if model's experiment that profiles the pipeline of
// impl at the document's setting, with no checks and no ladder, so that
// its Run stops after the profile.
func (c Caching) Profile(impl string) WhatIf {
	w := c.Model
	w.Pipeline, w.Train = c.Ladder.Pipeline, c.Ladder.Train
	w.Pipeline.Workers, w.Pipeline.Impl = c.Workers, impl
	w.Verify, w.WithLadder = whatif.Grid{}, false
	if c.Emulated {
		w.Step = c.Step
	}
	return w
}

// Disk is step (e) with the experiment's workers.
func (c Caching) Disk() OnDisk {
	o := c.OnDisk
	o.Ladder.Workers = []int{c.Workers}
	return o
}

// Modelled is the steps whose pipelines the what-if model profiles:
// (a) and (b), the naive and the fast transforms at the full raw size.
func (c Caching) Modelled() []CachingStep { return c.Steps()[:2] }

// CachingModel is the what-if model's profiles, by the transforms of the
// pipeline profiled (Modelled).
type CachingModel map[string]whatif.Profile

// Units is the units of work Run starts (Env.Start): one per run of a
// step's point, one per profile, one for step (e), and, once Prepare has
// found the document's code, the yardstick's calibration and one per
// round of it.
func (c Caching) Units() int {
	n := 0
	for _, st := range c.Steps() {
		n += c.Ladder.Count * len(st.Levels) * len(st.Placements)
	}
	return n + len(c.Modelled()) + 1 + c.yardstickUnits()
}

// Settings is the result file's configuration block: step (a)'s ladder's
// settings, the small raw size, the workers, the rounds, the device's
// step and whether it is emulated; then step (e)'s own (its batch, steps
// and warm-up prefixed "ondisk-", its samples and runs; the rest are the
// ladder's, and a case's raw size and the rest in its records' names).
func (c Caching) Settings() []resultfile.Config {
	steps := c.Steps()
	s := c.Sweep(steps[0]).Settings()
	for _, key := range c.Sweep(steps[len(steps)-1]).Pipeline.Settings() {
		if key.Key == "raw-size" {
			s = append(s, resultfile.Config{Key: "small-raw-size", Value: key.Value})
		}
	}
	s = append(s,
		resultfile.Config{Key: "workers", Value: fmt.Sprint(c.Workers)},
		resultfile.Config{Key: "count", Value: fmt.Sprint(c.Ladder.Count)},
		resultfile.Config{Key: "step", Value: c.Step.String()},
		resultfile.Config{Key: "emulated", Value: fmt.Sprint(c.Emulated)},
	)
	for _, k := range c.Disk().Settings() {
		switch k.Key {
		case "batch", "steps", "warmup":
			k.Key = "ondisk-" + k.Key
		case "ondisk-samples", "ondisk-count":
		default:
			continue
		}
		s = append(s, k)
	}
	return s
}

// Validate reports the first problem with the experiment.
func (c Caching) Validate() error {
	for _, st := range c.Steps() {
		if err := c.Sweep(st).Validate(); err != nil {
			return fmt.Errorf("step (%s): %w", st.Key, err)
		}
	}
	if err := c.Disk().Validate(); err != nil {
		return fmt.Errorf("step (e): %w", err)
	}
	return nil
}

// CachingOutcome is what a Caching measured, in the order it measured
// it: its steps' runs, the timeline and the model's profiles, step (e)'s
// runs and the yardstick's. The timeline, the profiles and the
// yardstick's lines are not in the records (a decoded outcome has none,
// nor the yardstick's calibration): the report saves the first two
// beside the result file, the lines in its configuration block.
type CachingOutcome struct {
	Runs []CachingRun
	// Timeline is the timeline of step (a)'s first run at level none.
	Timeline *timeline.Timeline
	// Model is the what-if model's profiles; nil until they are made.
	Model     CachingModel
	OnDisk    OnDiskOutcome     // step (e)
	Yardstick PeerLadderOutcome // the document's code, its calibration first
	// YardstickLines are the yardstick's lines of the result file
	// (whether it ran and why not, its calibration, the script's command
	// line and versions), known at the end.
	YardstickLines []resultfile.Config
}

// CachingRun is one run of a step's point: BenchmarkLadder/step=<Step>/….
type CachingRun struct {
	Step string // the step's key, "a"
	PointRun
}

var _ Typed[CachingOutcome] = Caching{}

// Measure is MeasureEach with no callback.
func (c Caching) Measure(ctx context.Context, env Env) (CachingOutcome, error) {
	return c.MeasureEach(ctx, env, nil)
}

// MeasureEach opens env's device once and runs, on it, Ladder.Count
// rounds of every step (each round one run of each point; the timeline
// of step (a)'s first run at level none recorded); then the model's
// profiles (on env's device, whose step it scales); then step (e); then
// the yardstick (Prepare decides whether it runs). each, if not nil,
// receives the outcome so far after each run of a step's point, the
// profiles, step (e), the yardstick's calibration and each of its runs,
// and an error from it stops the run: Run streams the new records from
// it, and document 003's report shows its progress and saves the
// timeline and the profiles as they are made. Each unit (Units) is one
// of env.Start, named as "(a) naive level=none run 1/5".
func (c Caching) MeasureEach(ctx context.Context, env Env, each func(CachingOutcome) error) (CachingOutcome, error) {
	var out CachingOutcome
	if err := c.Validate(); err != nil {
		return out, err
	}
	if !c.Yardstick.Checked {
		c = c.Prepare(ctx)
	}
	if each == nil {
		each = func(CachingOutcome) error { return nil }
	}
	dev, err := env.device().Open(true)
	if err != nil {
		return out, fmt.Errorf("opening the device: %w", err)
	}
	defer dev.Close()
	if err := c.runSteps(ctx, env, dev, &out, each); err != nil {
		return out, err
	}
	if out.Model, err = c.profiles(ctx, env); err != nil {
		return out, err
	}
	if err := each(out); err != nil {
		return out, err
	}

	o := c.Disk()
	env.start(fmt.Sprintf("(e) on disk: %d cases, %d runs", len(o.Cases()), o.Runs()))
	out.OnDisk, err = o.Measure(ctx, Env{Device: Opened(dev), Dir: env.Dir}) // the steps' device
	if err != nil {
		return out, fmt.Errorf("step (e): %w", err)
	}
	if err := each(out); err != nil {
		return out, err
	}

	out.Yardstick, out.YardstickLines, err = c.runYardstick(ctx, env, func(sofar PeerLadderOutcome) error {
		out.Yardstick = sofar
		return each(out)
	})
	return out, err
}

// runSteps runs Ladder.Count rounds of every step on dev, which they
// share and never close, adding each run to out and passing out to each
// after it; the timeline of step (a)'s first run at level none goes to
// out.Timeline.
func (c Caching) runSteps(ctx context.Context, env Env, dev device.Device, out *CachingOutcome, each func(CachingOutcome) error) error {
	shared := Opened(dev)
	for _, st := range c.Steps() {
		w := c.Sweep(st)
		labels, none := stepLabels(w, st)
		for run := range c.Ladder.Count {
			sub := Env{
				Device: shared,
				Start:  func(name string) { env.start(fmt.Sprintf("%s run %d/%d", labels[name], run+1, c.Ladder.Count)) },
			}
			if st.Key == "a" && run == 0 {
				sub.Record = func(name string) bool { return name == none }
				sub.Recorded = func(_ string, rec *pipeline.Recorder) error {
					out.Timeline = timeline.FromRecorder(fmt.Sprintf("level none, %s transforms, %d workers, on %s", st.Impl, c.Workers, dev.Name()), rec, c.Ladder.Pipeline.Batch)
					return nil
				}
			}
			if _, err := w.MeasureEach(ctx, sub, func(r PointRun) error {
				out.Runs = append(out.Runs, CachingRun{Step: st.Key, PointRun: r})
				return each(*out)
			}); err != nil {
				return fmt.Errorf("step (%s): %w", st.Key, err)
			}
		}
	}
	return nil
}

// stepLabels are the units' names of step st's points, by point name, as
// its sweep w names them ("(a) naive level=none", with the placement
// where the step has several), and the name of its point at level none.
func stepLabels(w Ladder, st CachingStep) (labels map[string]string, none string) {
	labels = map[string]string{}
	for _, pt := range w.Points() {
		label := fmt.Sprintf("(%s) %s level=%s", st.Key, st.Impl, pt.Level)
		if len(st.Placements) > 1 {
			label += " placement=" + pt.Placement.String()
		}
		labels[w.PointName(pt)] = label
		if pt.Level == level.None {
			none = w.PointName(pt)
		}
	}
	return labels, none
}

// profiles are the what-if model's profiles of the modelled steps'
// pipelines, each made on env's device.
func (c Caching) profiles(ctx context.Context, env Env) (CachingModel, error) {
	model := CachingModel{}
	for _, st := range c.Modelled() {
		impl := st.Impl
		env.start(fmt.Sprintf("(model) %s profile", impl))
		o, err := c.Profile(impl).Measure(ctx, Env{Device: env.Device})
		if err != nil {
			return nil, fmt.Errorf("the model of the %s transforms: %w", impl, err)
		}
		model[impl] = *o.Profile
	}
	return model, nil
}

// Run is MeasureEach, each record passed to env.Result as soon as the
// outcome holds it (the steps' runs one by one, step (e)'s once it has
// run, the yardstick's one by one); it returns the records
// (CachingCodec).
func (c Caching) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	sent := 0
	pass := func(o CachingOutcome) error {
		recs := CachingCodec.Encode(o)
		for ; sent < len(recs); sent++ {
			if err := env.result(recs[sent]); err != nil {
				return err
			}
		}
		return nil
	}
	o, err := c.MeasureEach(ctx, env, pass)
	if perr := pass(o); err == nil {
		err = perr
	}
	return CachingCodec.Encode(o), err
}

// Codec is CachingCodec.
func (Caching) Codec() Codec[CachingOutcome] { return CachingCodec }

// CachingCodec is a Caching's records codec: its parts' records, in the
// order they were made: the steps' runs,
// BenchmarkLadder/step=<key>/level=…/… (a ladder point's, LadderCodec's
// under the step), step (e)'s (OnDiskCodec's) and the yardstick's
// (PeerLadderCodec's). Decode reads each back by its benchmark.
var CachingCodec = Codec[CachingOutcome]{
	Experiment: "Caching",
	Keys: map[string][]string{
		"Ladder":       append([]string{"step"}, pointKeys...),
		"LadderOnDisk": OnDiskCodec.Keys["LadderOnDisk"],
		"PeerLadder":   PeerLadderCodec.Keys["PeerLadder"],
	},
	Optional: OnDiskCodec.Optional,
	Procs:    true,
	encode: func(o CachingOutcome) []*benchfmt.Result {
		out := recordsOf(o.Runs, CachingRun.record)
		return append(append(out, OnDiskCodec.Encode(o.OnDisk)...), PeerLadderCodec.Encode(o.Yardstick)...)
	},
	decode: func(recs []Record) (CachingOutcome, error) {
		var out CachingOutcome
		var disk, yardstick []Record
		for _, r := range recs {
			switch r.Benchmark {
			case "LadderOnDisk":
				disk = append(disk, r)
			case "PeerLadder":
				yardstick = append(yardstick, r)
			default:
				p, err := r.pointRun()
				if err != nil {
					return out, err
				}
				out.Runs = append(out.Runs, CachingRun{Step: r.Keys["step"], PointRun: p})
			}
		}
		var err error
		if out.OnDisk, err = decodeOnDisk(disk); err != nil {
			return out, err
		}
		out.Yardstick, err = PeerLadderCodec.decode(yardstick)
		return out, err
	},
}
