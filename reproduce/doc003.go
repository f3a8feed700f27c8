package reproduce

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	reports "github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/timeline"
	"github.com/headspace-bench/headspace/harness/whatif"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/summary"
	"github.com/headspace-bench/headspace/workloads"
)

// The document 003's other figures: accelerator utilisation at the
// baseline (22%) and with a device-cached batch (about 95%), and the
// steps/s after each optimisation.

// The document 003's pipeline: batches of 256 from 4 DataLoader workers.
const (
	doc003Batch   = workloads.LadderDocumentBatch
	doc003Workers = workloads.LadderDocumentWorkers
)

// doc003RawBound is the most a raw sample can have taken in the document
// after the transform fix, when raw loading bounded it at 1.28 steps/s: a
// step's time on every worker, over the batch.
func doc003RawBound() time.Duration {
	return time.Duration(float64(time.Second) / workloads.LadderDocumentFixed[level.None] * doc003Workers / doc003Batch)
}

// LevelRow is one level of one step of document 003: the document's
// figure and our runs.
type LevelRow struct {
	Level level.Level
	// Doc is the document's steps/s at this level; NaN where it gives none.
	Doc float64
	// DocAU is the document's accelerator utilisation in %; NaN where it
	// gives none.
	DocAU float64
	Runs  []float64 // our steps/s, one per run
	AU    []float64 // our accelerator utilisation in %, one per run
	// Load and Transform are the mean time per sample of the pipeline's
	// load and transform stages over the runs (levels none and raw).
	Load, Transform time.Duration
}

// LadderStep is one step of the document 003's experiment: a pipeline
// configuration measured at some levels of the ladder.
type LadderStep struct {
	Key     string // "a"
	Title   string
	Setup   string // the configuration, in words
	Command string // the equivalent `headspace ladder` command
	Rows    []LevelRow
}

// TransferRow is one level and transfer dtype of the uint8 step.
type TransferRow struct {
	Transfer string // "float32" or "uint8"
	Level    level.Level
	Runs     []float64 // steps/s
	// UploadBytes is the bytes per upload from the device's counters
	// (ladder.Result.UploadBytesPerBatch); 0 at level device.
	UploadBytes float64
	// ShapeBytes is the batch's payload from its shape: values × the
	// dtype's size, plus 4-byte labels.
	ShapeBytes int64
	// Upload is the copy time per upload, Convert the on-device uint8 →
	// float32 conversion time per step, both from the device's counters.
	Upload, Convert time.Duration
	// Transform is the host's mean transform time per sample (level none).
	Transform time.Duration
}

// TransferStep is the uint8-transfer step.
type TransferStep struct {
	Setup   string
	Command string
	Rows    []TransferRow
}

// Result003 is document 003's measured values.
type Result003 struct {
	Header   Header
	Workers  int           // loader workers per stage
	Batch    int           // samples per batch
	Step     time.Duration // the emulated device's step; 0 for another device
	Steps    []LadderStep
	Transfer *TransferStep // nil when not run
	// Links to the figures: the ladder (ratios to device), the level none
	// through the steps, and a timeline of one run at level none.
	LadderFigure, StepsFigure, Timeline string
	// Model is the what-if model's reading of steps (a) and (b): the
	// stages' CPU time beside the ladder's attribution.
	Model []ModelReading
	// OnDisk is step (e), the raw-data remedies on real files; nil when
	// not run.
	OnDisk *OnDiskStep
	// Yardstick is the document's code on this machine beside ours
	// (doc003torch.go); nil leaves its table out.
	Yardstick *Yardstick
}

// ModelReading is the model's reading of one pipeline beside its ladder.
type ModelReading struct {
	Title   string // "naive transforms"
	Reading whatif.LadderReading
}

// OnDiskStep is the ladder over datasets on disk: every case's medians
// and ratios to its device level.
type OnDiskStep struct {
	Setup string
	Rows  []workloads.OnDiskRow
}

// model003File is the saved profiles of the what-if model, one per
// transform implementation (a JSON object of whatif.Profile by name),
// beside the result file.
const model003File = "003-model.json"

// profiles003 reads the saved profiles.
func profiles003(pg *page) (map[string]whatif.Profile, error) {
	path, b, err := pg.readSaved(model003File)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, &FileError{Path: path, Err: fmt.Errorf("not saved profiles: %w", err)}
	}
	delete(raw, "format") // the output policy's stamp
	ps := make(map[string]whatif.Profile, len(raw))
	for k, v := range raw {
		var p whatif.Profile
		if err := json.Unmarshal(v, &p); err != nil {
			return nil, &FileError{Path: path, Err: fmt.Errorf("not saved profiles: %s: %w", k, err)}
		}
		if err := p.Validate(); err != nil {
			return nil, &FileError{Path: path, Err: fmt.Errorf("profile %s: %w", k, err)}
		}
		ps[k] = p
	}
	return ps, nil
}

// onDisk003Step is step (e) from the file: its runs decoded by
// workloads.CachingCodec (OnDiskCodec's), through
// workloads.OnDiskRatios, its setup from the file's configuration; nil
// when the file has none.
func onDisk003Step(f *resultFile, o workloads.OnDiskOutcome) *OnDiskStep {
	if len(o.Runs) == 0 {
		return nil
	}
	return &OnDiskStep{Setup: fmt.Sprintf("fast transforms (after the transform fix), crop %d, batch %d, %d workers; the data written by `headspace dataset write` (%d samples a dataset, so a cold run reads each file once); %s of %s (after %d warm-up) at each level",
		f.integer("crop"), onDiskBatch003(f), f.integer("workers"), f.integer("ondisk-samples"),
		reports.Plural(f.integer("ondisk-count"), "run"), reports.Plural(f.integer("ondisk-steps"), "measured step"), f.integer("ondisk-warmup")),
		Rows: workloads.OnDiskRatios(o.Runs)}
}

// has reports whether the file has a configuration line for key.
func (f *resultFile) has(key string) bool {
	_, ok := f.config[key]
	return ok
}

