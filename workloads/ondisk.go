package workloads

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/summary"
)

// OnDisk is the document's raw-data remedies measured on real files: the
// caching ladder with the data on disk as raw bytes, PNG or JPEG, of
// noise (the document's FakeDataset) or natural content (dead leaves),
// decoded by Go's or libjpeg-turbo's JPEG decoder, one file per sample or
// in tar shards, 1024² or 256² raw images, read from a cold or a warm
// page cache. Each case is a Ladder over a dataset that Run
// writes first; steps/s per level, and each level's ratio to device, say
// which remedy frees the loader, and the encoded level splits raw data
// loading into fetching (none→encoded) and decoding (encoded→raw).
//
// A level is measured once per distinct set of the dimensions it depends
// on (OnDiskCase.For, from the level table of package level): none, which
// fetches and decodes, in every case; encoded, which decodes cached file
// bytes, once per format, content, decoder and raw size; raw and device,
// which read no file, once per raw size (Plan). Every case that shares a
// measurement reads it (OnDiskRatios).
type OnDisk struct {
	Formats    []string // ondisk.Formats
	Layouts    []string // ondisk.Layouts
	RawSizes   []int    // square raw image sides
	PageCaches []string // loader.PageWarm, loader.PageCold
	// Contents are the images' contents (datasets.Contents; nil: noise).
	// Raw files hold the same bytes count whatever the content, so raw
	// cases run with noise only.
	Contents []string
	// Decoders are the JPEG decoders (ondisk.HostDecoders; nil: go); they
	// apply to JPEG cases only, the others run with go.
	Decoders []string
	// Ladder is every case's sweep: its pipeline (with the raw size and
	// dataset of each case set by Run), levels, loop and runs.
	Ladder Ladder
	// Samples is each dataset's size; 0 means one per sample a run reads
	// (Batch × (Warmup+Steps)), so a cold run reads every file from
	// storage once.
	Samples   int
	Quality   int // JPEG quality; 0 means ondisk.DefaultQuality
	ShardSize int // samples per shard; 0 means ondisk.DefaultShardSize
}

// DefaultOnDisk is the document's remedies matrix at the document's
// pipeline (batch 256, 4 workers on 4 cores there; one per core here),
// naive transforms, placement host, levels none, encoded, raw and device,
// 2 measured steps after 1 warm-up, 3 runs of each point (each shared
// point once: Plan): 768 samples per dataset, up to 2.4 GB for raw 1024²
// (Run keeps one dataset on disk at a time). Noise and natural content, the go and turbojpeg decoders (JPEG
// only; turbojpeg needs libturbojpeg0). Cold where the page cache can be
// evicted (Linux), warm always.
func DefaultOnDisk() OnDisk {
	l := DefaultLadder()
	l.Levels = []level.Level{level.None, level.Encoded, level.Raw, level.Device}
	l.Transforms = []string{transforms.Naive}
	l.Train = train.Config{Steps: 2, Warmup: 1}
	l.Count = 3
	caches := []string{loader.PageWarm}
	if ondisk.EvictAvailable {
		caches = append(caches, loader.PageCold)
	}
	return OnDisk{
		Formats: ondisk.Formats, Layouts: ondisk.Layouts,
		RawSizes: []int{1024, 256}, PageCaches: caches,
		Contents: datasets.Contents, Decoders: ondisk.HostDecoders,
		Ladder: l,
	}
}

// QuickOnDisk is the matrix at a size that runs in seconds: 64² and 32²
// raw images cropped to 16, batches of 4, warm cache only, one run of
// levels none, encoded, raw and device. Every code path, no comparable
// numbers.
func QuickOnDisk() OnDisk {
	o := DefaultOnDisk()
	o.RawSizes = []int{64, 32}
	o.PageCaches = []string{loader.PageWarm}
	o.Ladder.Transforms = []string{transforms.Fast}
	o.Ladder.Workers = []int{2}
	o.Ladder.Pipeline.Transforms.Crop, o.Ladder.Pipeline.Batch = 16, 4
	o.Ladder.Train = train.Config{Steps: 2, Warmup: 1}
	o.Ladder.Count = 1
	o.ShardSize = 5
	return o
}

// OnDiskCase is one cell of the matrix.
type OnDiskCase struct {
	Format, Layout string
	RawSize        int
	PageCache      string
	Content        string // datasets.ContentNoise or ContentNatural
	Decoder        string // ondisk.DecoderGo or DecoderTurbo
}