// onDiskBatch003 is step (e)'s batch size as the file records it (files
// from before it was recorded ran the document's batch).
func onDiskBatch003(f *resultFile) int {
	if f.has("ondisk-batch") {
		return f.integer("ondisk-batch")
	}
	return f.integer("batch")
}

// sizes003 are the pipeline sizes of a run, as its result file records
// them.
type sizes003 struct {
	raw, small, crop, batch int
	steps, warmup, count    int
}

// step003 is the title of step key of the experiment
// (workloads.CachingSteps), with the raw image at raw and shrunk to
// small, and the document's figures of it.
func step003(key string, raw, small int) (title string, doc map[level.Level]float64) {
	titles := map[string]string{"a": "The caching ladder", "b": "Transform fix", "c": fmt.Sprintf("Smaller raw image (%d → %d)", raw, small),
		"d": "uint8 transfer, converted on the device"}
	docs := map[string]map[level.Level]float64{"a": workloads.LadderDocument, "b": withDevice(workloads.LadderDocumentFixed),
		"c": withDevice(workloads.LadderDocumentSmall)}
	return titles[key], docs[key]
}

// timeline003 is the saved timeline of the first naive run at level none
// (timeline.Timeline as JSON), beside the result file.
const timeline003 = "003-timeline-none.json"

// The report of document 003: its experiment, measured by measure003 and
// rendered by render003.
func init() {
	report(Doc{ID: "003", Name: "caching-ladder", Title: "A Caching Strategy for Identifying Bottlenecks on the Data Input Pipeline", Summary: "the caching ladder, then its optimisation steps: the transform fix, the smaller raw image, the uint8 transfer", Source: "003 (`003_6d72fe6df9c9377c.txt`)", Experiment: workloads.Caching{}, Saved: []string{timeline003, model003File}, measure: measure003, render: render003})
}

// measure003 runs the document's experiment, workloads.Caching, at the
// run's size, workers and device, with the document's code as its
// yardstick: its records (workloads.CachingCodec) and settings go to the
// result file (the yardstick's lines too), the timeline and the profiles
// of its outcome to the saved files beside it (timeline003,
// model003File) as soon as they are made (one that cannot be saved stops
// the run there), each of its units to the progress.
func measure003(ctx context.Context, s *settings, t *tracker) (measurement, error) {
	c := caching003(s).Prepare(ctx)
	if why := c.Yardstick.NotRun; why != "" {
		t.logf("the document's code (peers/torch/ladder.py) is not measured: %s", why)
	}
	t.begin(c.Units())

	// Each unit of the experiment is one of the progress; a run of a
	// point ends its unit with its steps/s, the yardstick's calibration
	// with its ratio, a round of the yardstick with its none.
	levels := c.YardstickExperiment().Config.Levels
	save := func(name string, b []byte, err error) error {
		if err == nil {
			err = atomicfile.WriteKindBytes(filepath.Join(s.Out, "results", name), savedKind, b)
		}
		return err
	}
	var seen workloads.CachingOutcome // the outcome the progress has shown
	o, err := c.MeasureEach(ctx, s.env(t), func(o workloads.CachingOutcome) error {
		was := seen
		seen = o
		if n := len(o.Runs); n > len(was.Runs) {
			t.end("%s: %.3f steps/s", t.running, o.Runs[n-1].Result.StepsPerSec())
		}
		if y := o.Yardstick; y.Calibration != nil && was.Yardstick.Calibration == nil {
			t.end("%s: ratio %.3f, step %v", t.running, y.Calibration.Ratio, y.Calibration.Step)
		}
		if n := len(o.Yardstick.Measurements); n > len(was.Yardstick.Measurements) && n%len(levels) == 0 {
			t.end("%s: none %.3f steps/s", t.running, o.Yardstick.Measurements[n-1].StepsPerSec)
		}
		if o.Timeline != nil && was.Timeline == nil {
			b, err := json.Marshal(o.Timeline)
			if err := save(timeline003, b, err); err != nil {
				return err
			}
		}
		if o.Model != nil && was.Model == nil {
			b, err := json.MarshalIndent(o.Model, "", "  ")
			return save(model003File, b, err)
		}
		return nil
	})
	if err != nil {
		return measurement{}, err
	}
	t.end("%s", t.running)
	return measurement{config: append(c.Settings(), o.YardstickLines...), recs: workloads.CachingCodec.Encode(o)}, nil
}

// caching003 is the document's experiment at the run's size, with the
// run's workers, device step and device, and the document's code
// (Options.TorchPeer, DefaultTorchPeer when unset) as its yardstick,
// calibrated unless the run is quick.
func caching003(s *settings) workloads.Caching {
	c := workloads.Sized[workloads.Caching](s.size())
	c.Workers, c.Step, c.Emulated = s.Workers, s.Step, s.emulated
	c.Yardstick = workloads.CachingYardstick{Peer: s.TorchPeer, Calibrate: !s.Quick}
	if p := s.TorchPeer; p.Python == "" && p.Script == "" && p.Env == nil {
		c.Yardstick.Peer = DefaultTorchPeer
	}
	return c
}

// render003 reads document 003's result file and the files saved beside
// it into Result003, draws its figures and writes its report.
func render003(f *resultFile, pg *page) ([]byte, error) {
	z := sizes003{raw: f.square("raw-size"), small: f.square("small-raw-size"), crop: f.integer("crop"), batch: f.integer("batch"),
		steps: f.integer("steps"), warmup: f.integer("warmup"), count: f.integer("count")}
	workers, step, emulated := f.integer("workers"), f.duration("step"), f.boolean("emulated")
	res := Result003{Header: f.header(), Workers: workers, Batch: z.batch}
	if err := f.check(); err != nil {
		return nil, err
	}
	if emulated {
		res.Step = step
	}
	o, err := decoded(f, workloads.CachingCodec)
	if err != nil {
		return nil, err
	}
	steps := workloads.CachingSteps(z.raw, z.small)
	for _, p := range steps {
		title, doc := step003(p.Key, z.raw, z.small)
		st := LadderStep{Key: p.Key, Title: title, Setup: setup003(p, z, workers),
			Command: ladderCommand(p.Impl, p.Raw, z, workers, step, p.Levels, p.Placements)}
		if len(p.Placements) == 1 {
			st.Rows = levelRows003(p, doc, o.Runs)
			res.Steps = append(res.Steps, st)
			continue
		}
		res.Transfer = transferStep003(p, st, z, workers, o.Runs)
	}
	if res.Timeline, err = timeline003Figure(pg); err != nil {
		return nil, err
	}
	if res.Model, err = model003(pg, res.Steps, steps); err != nil {
		return nil, err
	}
	res.OnDisk = onDisk003Step(f, o.OnDisk)
	res.Yardstick = yardstick003(f, o.Yardstick.Measurements)
	if err := f.check(); err != nil {
		return nil, err
	}
	if res.LadderFigure, res.StepsFigure, err = plots003(pg, res); err != nil {
		return nil, err
	}
	return markdown(res)
}

// setup003 is step p's setup, in words.
func setup003(p workloads.CachingStep, z sizes003, workers int) string {
	return fmt.Sprintf("%s transforms, raw %d×%d, crop %d, batch %d, %d workers; %s of %s (after %d warm-up) at each level",
		p.Impl, p.Raw, p.Raw, z.crop, z.batch, workers, reports.Plural(z.count, "run"), reports.Plural(z.steps, "measured step"), z.warmup)
}

// stepRuns are the runs of step key's point at placement pl and level l.
func stepRuns(runs []workloads.CachingRun, key string, pl loader.Placement, l level.Level) []workloads.PointRun {
	var rs []workloads.PointRun
	for _, r := range runs {
		if r.Step == key && r.Point.Level == l && r.Point.Placement == pl {
			rs = append(rs, r.PointRun)
		}
	}
	return rs
}

// levelRows003 are the rows of step p, one placement on the host: at each
// of its levels the document's figures (doc, and in step (a) its
// accelerator utilisation) beside our runs.
func levelRows003(p workloads.CachingStep, doc map[level.Level]float64, runs []workloads.CachingRun) []LevelRow {
	var rows []LevelRow
	for _, l := range p.Levels {
		rs := stepRuns(runs, p.Key, loader.Host, l)
		row := LevelRow{Level: l, Doc: lookup(doc, l), DocAU: math.NaN(), Runs: runValues(rs, "steps/s"), AU: runValues(rs, "au-%"),
			Load: meanDur(runValues(rs, "load-ns/sample")), Transform: meanDur(runValues(rs, "transform-ns/sample"))}
		if p.Key == "a" {
			row.DocAU = lookup(workloads.LadderDocumentAU, l)
		}
		rows = append(rows, row)
	}
	return rows
}

// transferStep003 is the uint8-transfer step p, with st's setup and
// command: a row per placement and level, the batch's payload from the
// placement's shape.
func transferStep003(p workloads.CachingStep, st LadderStep, z sizes003, workers int, runs []workloads.CachingRun) *TransferStep {
	ts := &TransferStep{Setup: st.Setup, Command: st.Command}
	for _, pl := range p.Placements {
		cfg := loader.DefaultConfig()
		cfg.Dataset.Width, cfg.Dataset.Height = p.Raw, p.Raw
		cfg.Transforms.Crop, cfg.Batch, cfg.Workers, cfg.Impl = z.crop, z.batch, workers, p.Impl
		cfg.Placement = pl
		for _, l := range p.Levels {
			rs := stepRuns(runs, p.Key, pl, l)
			row := TransferRow{Transfer: pl.DType().String(), Level: l, Runs: runValues(rs, "steps/s"), UploadBytes: mean(runValues(rs, "upload-B/op")),
				ShapeBytes: shapeBytes(cfg), Upload: meanDur(runValues(rs, "upload-ns/op")), Convert: meanDur(runValues(rs, "convert-ns/op"))}
			if l == level.None {
				row.Transform = meanDur(runValues(rs, "transform-ns/sample"))
			}
			ts.Rows = append(ts.Rows, row)
		}
	}
	return ts
}

// model003 is the model beside the ladder: the profile the run saved of
// each step the model profiled (the first two,
// workloads.Caching.Modelled; steps gives their transforms), read beside
// that step's measured ladder.
func model003(pg *page, ladders []LadderStep, steps []workloads.CachingStep) ([]ModelReading, error) {
	profiles, err := profiles003(pg)
	if err != nil {
		return nil, err
	}
	var out []ModelReading
	for i, st := range ladders[:2] {
		impl := steps[i].Impl
		p, ok := profiles[impl]
		if !ok {
			return nil, &FileError{Path: filepath.Join(pg.saved, model003File), Err: fmt.Errorf("no profile of the %s transforms", impl)}
		}
		measured := map[level.Level]float64{}
		for _, r := range st.Rows {
			measured[r.Level] = summary.Median(r.Runs)
		}
		out = append(out, ModelReading{Title: impl + " transforms", Reading: p.ReadLadder(measured)})
	}
	return out, nil
}

// timeline003Figure draws the saved timeline as PNG and SVG and returns
// the PNG's link.
func timeline003Figure(pg *page) (string, error) {
	path, b, err := pg.readSaved(timeline003)
	if err != nil {
		return "", err
	}
	var tl timeline.Timeline
	if err := json.Unmarshal(b, &tl); err != nil {
		return "", &FileError{Path: path, Err: fmt.Errorf("not a saved timeline: %w", err)}
	}
	if err := tl.Validate(); err != nil {
		return "", &FileError{Path: path, Err: err}
	}
	base, link := pg.figure("003", "timeline-none")
	return link + ".png", saveTimeline(&tl, base)
}

// runValues are the values in unit, as the file writes it ("ns/op",
// not benchfmt's tidied "sec/op"), of the runs whose records have it.
func runValues(rs []workloads.PointRun, unit string) []float64 {
	var out []float64
	for _, r := range rs {
		if v, ok := resultfile.Value(r.Record, unit); ok {
			out = append(out, v)
		}
	}
	return out
}

// mean is the mean of v (summary.Mean), 0 when v is empty: the value
// was not measured.
func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return summary.Mean(v)
}

// meanDur is the mean of v in nanoseconds as a duration.
func meanDur(v []float64) time.Duration { return time.Duration(mean(v)) }