// Name is the case as a benchmark name's part:
// "format=jpeg/content=natural/decoder=turbojpeg/layout=shards/raw=256/page-cache=cold".
// A dimension left empty (a shared case, For) is left out: "raw=256" is
// every case of raw size 256.
func (c OnDiskCase) Name() string {
	var parts []string
	for _, kv := range [][2]string{{"format", c.Format}, {"content", c.Content}, {"decoder", c.Decoder}, {"layout", c.Layout}, {"raw", strconv.Itoa(c.RawSize)}, {"page-cache", c.PageCache}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, "/")
}

// For is the case as level l's measurement depends on it, the dimensions
// l does not depend on left empty. The rule is the level table's (package
// level): a level that does not fetch (every level above none) reads no
// file, so the layout and the page cache do not change it; a level that
// does not decode either (raw and above: it caches the decoded sample or
// more) does not depend on the format, content or decoder either. What is
// left is the raw size, which every level's transforms, batches or upload
// see. For(l) == c when l depends on every dimension (none).
func (c OnDiskCase) For(l level.Level) OnDiskCase {
	if !l.Runs(level.Fetch) {
		c.Layout, c.PageCache = "", ""
	}
	if !l.Runs(level.Decode) {
		c.Format, c.Content, c.Decoder = "", "", ""
	}
	return c
}

// Shared reports whether c stands for several cases: some dimension is
// left empty (For).
func (c OnDiskCase) Shared() bool {
	return c.Format == "" || c.Content == "" || c.Decoder == "" || c.Layout == "" || c.PageCache == ""
}

// Dimensions names the dimensions c sets, in the order of its name:
// "format", "content", "decoder", "layout", "raw size", "page cache".
func (c OnDiskCase) Dimensions() []string {
	var out []string
	for _, kv := range [][2]string{{"format", c.Format}, {"content", c.Content}, {"decoder", c.Decoder}, {"layout", c.Layout}, {"raw size", strconv.Itoa(c.RawSize)}, {"page cache", c.PageCache}} {
		if kv[1] != "" && kv[1] != "0" {
			out = append(out, kv[0])
		}
	}
	return out
}

// OnDiskDepends names the dimensions level l's measurement depends on
// (For's rule in words), in the order of Dimensions.
func OnDiskDepends(l level.Level) []string {
	return OnDiskCase{Format: "f", Content: "c", Decoder: "d", Layout: "l", RawSize: 1, PageCache: "p"}.For(l).Dimensions()
}

// Cases lists the matrix in the order Run runs it: format, content, layout
// and raw size (one dataset each), then the decoders and page-cache modes
// over that dataset. Raw cases take the first content only, and non-JPEG
// cases the go decoder only: the others would measure the same thing.
func (o OnDisk) Cases() []OnDiskCase {
	var out []OnDiskCase
	for _, f := range o.Formats {
		contents, decoders := o.Contents, o.Decoders
		if len(contents) == 0 {
			contents = []string{datasets.ContentNoise}
		}
		if f == "raw" {
			contents = contents[:1]
		}
		if len(decoders) == 0 || f != "jpeg" {
			decoders = []string{ondisk.DecoderGo}
		}
		for _, ct := range contents {
			for _, l := range o.Layouts {
				for _, s := range o.RawSizes {
					for _, dec := range decoders {
						for _, pc := range o.PageCaches {
							out = append(out, OnDiskCase{Format: f, Layout: l, RawSize: s, PageCache: pc, Content: ct, Decoder: dec})
						}
					}
				}
			}
		}
	}
	return out
}

// OnDiskPlan is one case of the matrix and the levels Run measures in
// it.
type OnDiskPlan struct {
	Case   OnDiskCase
	Levels []level.Level // in the order of o.Ladder.Levels; none left: the case runs nothing
}

// Plan lists every case (Cases order) with the levels Run measures in
// it: each level in the first case of its shared case (OnDiskCase.For)
// only. DefaultOnDisk lists warm before cold, so its shared points are
// measured through a warm page cache, which by the rule changes nothing.
func (o OnDisk) Plan() []OnDiskPlan {
	seen := map[onDiskPoint]bool{}
	var out []OnDiskPlan
	for _, c := range o.Cases() {
		p := OnDiskPlan{Case: c}
		for _, l := range o.Ladder.Levels {
			if k := (onDiskPoint{c.For(l), l}); !seen[k] {
				seen[k] = true
				p.Levels = append(p.Levels, l)
			}
		}
		out = append(out, p)
	}
	return out
}

// onDiskPoint is a level of a case, shared or not: a measurement.
type onDiskPoint struct {
	c OnDiskCase
	l level.Level
}