// withDevice adds the document's device level (3.45 steps/s, the same
// model) to a step's figures.
func withDevice(m map[level.Level]float64) map[level.Level]float64 {
	out := map[level.Level]float64{level.Device: workloads.LadderDocument[level.Device]}
	for l, v := range m {
		out[l] = v
	}
	return out
}

// lookup is m[l], or NaN when m has no l.
func lookup(m map[level.Level]float64, l level.Level) float64 {
	if v, ok := m[l]; ok {
		return v
	}
	return math.NaN()
}

// shapeBytes is a batch's payload from cfg's shape: what an upload moves.
func shapeBytes(cfg loader.Config) int64 {
	values := int64(cfg.Batch) * int64(cfg.Transforms.OutLen())
	return values*int64(cfg.Placement.DType().Size()) + int64(cfg.Batch)*4
}

// ladderCommand is the `headspace ladder` command that measures one step.
func ladderCommand(impl string, raw int, z sizes003, workers int, step time.Duration, levels []level.Level, placements []loader.Placement) string {
	cmd := fmt.Sprintf("headspace ladder --levels %s --workers %d --transforms %s --raw-size %d --crop %d --batch %d --step %v --steps %d --warmup %d --count %d",
		joined(levels, level.Level.String), workers, impl, raw, z.crop, z.batch, step, z.steps, z.warmup, z.count)
	if len(placements) > 1 || placements[0] != loader.Host {
		cmd += " --placement " + joined(placements, loader.Placement.String)
	}
	return cmd
}

// spread is the 95% confidence interval of v's median, "lo–hi" with 2
// decimals, or "n < 6" when there are too few runs for one.
func spread(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	s := summary.Of(v)
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return fmt.Sprintf("n = %d < 6", len(v))
	}
	return fmt.Sprintf("%.2f–%.2f", s.Lo, s.Hi)
}

// deviceOf is the median steps/s and the document's figure at level device.
func deviceOf(rows []LevelRow) (ours, doc float64) {
	for _, r := range rows {
		if r.Level == level.Device {
			return summary.Median(r.Runs), r.Doc
		}
	}
	return math.NaN(), math.NaN()
}

// bottlenecks is the ladder's reading of a step's rows (ladder.Attribute,
// the rule the CLI's table uses too): every drop of at least
// ladder.Significant, the bottleneck first, or that the model step bounds
// throughput.
func bottlenecks(rows []LevelRow, value func(LevelRow) float64) string {
	med := map[level.Level]float64{}
	for _, r := range rows {
		if v := value(r); !math.IsNaN(v) {
			med[r.Level] = v
		}
	}
	a := ladder.Attribute(med)
	if a.Bottleneck == nil {
		return fmt.Sprintf("no stage costs %.0f%% of throughput or more: the model step bounds it", 100*ladder.Significant)
	}
	parts := []string{fmt.Sprintf("**%s** (−%.0f%%, the bottleneck)", a.Bottleneck.Stages(), 100*a.Bottleneck.Fraction)}
	for _, d := range a.Significant() {
		// The same drop, by its levels (P is NaN here, and NaN is never
		// equal to itself).
		if d.Level != a.Bottleneck.Level || d.Above != a.Bottleneck.Above {
			parts = append(parts, fmt.Sprintf("%s (−%.0f%%)", d.Stages(), 100*d.Fraction))
		}
	}
	return strings.Join(parts, ", then ")
}

// ladderTable writes a step's table: the document's steps/s and ours, each
// as a ratio to its device level, and the drop each level adds.
func ladderTable(m *md, st LadderStep, withAU bool) {
	ourDev, docDev := deviceOf(st.Rows)
	head := []string{"level", "the document (steps/s)", "÷ device", "ours (steps/s, median)", "95% CI of the median", "÷ device", "ours ÷ document (ratios)", "ours: drop from the level above"}
	align := "lrrrrrrl"
	if withAU {
		head = append(head, "AU: document", "AU: ours")
		align += "rr"
	}
	var rows [][]string
	for i, r := range st.Rows {
		ours := summary.Median(r.Runs)
		docRatio, ourRatio := div(r.Doc, docDev), div(ours, ourDev)
		drop := ""
		if i > 0 {
			drop = pct(summary.Median(st.Rows[i-1].Runs), ours) + " " + ladder.Drop{Level: r.Level, Above: st.Rows[i-1].Level}.Stages()
		}
		row := []string{"`" + r.Level.String() + "`", num(r.Doc, 2), num(docRatio, 2), num(ours, 3),
			spread(r.Runs), num(ourRatio, 2), ratio(ourRatio, docRatio), drop}
		if withAU {
			docAU := "–"
			if !math.IsNaN(r.DocAU) {
				docAU = fmt.Sprintf("%.0f%%", r.DocAU)
			}
			row = append(row, docAU, fmt.Sprintf("%.0f%%", summary.Median(r.AU)))
		}
		rows = append(rows, row)
	}
	m.table(align, head, rows)
	ours := bottlenecks(st.Rows, func(r LevelRow) float64 { return summary.Median(r.Runs) })
	if countDoc(st.Rows) > 1 {
		m.para("Stages in the way (throughput lost when they are added) — the document: %s; ours: %s.", bottlenecks(st.Rows, func(r LevelRow) float64 { return r.Doc }), ours)
	} else {
		m.para("Stages in the way (throughput lost when they are added) — ours: %s.", ours)
	}
}

// countDoc is the number of rows with a document figure.
func countDoc(rows []LevelRow) int {
	n := 0
	for _, r := range rows {
		if !math.IsNaN(r.Doc) {
			n++
		}
	}
	return n
}

// plots003 draws the ladder's ratios and the level none through the steps.
func plots003(s *page, r Result003) (ladderLink, stepsLink string, err error) {
	if len(r.Steps) == 0 {
		return "", "", nil
	}
	a := r.Steps[0]
	ourDev, docDev := deviceOf(a.Rows)
	var groups []string
	doc, ours := series{name: "the document (A10G, 4 vCPUs)"}, series{name: "ours"}
	for _, row := range a.Rows {
		groups = append(groups, row.Level.String())
		doc.values = append(doc.values, div(row.Doc, docDev))
		ours.values = append(ours.values, div(summary.Median(row.Runs), ourDev))
	}
	p, err := barChart(fmt.Sprintf("Caching ladder, %s: steps/s ÷ device", "naive transforms"), "steps/s ÷ steps/s at level device", groups, []series{doc, ours})
	if err != nil {
		return "", "", err
	}
	base, link := s.figure("003", "ladder")
	if err := reports.SaveBoth(p, base, 7*vg.Inch, 3.5*vg.Inch); err != nil {
		return "", "", err
	}
	ladderLink = link + ".png"

	groups = nil
	doc, ours = series{name: "the document"}, series{name: "ours"}
	for _, st := range r.Steps {
		ourDev, docDev := deviceOf(st.Rows)
		for _, row := range st.Rows {
			if row.Level == level.None {
				groups = append(groups, "("+st.Key+") "+shortTitle(st.Title))
				doc.values = append(doc.values, div(row.Doc, docDev))
				ours.values = append(ours.values, div(summary.Median(row.Runs), ourDev))
			}
		}
	}
	if r.Transfer != nil {
		for _, tr := range []string{"float32", "uint8"} {
			none, dev := transferMedian(r.Transfer.Rows, tr, level.None), transferMedian(r.Transfer.Rows, tr, level.Device)
			if !math.IsNaN(none) {
				groups = append(groups, "(d) "+tr)
				doc.values = append(doc.values, math.NaN())
				ours.values = append(ours.values, div(none, dev))
			}
		}
	}
	p, err = barChart("The whole pipeline (level none) through the optimisations", "steps/s ÷ steps/s at level device", groups, []series{doc, ours})
	if err != nil {
		return "", "", err
	}
	base, link = s.figure("003", "steps")
	if err := reports.SaveBoth(p, base, 8*vg.Inch, 3.5*vg.Inch); err != nil {
		return "", "", err
	}
	return ladderLink, link + ".png", nil
}

// shortTitle is a step's title for an axis label.
func shortTitle(t string) string {
	if i := strings.Index(t, " ("); i > 0 {
		return t[:i]
	}
	return t
}

// transferMedian is the median steps/s of a transfer and level.
func transferMedian(rows []TransferRow, transfer string, l level.Level) float64 {
	for _, r := range rows {
		if r.Transfer == transfer && r.Level == l {
			return summary.Median(r.Runs)
		}
	}
	return math.NaN()
}

// WriteMarkdown writes document 003's report.
func (r Result003) WriteMarkdown(w io.Writer) error {
	m := &md{w: w}
	writeHeader(m, r.Header)
	writeLevels003(m)
	for i, st := range r.Steps {
		r.writeStep(m, i, st)
	}
	if t := r.Transfer; t != nil {
		writeTransfer(m, t)
	}
	if od := r.OnDisk; od != nil {
		r.writeOnDisk(m, od)
	}
	if err := r.writeModel(m); err != nil {
		return err
	}
	if r.StepsFigure != "" {
		m.para("## The whole pipeline through the steps")
		m.para("![level none through the optimisations](%s)", r.StepsFigure)
	}
	r.writeDifferences(m)
	m.p("")
	return m.err
}

// writeLevels003 introduces the document's pipeline and the ladder's five
// levels.
func writeLevels003(m *md) {
	m.para("The document finds the bottleneck of a toy input pipeline (1024×1024 random images; RandomCrop 256, RandomMask with 4-neighbour dilation, ConvertColor, Scale; batches of 256, 4 DataLoader workers) by caching data at each stage and watching steps/s. `harness/ladder` runs the same pipeline in goroutines, and the same five levels:")
	m.table("ll", []string{"level", "cached: what still runs each step"}, [][]string{
		{"`device`", "one batch on the device: the model step (the upper bound)"},
		{"`host`", "one collated batch on the host: + host-to-device copy"},
		{"`sample`", "one processed sample: + batching (collate)"},
		{"`raw`", "one raw sample: + transforms"},
		{"`none`", "nothing: + raw data loading"},
	})
	m.para("Every table sets the document's steps/s beside ours and divides each by its own `device` level, since absolute steps/s differ between an A10G and this machine's emulated device.")
}

// writeStep writes ladder step st, the i-th: its setup, command, table and
// per-sample times; the first step also the yardstick, the ladder's figure
// and the timeline.
func (r Result003) writeStep(m *md, i int, st LadderStep) {
	m.para("## (%s) %s", st.Key, st.Title)
	m.para("Setup: %s.", st.Setup)
	m.code("sh", st.Command)
	ladderTable(m, st, i == 0)
	if i == 0 {
		r.writeYardstick(m)
	}
	if i == 0 && r.LadderFigure != "" {
		m.para("![the caching ladder, ratios to device](%s)", r.LadderFigure)
	}
	if rows := perSample(st.Rows); len(rows) > 0 {
		m.para("Per sample, from the pipeline's stage statistics (mean task time over the runs; %s):", "`load` draws the raw image, `transform` is RandomCrop to Scale")
		m.table("lrr", []string{"level", "load (raw data)", "transform"}, rows)
	}
	if i == 0 && r.Timeline != "" {
		m.para("A timeline of the first run at level `none` (one track per worker of each stage, then the model; SVG beside the PNG):")
		m.para("![timeline of level none](%s)", r.Timeline)
	}
}