// Runs is the number of ladder runs Run makes: Count for each level of
// each case of Plan (every run of every point of every case, without the
// sharing, is Cases × Levels × Count).
func (o OnDisk) Runs() int {
	n := 0
	for _, p := range o.Plan() {
		n += len(p.Levels) * o.Ladder.Count
	}
	return n
}

// OnDiskResult is one run of one point of one case: an element of what
// OnDisk measured (OnDiskOutcome).
type OnDiskResult struct {
	// Case is the case the point belongs to: for a level that does not
	// depend on every dimension, the shared case (OnDiskCase.For), which
	// stands for every case with its dimensions.
	Case  OnDiskCase
	Point ladder.Point
	// Record is the run's benchmark-format record, named
	// "BenchmarkLadderOnDisk/<case>/<point>" (see OnDiskCase.Name and
	// ladder.Point.Sub), with steps/s, read-MB/s and the rest; a shared
	// point's name leaves out the dimensions it does not depend on:
	// "BenchmarkLadderOnDisk/raw=1024/level=device/…" is the device level
	// of every case of raw size 1024.
	Record *benchfmt.Result
	// StepsPerSec is the run's steps/s.
	StepsPerSec float64
}

// samples is the dataset size of o.
func (o OnDisk) samples() int {
	if o.Samples > 0 {
		return o.Samples
	}
	return o.Ladder.Pipeline.Batch * (o.Ladder.Train.Warmup + o.Ladder.Train.Steps)
}

// Validate reports the first problem with the matrix before anything is
// written.
func (o OnDisk) Validate() error {
	if len(o.Formats) == 0 || len(o.Layouts) == 0 || len(o.RawSizes) == 0 || len(o.PageCaches) == 0 {
		return errors.New("on-disk matrix has no cases: every dimension needs a value")
	}
	if err := cli.FirstErr(oneOf("format", o.Formats, ondisk.Formats), oneOf("layout", o.Layouts, ondisk.Layouts),
		oneOf("content", o.Contents, datasets.Contents)); err != nil {
		return err
	}
	for _, d := range o.Decoders {
		if d == ondisk.DecoderNvjpeg {
			return fmt.Errorf("decoder %s decodes on the device, with the device's transforms: not in the on-disk matrix, whose ladder transforms on the host (headspace ladder --decoder nvjpeg measures it)", d)
		}
		if !slices.Contains(ondisk.HostDecoders, d) {
			return fmt.Errorf("decoder %q: want one of %s (the experiment decodes on the host)", d, strings.Join(ondisk.HostDecoders, ", "))
		}
		if d == ondisk.DecoderTurbo {
			if _, err := ondisk.DecoderName(d); err != nil {
				return err
			}
		}
	}
	for _, c := range o.Cases() {
		l, err := o.ladder(c, "validate")
		if err != nil {
			return err
		}
		if err := l.Validate(); err != nil {
			return fmt.Errorf("%s: %w", c.Name(), err)
		}
	}
	return nil
}

// oneOf refuses the first of vs that valid does not hold, saying what it
// is.
func oneOf(what string, vs, valid []string) error {
	for _, v := range vs {
		if !slices.Contains(valid, v) {
			return fmt.Errorf("%s %q: want one of %s", what, v, strings.Join(valid, ", "))
		}
	}
	return nil
}

// ladder is case c's sweep over the dataset in dir.
func (o OnDisk) ladder(c OnDiskCase, dir string) (Ladder, error) {
	l := o.Ladder
	p := &l.Pipeline
	p.Dataset.Width, p.Dataset.Height, p.Dataset.N = c.RawSize, c.RawSize, o.samples()
	p.Dataset.Content = c.Content
	p.Data, p.PageCache, p.Decoder = dir, c.PageCache, c.Decoder
	if c.RawSize < p.Transforms.Crop {
		return l, fmt.Errorf("%s: raw size %d is smaller than the crop %d", c.Name(), c.RawSize, p.Transforms.Crop)
	}
	return l, nil
}

// Name is "LadderOnDisk": BenchmarkLadderOnDisk/<case>/<point>.
func (OnDisk) Name() string { return "LadderOnDisk" }

// Document is "003": its step (e), the document's raw-data remedies.
func (OnDisk) Document() string { return "003" }

// Settings is the configuration block of the matrix's result file: its
// ladder's settings (the raw size and samples of each case are in the
// records' names and the dataset's size), and the samples per dataset.
func (o OnDisk) Settings() []resultfile.Config {
	return append(o.Ladder.Settings(),
		resultfile.Config{Key: "ondisk-samples", Value: fmt.Sprint(o.samples())},
		resultfile.Config{Key: "ondisk-count", Value: fmt.Sprint(o.Ladder.Count)},
	)
}