// writeTransfer writes step (d), the uint8 transfer: each transfer and
// level's steps/s, payload and copy times, and what uint8 changes.
func writeTransfer(m *md, t *TransferStep) {
	m.para("## (d) uint8 transfer, converted on the device")
	m.para("The document's tip: \"postpone int8 to float32 datatype conversions to the GPU to reduce memory copy payload by a factor of 4\"; it gives no measurement. With `Transfer: \"uint8\"` the transform stops after RandomMask (`transforms.Uint8Applier`), batches carry one byte a value, and the device runs ConvertColor and Scale before each step. Setup: %s.", t.Setup)
	m.code("sh", t.Command)
	var rows [][]string
	for _, x := range t.Rows {
		dev := transferMedian(t.Rows, x.Transfer, level.Device)
		up := "–"
		if x.UploadBytes > 0 {
			up = bytesHuman(int64(x.UploadBytes))
		}
		rows = append(rows, []string{x.Transfer, "`" + x.Level.String() + "`", num(summary.Median(x.Runs), 3), spread(x.Runs),
			num(div(summary.Median(x.Runs), dev), 2), up, bytesHuman(x.ShapeBytes), measuredDur(x.Upload), measuredDur(x.Convert), measuredDur(x.Transform)})
	}
	m.table("llrrrrrrrr", []string{"transfer", "level", "steps/s (median)", "runs", "÷ device", "uploaded per batch (device counters)", "per batch from the shape", "copy per batch", "conversion per step", "host transform per sample"}, rows)
	f32, u8 := shapeOf(t.Rows, "float32"), shapeOf(t.Rows, "uint8")
	if f32 > 0 && u8 > 0 {
		m.para("uint8 moves %s of the float32 payload (%s against %s per batch); at level `none` steps/s goes from %s to %s (%s). On the emulated device the copy runs at an assumed bandwidth and overlaps the previous step, so steps/s only changes where the copy or the host's transform was in the way.",
			ratio(float64(u8), float64(f32)), bytesHuman(u8), bytesHuman(f32),
			num(transferMedian(t.Rows, "float32", level.None), 3), num(transferMedian(t.Rows, "uint8", level.None), 3),
			pct(transferMedian(t.Rows, "float32", level.None), transferMedian(t.Rows, "uint8", level.None)))
	}
}

// writeModel writes the what-if model's reading of steps (a) and (b)
// beside their ladders, when the report has it.
func (r Result003) writeModel(m *md) error {
	if len(r.Model) == 0 {
		return nil
	}
	m.para("## The ladder and the model")
	m.para("The document warns that its method can mislead: \"a drop in throughput resulting from inclusion of a certain data-processing step doesn't necessarily mean that it's that specific step that requires optimization … it's another step CPU utilization near the limit, and the new step just tipped it over.\" The what-if model (`headspace whatif`, package `harness/whatif`) profiles each stage's CPU time at the same setting and names the stage that holds the binding resource; the ladder names the stage whose addition costs throughput. Below, the measured ladder of steps (a) and (b) beside the model's prediction of every level from the profile.")
	for _, mr := range r.Model {
		var b strings.Builder
		if err := whatif.WriteLadderMarkdown(&b, mr.Title, mr.Reading); err != nil {
			return err
		}
		m.p("%s", b.String())
	}
	return nil
}

// writeDifferences writes where our runs differ from the document's, and
// why.
func (r Result003) writeDifferences(m *md) {
	m.para("## Where ours differs from the document, and why")
	m.p("- **Raw data costs less here.** The document's raw-data cost (the drop from `raw` to `none`, and its 1.28 steps/s after the transform fix) comes from numpy's `randint` filling a 1024×1024×3 image: 1.28 steps/s of %d samples on %d workers leaves at most %s per sample. Ours draws the same bytes with wyrand (`datasets/prng`). %s",
		doc003Batch, doc003Workers, durText(doc003RawBound()), r.rawDataNote())
	m.p("- **The device is emulated.** Its step is a timer wait (see the device above; the document's device-cached step is 1/3.45 s ≈ 290 ms), and copies take bytes ÷ an assumed bandwidth while the previous step runs; so `device` is the document's by construction, `host` rests on an assumption rather than a measurement, and what is measured is the input pipeline's share.")
	m.p("- **Fewer cores.** This machine has %d cores for %d workers per stage, against the document's 4 vCPUs and 4 DataLoader workers, and a CPU-bound `naive` pipeline is slower for it: %s", r.Header.Machine.Cores, r.Workers, r.naiveNote())
	m.p("- **Fewer steps.** The document times 100 steps; each of our points is the median of several short runs (see each step's setup), on a machine shared with other work: the runs column shows the spread.")
}

// rowOf is step key's row at level l.
func (r Result003) rowOf(key string, l level.Level) (LevelRow, bool) {
	st, _ := r.step(key)
	for _, row := range st.Rows {
		if row.Level == l {
			return row, true
		}
	}
	return LevelRow{}, false
}

// levelRatio is step key's level l over its device level, ours and the
// document's.
func (r Result003) levelRatio(key string, l level.Level) (ours, doc float64) {
	if row, ok := r.rowOf(key, l); ok {
		st, _ := r.step(key)
		ourDev, docDev := deviceOf(st.Rows)
		return div(summary.Median(row.Runs), ourDev), div(row.Doc, docDev)
	}
	return math.NaN(), math.NaN()
}

// rawDataNote says, from the measurements, what raw data costs here.
func (r Result003) rawDataNote() string {
	row, ok := r.rowOf("b", level.None)
	if !ok || row.Load == 0 {
		return ""
	}
	ours, doc := r.levelRatio("b", level.None)
	s := fmt.Sprintf("With the fast transforms a raw sample takes %s to make and %s to transform", durText(row.Load), durText(row.Transform))
	if r.Batch > 0 && r.Workers > 0 && r.Step > 0 {
		perBatch := time.Duration(r.Batch) * (row.Load + row.Transform) / time.Duration(r.Workers)
		keeps := "under"
		if perBatch > r.Step {
			keeps = "over"
		}
		s += fmt.Sprintf(": a batch of %d takes %d workers about %s, %s the %v step", r.Batch, r.Workers, durText(perBatch), keeps, r.Step)
	}
	s += fmt.Sprintf(". After the transform fix our `none` runs at %s of `device`, the document's at %s", num(ours, 2), num(doc, 2))
	if ours > 1-ladder.Significant {
		return s + ": the fix alone removes our bottleneck, so shrinking the raw image (step c) has little left to gain here, where the document needed it."
	}
	return s + ": raw data loading is still in the way here, as in the document."
}

// naiveNote compares the naive ladder's raw level with the document's.
func (r Result003) naiveNote() string {
	ours, doc := r.levelRatio("a", level.Raw)
	return fmt.Sprintf("our `raw` level runs at %s of `device` with `naive` transforms, the document's at %s.", num(ours, 2), num(doc, 2))
}

// perSample lists the per-sample load and transform times of the levels
// that ran them.
func perSample(rows []LevelRow) [][]string {
	var out [][]string
	for _, r := range rows {
		if r.Level != level.None && r.Level != level.Raw {
			continue
		}
		load := "cached"
		if r.Load > 0 && r.Level == level.None {
			load = durText(r.Load)
		}
		out = append(out, []string{"`" + r.Level.String() + "`", load, durText(r.Transform)})
	}
	return out
}

// measuredDur is durText(d), or "–" for a time not measured (0).
func measuredDur(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return durText(d)
}

// shapeOf is the shape payload of a transfer's rows.
func shapeOf(rows []TransferRow, transfer string) int64 {
	for _, r := range rows {
		if r.Transfer == transfer {
			return r.ShapeBytes
		}
	}
	return 0
}

// writeOnDisk renders step (e): every case's levels as steps/s and as a
// ratio to its device level, with the stage the ladder blames; then each
// remedy's effect over the cases that differ by it alone, and the
// earlier conclusion about JPEG beside the corrected one.
func (r Result003) writeOnDisk(m *md, od *OnDiskStep) {
	m.para("## (e) Raw data on disk: the document's remedies")
	m.para("The document's raw-data remedies — \"compressed formats, grouping small samples into larger files, smaller raw images, faster storage\" — tried on real files (`datasets/ondisk`): the same images written as raw bytes, PNG or JPEG (quality 90), one file per sample or in WebDataset tar shards, read through a warm page cache or a cold one (evicted before each run). Two things a PyTorch user never sees are varied too: the images' content, the document's uniform noise or natural-image statistics (dead leaves, `--content natural`, whose JPEGs compress as photos' do: docs/real-data.md), and the JPEG decoder, Go's `image/jpeg` or libjpeg-turbo (`--decoder turbojpeg`, what PIL uses). Raw files run with noise only and PNG with Go's decoder only: the other cells would read the same bytes with the same decoder. The level `encoded` caches one sample's file bytes, so `none`→`encoded` is the fetch from storage and `encoded`→`raw` the decode (DS-Analyzer's fetch and prep stalls). Setup: %s.", od.Setup)
	levels := []level.Level{level.None, level.Encoded, level.Raw, level.Device}
	var rows [][]string
	for _, row := range od.Rows {
		c := row.Case
		cells := []string{c.Format, c.Content, c.Decoder, c.Layout, fmt.Sprintf("%d²", c.RawSize), c.PageCache}
		for _, l := range levels {
			cells = append(cells, num(row.Median[l], 3))
		}
		cells = append(cells, num(row.Ratio[level.None], 2), row.Attribution.String())
		rows = append(rows, cells)
	}
	m.table("llllllrrrrrl", []string{"format", "content", "decoder", "layout", "raw", "page cache", "none", "encoded", "raw", "device", "none ÷ device", "the ladder's reading"}, rows)
	if s := sharedLevels003(od.Rows); s != "" {
		m.para("%s", s)
	}

	var erows [][]string
	best, bestGain := "", 0.0
	for _, e := range remedies003(od.Rows) {
		if e.pairs == 0 {
			continue
		}
		erows = append(erows, []string{e.name, fmt.Sprint(e.pairs), num(e.gain, 2) + "×", num(e.min, 2) + "–" + num(e.max, 2) + "×"})
		if e.remedy && e.gain > bestGain {
			best, bestGain = e.name, e.gain
		}
	}
	if len(erows) > 0 {
		m.para("What each change does to `none`, the pipeline with nothing cached: the geometric mean, over the pairs of cases that differ by that change alone, of `none`'s steps/s after ÷ before, and the range over the pairs.")
		m.table("lrrr", []string{"change", "pairs", "steps/s at none, after ÷ before", "range"}, erows)
		if best != "" {
			m.para("Of the document's remedies, **%s** pays off most here (%s× the steps/s at `none`, geometric mean over its pairs); a remedy below 1× makes loading slower.", best, num(bestGain, 2))
		}
	}
	r.writeJPEGConclusion(m, od)
}

// sharedLevels003 says which levels the rows share (workloads.OnDisk
// measures a level once per set of the dimensions it depends on), or ""
// when every row measured every level itself (a file from before the
// sharing).
func sharedLevels003(rows []workloads.OnDiskRow) string {
	// Levels with the same dimensions together, in the ladder's order.
	var deps []string
	var names [][]string
	for _, l := range level.For(level.Disk) {
		if !slices.ContainsFunc(rows, func(row workloads.OnDiskRow) bool { return row.Shared[l] }) {
			continue
		}
		d := andList(workloads.OnDiskDepends(l))
		i := slices.Index(deps, d)
		if i < 0 {
			i = len(deps)
			deps, names = append(deps, d), append(names, nil)
		}
		names[i] = append(names[i], "`"+l.String()+"`")
	}
	if len(deps) == 0 {
		return ""
	}
	parts := make([]string, len(deps))
	for i, d := range deps {
		parts[i] = fmt.Sprintf("%s once per %s", andList(names[i]), d)
	}
	return fmt.Sprintf("A level above `none` reads no file (it does not fetch), so the layout and the page cache do not change it, and a level above `encoded` does not decode either, so neither do the format, the content or the decoder (the level table, `harness/level`). Each is therefore measured once, in the first case of the matrix that has its dimensions, and every case that shares them repeats that measurement (its `none` ÷ `device` divides by it): %s; `none` in every case.", strings.Join(parts, "; "))
}