// Measure writes each dataset of the matrix under env.Dir, one at a time
// (so the directory needs room for the largest alone), and runs its
// cases' ladders on env's device at the levels Plan gives them, each
// point under "LadderOnDisk/<case>" (the case it stands for,
// OnDiskCase.For). ctx stops it between runs, returning the runs made
// before. Each run's page cache is prepared as its case says before the
// loader starts (cold: evicted; warm: read once).
func (o OnDisk) Measure(ctx context.Context, env Env) (OnDiskOutcome, error) {
	var out OnDiskOutcome
	if err := o.Validate(); err != nil {
		return out, err
	}
	dir, err := os.MkdirTemp(env.dir(), "headspace-ondisk-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	add := func(r OnDiskResult) { out.Runs = append(out.Runs, r) }
	env.start(o.Name())
	data := "" // the dataset on disk, of the case written
	var written OnDiskCase
	for _, pc := range o.Plan() {
		if len(pc.Levels) == 0 {
			continue
		}
		c := pc.Case
		if data == "" || c.Format != written.Format || c.Content != written.Content || c.Layout != written.Layout || c.RawSize != written.RawSize {
			// One dataset on disk at a time (an error leaves it to dir's removal).
			if err := os.RemoveAll(data); err != nil {
				return out, err
			}
			data, written = filepath.Join(dir, fmt.Sprintf("%s-%s-%s-%d", c.Format, c.Content, c.Layout, c.RawSize)), c
			src := o.Ladder.Pipeline.Dataset
			src.Width, src.Height, src.N, src.Content = c.RawSize, c.RawSize, o.samples(), c.Content
			_, err := ondisk.Write(ctx, data, src, ondisk.WriteOptions{
				Format: c.Format, Quality: o.Quality, Layout: c.Layout, ShardSize: o.ShardSize, Force: true,
			})
			if err != nil {
				return out, fmt.Errorf("%s: writing the dataset: %w", c.Name(), err)
			}
		}
		if err := o.runCase(ctx, pc, data, add, env); err != nil {
			return out, err
		}
	}
	return out, os.RemoveAll(data)
}

// runCase runs the levels of one case of the plan over the dataset in
// data on env's device, opened once for the case, passing each run to
// add.
func (o OnDisk) runCase(ctx context.Context, pc OnDiskPlan, data string, add func(OnDiskResult), env Env) error {
	dev, closeDev := env.device().once()
	defer closeDev()
	l, err := o.ladder(pc.Case, data)
	if err != nil {
		return err
	}
	l.Levels = pc.Levels
	if l.Pipeline, err = l.Pipeline.WithData(data); err != nil {
		return err
	}
	for _, p := range l.Points() {
		k := pc.Case.For(p.Level)
		pl := l.Only(p)
		pl.Under = o.Name() + "/" + k.Name()
		o, err := pl.Measure(ctx, Env{Device: dev})
		for _, r := range o.Runs {
			add(OnDiskResult{Case: k, Point: r.Point, Record: r.Record, StepsPerSec: r.Result.StepsPerSec()})
		}
		if err != nil {
			return fmt.Errorf("%s: %w", pc.Case.Name(), err)
		}
	}
	return nil
}

// OnDiskRatios is the median steps/s of every level of every case and
// each level's ratio to the case's device level (none where the device
// level was not measured), and the ladder's attribution, in the order the
// cases first appear. A row is a case with every dimension set; a level
// it did not measure itself is read from its shared case (OnDiskCase.For)
// where that was measured, and marked in Shared. A shared case no row
// reads (a matrix without none) is a row of its own.
func OnDiskRatios(rs []OnDiskResult) []OnDiskRow {
	vals := map[onDiskPoint][]float64{}
	var order []OnDiskCase
	seen := map[OnDiskCase]bool{}
	for _, r := range rs {
		k := onDiskPoint{r.Case, r.Point.Level}
		vals[k] = append(vals[k], r.StepsPerSec)
		if !seen[r.Case] {
			seen[r.Case] = true
			order = append(order, r.Case)
		}
	}
	var rows []OnDiskRow
	read := map[onDiskPoint]bool{}
	add := func(c OnDiskCase) {
		row := OnDiskRow{Case: c, Median: map[level.Level]float64{}, Ratio: map[level.Level]float64{}}
		for _, l := range level.For(level.Disk) {
			if vs := vals[onDiskPoint{c, l}]; len(vs) > 0 {
				row.Median[l] = summary.Median(vs)
				read[onDiskPoint{c, l}] = true
			} else if k := (onDiskPoint{c.For(l), l}); len(vals[k]) > 0 {
				row.Median[l] = summary.Median(vals[k])
				read[k] = true
				if row.Shared == nil {
					row.Shared = map[level.Level]bool{}
				}
				row.Shared[l] = true
			}
		}
		rows = append(rows, row)
	}
	for _, c := range order {
		if !c.Shared() {
			add(c)
		}
	}
	for _, c := range order {
		if !c.Shared() {
			continue
		}
		for _, l := range level.For(level.Disk) {
			if len(vals[onDiskPoint{c, l}]) > 0 && !read[onDiskPoint{c, l}] {
				add(c)
				break
			}
		}
	}
	for i := range rows {
		row := &rows[i]
		if dev := row.Median[level.Device]; dev > 0 {
			for l, v := range row.Median {
				row.Ratio[l] = v / dev
			}
		}
		row.Attribution = ladder.Attribute(row.Median)
	}
	return rows
}

// OnDiskRow is one case's medians, ratios to device and attribution.
type OnDiskRow struct {
	Case   OnDiskCase
	Median map[level.Level]float64 // median steps/s
	Ratio  map[level.Level]float64 // to the device level
	// Shared marks the levels whose median is the shared case's
	// measurement (Case.For(level)), not the case's own; nil: none.
	Shared      map[level.Level]bool
	Attribution ladder.Attribution
}

// OnDiskOutcome is what an OnDisk measured: every run of every point of
// every case, in the order they were made.
type OnDiskOutcome struct {
	Runs []OnDiskResult
}

var _ Typed[OnDiskOutcome] = OnDisk{}

// Run is Measure, then the runs' records (RunTyped).
func (o OnDisk) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped(ctx, o, env)
}