// andList joins words as "a, b and c".
func andList(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// remedy003 is one change's effect over the case pairs that differ by it
// alone.
type remedy003 struct {
	name     string
	remedy   bool // one of the document's remedies (not a correction)
	pairs    int
	gain     float64 // geometric mean of none after ÷ before
	min, max float64
	// after changes a case into its "after", reporting whether the case
	// is a "before" of the change.
	after func(*workloads.OnDiskCase) bool
}

// remedies003 measures every change the matrix varies: for each case that
// is a "before", the case that differs by the change alone is its "after".
func remedies003(rows []workloads.OnDiskRow) []remedy003 {
	byCase := map[workloads.OnDiskCase]float64{}
	small, large := 0, 0
	for _, row := range rows {
		if v := row.Median[level.None]; v > 0 {
			byCase[row.Case] = v
		}
		if s := row.Case.RawSize; small == 0 || s < small {
			small = s
		}
		large = max(large, row.Case.RawSize)
	}
	es := changes003(small, large)
	for i := range es {
		es[i].measure(rows, byCase)
	}
	return es
}

// changes003 are the changes the matrix varies, the document's remedies
// first, with its raw images at small and large.
func changes003(small, large int) []remedy003 {
	return []remedy003{
		{name: "compressed format: raw → JPEG (noise, go)", remedy: true, after: func(c *workloads.OnDiskCase) bool {
			ok := c.Format == "raw"
			c.Format = "jpeg"
			return ok
		}},
		{name: "compressed format: raw → PNG (noise)", remedy: true, after: func(c *workloads.OnDiskCase) bool {
			ok := c.Format == "raw"
			c.Format = "png"
			return ok
		}},
		{name: "grouping into larger files: files → shards", remedy: true, after: func(c *workloads.OnDiskCase) bool {
			ok := c.Layout == "files"
			c.Layout = "shards"
			return ok
		}},
		{name: fmt.Sprintf("smaller raw images: %d² → %d²", large, small), remedy: small < large, after: func(c *workloads.OnDiskCase) bool {
			ok := c.RawSize == large && small < large
			c.RawSize = small
			return ok
		}},
		{name: "faster storage: cold → warm page cache", remedy: true, after: func(c *workloads.OnDiskCase) bool {
			ok := c.PageCache == "cold"
			c.PageCache = "warm"
			return ok
		}},
		{name: "libjpeg-turbo: go → turbojpeg (JPEG)", after: func(c *workloads.OnDiskCase) bool {
			ok := c.Format == "jpeg" && c.Decoder == ondisk.DecoderGo
			c.Decoder = ondisk.DecoderTurbo
			return ok
		}},
		{name: "photo-like content: noise → natural (PNG, JPEG)", after: func(c *workloads.OnDiskCase) bool {
			ok := c.Format != "raw" && c.Content == datasets.ContentNoise
			c.Content = datasets.ContentNatural
			return ok
		}},
	}
}

// measure sets e's pairs, gain and range from the rows: each row's case
// that is a "before" of e, beside its "after", both with none's steps/s in
// byCase.
func (e *remedy003) measure(rows []workloads.OnDiskRow, byCase map[workloads.OnDiskCase]float64) {
	var gains []float64
	for _, row := range rows {
		before, ok := byCase[row.Case]
		ac := row.Case
		if !ok || !e.after(&ac) {
			continue
		}
		if after, ok := byCase[ac]; ok {
			gains = append(gains, after/before)
		}
	}
	if e.pairs = len(gains); e.pairs > 0 {
		e.gain, e.min, e.max = summary.GeometricMean(gains), slices.Min(gains), slices.Max(gains)
	}
}

// decodeShare is the share of a step's time at none spent decoding: from
// encoded to raw, of none's time per step.
func decodeShare(row workloads.OnDiskRow) (float64, bool) {
	n, e, r := row.Median[level.None], row.Median[level.Encoded], row.Median[level.Raw]
	if n <= 0 || e <= 0 || r <= 0 {
		return 0, false
	}
	return max(0, 1/e-1/r) / (1 / n), true
}

// writeJPEGConclusion sets the earlier conclusion, JPEG files of noise
// decoded by Go, beside JPEG files of natural content decoded by
// libjpeg-turbo, at the full raw size, files, warm cache; and the
// document's step (b) beside both.
func (r Result003) writeJPEGConclusion(m *md, od *OnDiskStep) {
	find := func(content, decoder string) (workloads.OnDiskRow, bool) {
		var best workloads.OnDiskRow
		found := false
		for _, row := range od.Rows {
			c := row.Case
			if c.Format == "jpeg" && c.Layout == "files" && c.PageCache == "warm" && c.Content == content && c.Decoder == decoder &&
				(!found || c.RawSize > best.Case.RawSize) && row.Ratio[level.None] > 0 {
				best, found = row, true
			}
		}
		return best, found
	}
	docRatio := workloads.LadderDocumentFixed[level.None] / workloads.LadderDocumentFixed[level.Raw]
	old, okOld := find(datasets.ContentNoise, ondisk.DecoderGo)
	if !okOld {
		return
	}
	m.para("The document's step (b), after the transform fix, still stood at %s steps/s at `none` against %s at `raw` (%s): raw data loading bound it. Ours from random bytes did not (step (b) above); from JPEG files of noise at %d² decoded by Go's `image/jpeg`, it stands at %s of `device`, %s the document's ratio.",
		num(workloads.LadderDocumentFixed[level.None], 2), num(workloads.LadderDocumentFixed[level.Raw], 2), num(docRatio, 2),
		old.Case.RawSize, num(old.Ratio[level.None], 2), ratio(old.Ratio[level.None], docRatio))
	nw, okNew := find(datasets.ContentNatural, ondisk.DecoderTurbo)
	if !okNew {
		return
	}
	so, okSo := decodeShare(old)
	sn, okSn := decodeShare(nw)
	shares := ""
	if okSo && okSn {
		shares = fmt.Sprintf(" Decoding takes %.0f%% of a step at `none` with noise and Go's decoder, %.0f%% with natural content and libjpeg-turbo.", 100*so, 100*sn)
	}
	m.para("Which conclusion changes: the earlier report blamed JPEG itself, from noise decoded by Go. With the two corrections a PyTorch user's pipeline has — photo-like content and libjpeg-turbo — JPEG files of %d² give %s steps/s at `none`, %s of `device` (against %s), %s the noise-and-Go figure.%s",
		nw.Case.RawSize, num(nw.Median[level.None], 3), num(nw.Ratio[level.None], 2), num(old.Ratio[level.None], 2),
		ratio(nw.Median[level.None], old.Median[level.None]), shares)
}