// Codec is OnDiskCodec.
func (OnDisk) Codec() Codec[OnDiskOutcome] { return OnDiskCodec }

// OnDiskCodec is the records codec of an OnDisk's outcome: a run's record
// is BenchmarkLadderOnDisk/<case>/<point>, the case's dimensions (those
// its level depends on, for a shared point: OnDiskCase.For) then the
// ladder point's keys, with a GOMAXPROCS suffix. Decode reads each run's
// case, level and steps/s back, and refuses a shared point whose name
// does not give every dimension its level depends on. A file from before
// content and decoder were dimensions reads as noise content, Go decoder.
var OnDiskCodec = Codec[OnDiskOutcome]{
	Experiment: "LadderOnDisk",
	Keys:       map[string][]string{"LadderOnDisk": {"format", "content", "decoder", "layout", "raw", "page-cache", "level", "workers", "transforms", "placement", "pinned"}},
	// A shared point names only the dimensions its level depends on
	// (raw, always); files from before placement and pinning were
	// recorded lack those.
	Optional: map[string][]string{"LadderOnDisk": {"format", "content", "decoder", "layout", "page-cache", "placement", "pinned"}},
	Procs:    true,
	encode: func(o OnDiskOutcome) []*benchfmt.Result {
		return recordsOf(o.Runs, func(r OnDiskResult) *benchfmt.Result { return r.Record })
	},
	decode: decodeOnDisk,
}

// decodeOnDisk is OnDiskCodec's decode.
func decodeOnDisk(recs []Record) (OnDiskOutcome, error) {
	runs, err := decodeEach(recs, decodeOnDiskRun)
	return OnDiskOutcome{Runs: runs}, err
}

// decodeOnDiskRun is the run of an OnDisk's record: its case, point and
// steps/s, its record kept.
func decodeOnDiskRun(r Record) (OnDiskResult, error) {
	raw, err := r.count("raw", true)
	if err != nil {
		return OnDiskResult{}, err
	}
	p, err := r.point()
	if err != nil {
		return OnDiskResult{}, err
	}
	c := OnDiskCase{Format: r.Keys["format"], Layout: r.Keys["layout"], RawSize: raw, PageCache: r.Keys["page-cache"],
		Content: r.Keys["content"], Decoder: r.Keys["decoder"]}
	if c.Format != "" && c.Content == "" { // a file from before content and decoder were dimensions
		c.Content, c.Decoder = datasets.ContentNoise, ondisk.DecoderGo
	}
	// A shared point (a file from after the sharing) names exactly the
	// dimensions its level depends on; a case's own point, all.
	if l := p.Level; c.Shared() && !slices.Equal(c.Dimensions(), OnDiskDepends(l)) {
		return OnDiskResult{}, fmt.Errorf("%s: level %s depends on %s, and the name does not give them all", fullName(r.Result), l, strings.Join(OnDiskDepends(l), ", "))
	}
	sps, err := r.Value("steps/s")
	return OnDiskResult{Case: c, Point: p, Record: r.Result, StepsPerSec: sps}, err
}
