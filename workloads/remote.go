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
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/s3server"
	"github.com/headspace-bench/headspace/harness/train"
)

// Remote is the remedies of data in a bucket measured (issue 34, "Data
// from a bucket", item 5): the loader's samples/s and the accelerator's
// headspace (1 − steps/s at level none ÷ steps/s at level device)
// against requests in flight (--fetch-concurrency) × the link's round
// trip × the layout (one object per sample, or tar shards of a size in
// bytes, each sample a ranged GET) × the format (raw pixels, or JPEG
// decoded on the host). Run starts the pinned S3 server (package
// s3server) on 127.0.0.1, writes and uploads each dataset, and runs level
// none at every point through an emulated link (package link) with that
// round trip and nothing else; level local (the same objects copied to
// local disk: every bound but the network) once per dataset and level
// device once, straight to the server. Then each Check: a link and a
// concurrency the grid does not hold, the fetch model's out-of-sample
// test (package fetchmodel).
type Remote struct {
	Formats     []string        // "raw", "jpeg" (ondisk formats)
	Layouts     []RemoteLayout  // files, shards of a size
	RTTs        []time.Duration // the links' round trips
	Concurrency []int           // requests in flight
	Checks      []RemoteCheck   // links off the grid, for the model's check
	// Ladder is every point's pipeline (raw size, batch, workers,
	// transforms) and loop; its levels, workers, transforms and runs
	// (Count) apply as Run says.
	Ladder  Ladder
	Samples int // samples per dataset
	// cmd is what headspace remote's flags set beside the grid.
	cmd remoteCommand
}

// RemoteLayout is a layout of the grid: "files" (ShardBytes 0), or tar
// shards of about ShardBytes each ("shards-4MB"), read member by member
// with ranged GETs (as many requests per sample as files) or, with Whole,
// one GET a shard, its members served from memory ("shards-4MB-whole").
type RemoteLayout struct {
	Name       string
	ShardBytes int64
	Whole      bool
}

// RemoteCheck is a link and a concurrency off the grid, measured for
// every dataset to check the model's predictions.
type RemoteCheck struct {
	Name        string // a benchmark name's part: "a"
	Link        string // a link spec (link.Parse): "latency=40ms,bandwidth=20Mbit/s"
	Concurrency int
}

// remoteLayouts is the issue's: one object per sample, ~4 MB and ~64 MB
// shards.
var remoteLayouts = []RemoteLayout{
	{"files", 0, false},
	{"shards-4MB", 4 << 20, false}, {"shards-4MB-whole", 4 << 20, true},
	{"shards-64MB", 64 << 20, false}, {"shards-64MB-whole", 64 << 20, true},
}

// RemoteStep is the emulated device's step for Remote: fast (10 ms), so
// that fetching, not the step, sets the rate over most of the grid.
const RemoteStep = 10 * time.Millisecond

// RemoteDevice is the emulated device at RemoteStep: the device a caller
// passes Remote's Run (Env.Device) to measure as the report does.
func RemoteDevice() Device {
	c := DocumentDevice()
	c.Step = RemoteStep
	return Emulated(c)
}

// DefaultRemote is the grid of issue 34 item 5 at a size this machine
// runs in minutes: concurrency 1, 4, 16, 64 × round trip 0, 5, 20, 80 ms
// × files, ~4 MB and ~64 MB shards (each read ranged and whole) × raw and
// JPEG, 1024 natural 64²
// images (a raw one 12 KiB, a JPEG a few KiB, so a 64 MB shard is the
// whole dataset), cropped to 32, batches of 16 on 2 workers, the fast
// transforms, 24 measured steps (384 samples) after 4 warm-up, so 64
// requests in flight run well past their start, one run of each point.
// Two checks: 40 ms over a 20 Mbit/s link at 16 in flight, and 10 ms ± 2
// at 8.
func DefaultRemote() Remote {
	l := DefaultLadder()
	l.Levels = []level.Level{level.None}
	l.Workers = []int{2}
	l.Transforms = []string{transforms.Fast}
	p := &l.Pipeline
	p.Dataset.Width, p.Dataset.Height, p.Dataset.Content = 64, 64, datasets.ContentNatural
	p.Transforms.Crop, p.Batch = 32, 16
	l.Train = train.Config{Steps: 24, Warmup: 4}
	l.Count = 1
	return Remote{
		Formats: []string{"raw", "jpeg"}, Layouts: remoteLayouts,
		RTTs:        []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond},
		Concurrency: []int{1, 4, 16, 64},
		Checks: []RemoteCheck{
			{Name: "a", Link: "latency=40ms,bandwidth=20Mbit/s", Concurrency: 16},
			{Name: "b", Link: "latency=10ms,jitter=2ms", Concurrency: 8},
		},
		Ladder: l, Samples: 1024,
	}
}

// QuickRemote is the grid at a size that runs in seconds: JPEG, files
// and small shards, round trips 0 and 5 ms, 1 and 4 in flight, one
// check, 32 images of 32² in batches of 4. Every code path, no
// comparable numbers.
func QuickRemote() Remote {
	r := DefaultRemote()
	r.Formats = []string{"jpeg"}
	r.Layouts = []RemoteLayout{{"files", 0, false}, {"shards-16KB", 16 << 10, false}, {"shards-16KB-whole", 16 << 10, true}}
	r.RTTs = []time.Duration{0, 5 * time.Millisecond}
	r.Concurrency = []int{1, 4}
	r.Checks = r.Checks[1:]
	p := &r.Ladder.Pipeline
	p.Dataset.Width, p.Dataset.Height = 32, 32
	p.Transforms.Crop, p.Batch = 16, 4
	r.Ladder.Train = train.Config{Steps: 2, Warmup: 1}
	r.Samples = 32
	return r
}

// Name is "Remote": BenchmarkRemote/….
func (Remote) Name() string { return "Remote" }

// Document is "": the remedies of issue 34, headspace's own.
func (Remote) Document() string { return "" }

// Validate reports the first problem with the grid before anything runs.
func (r Remote) Validate() error {
	switch {
	case len(r.Formats) == 0 || len(r.Layouts) == 0 || len(r.RTTs) == 0 || len(r.Concurrency) == 0:
		return errors.New("remote grid has no points: every dimension needs a value")
	case r.Samples <= 0:
		return fmt.Errorf("remote: samples %d must be positive", r.Samples)
	}
	if err := oneOf("format", r.Formats, ondisk.Formats); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	for _, l := range r.Layouts {
		if l.Name == "" || strings.ContainsAny(l.Name, "/ =") || l.ShardBytes < 0 || (l.Name == "files") != (l.ShardBytes == 0) || (l.Whole && l.ShardBytes == 0) {
			return fmt.Errorf("remote: layout %q (%d bytes a shard, whole %v): want files, or a name and a shard size", l.Name, l.ShardBytes, l.Whole)
		}
	}
	for _, d := range r.RTTs {
		if d < 0 || d > time.Second {
			return fmt.Errorf("remote: round trip %v outside 0 to 1s", d)
		}
	}
	checks := make([]int, len(r.Checks))
	for i, c := range r.Checks {
		checks[i] = c.Concurrency
	}
	for _, c := range append(slices.Clone(r.Concurrency), checks...) {
		if c < 1 || c > bucket.MaxConcurrency {
			return fmt.Errorf("remote: concurrency %d outside 1 to %d", c, bucket.MaxConcurrency)
		}
	}
	for _, c := range r.Checks {
		if c.Name == "" || strings.ContainsAny(c.Name, "/ =") {
			return fmt.Errorf("remote: check %q: want a name without /, = or spaces", c.Name)
		}
		if _, err := link.Parse(c.Link); err != nil {
			return fmt.Errorf("remote: check %s: %w", c.Name, err)
		}
	}
	l := r.Ladder
	l.Pipeline.Dataset.N = r.Samples
	return l.Validate()
}

// Settings is the grid's configuration block: the pipeline and loop, the
// emulated step is the device's; the grid's dimensions as "remote-*"
// lines, and each check's link as "remote-check-<name>" ("<link
// spec> concurrency=N"): what a report rebuilt from the file needs.
func (r Remote) Settings() []resultfile.Config {
	p := r.Ladder.Pipeline
	p.Dataset.N = r.Samples
	out := append(p.Settings(),
		resultfile.Config{Key: "steps", Value: fmt.Sprint(r.Ladder.Train.Steps)},
		resultfile.Config{Key: "warmup", Value: fmt.Sprint(r.Ladder.Train.Warmup)},
		resultfile.Config{Key: "remote-count", Value: fmt.Sprint(r.Ladder.Count)},
		resultfile.Config{Key: "remote-formats", Value: strings.Join(r.Formats, ",")},
	)
	layouts := joined(r.Layouts, func(l RemoteLayout) string {
		w := ""
		if l.Whole {
			w = ":whole"
		}
		return fmt.Sprintf("%s:%d%s", l.Name, l.ShardBytes, w)
	})
	out = append(out,
		resultfile.Config{Key: "remote-layouts", Value: layouts},
		resultfile.Config{Key: "remote-rtts", Value: joined(r.RTTs, time.Duration.String)},
		resultfile.Config{Key: "remote-concurrency", Value: joinInts(r.Concurrency)},
		resultfile.Config{Key: "remote-server", Value: "versitygw " + s3server.Version + " on 127.0.0.1"},
		resultfile.Config{Key: "fetch-window", Value: loader.WindowRule},
	)
	for _, c := range r.Checks {
		out = append(out, resultfile.Config{Key: "remote-check-" + c.Name, Value: fmt.Sprintf("%s concurrency=%d", c.Link, c.Concurrency)})
	}
	return out
}

// RemoteDataset is one dataset of the grid: its format and layout, as a
// benchmark name's part ("format=jpeg/layout=files").
type RemoteDataset struct{ Format, Layout string }

// Name is "format=F/layout=L".
func (d RemoteDataset) Name() string { return "format=" + d.Format + "/layout=" + d.Layout }

// The record names of Remote, without "Benchmark" and the GOMAXPROCS
// suffix, each ending with the point's ladder.Point.Sub:
//
//	Remote/<dataset>/rtt=20ms/concurrency=16/level=none/…  the grid
//	Remote/<dataset>/check=a/concurrency=16/level=none/…   a check
//	Remote/<dataset>/level=local/…                         the host's bound
//	Remote/level=device/…                                  the device's
//
// Every record of a fetching level adds bytes/sample, the bytes fetched
// per sample (the model's input).
const RemoteBytesUnit = "bytes/sample"

// RemoteRun is one run of one point of the grid: an element of what a
// Remote measured (RemoteOutcome). Its record (PointRun.Record) is
// named by its point (under) and adds RemoteBytesUnit where it fetched.
type RemoteRun struct {
	// Dataset is the run's format and layout; zero for level device,
	// which reads none.
	Dataset RemoteDataset
	// RTT is the grid's round trip, Check a check's name instead;
	// Concurrency is the requests in flight through the link, 0 for
	// levels local and device, which read straight from the server.
	RTT         time.Duration
	Check       string
	Concurrency int
	PointRun
}

// under is the run's benchmark path, before its ladder point's
// (Ladder.Under): Remote[/<dataset>][/rtt=…|/check=…/concurrency=…].
func (r RemoteRun) under() string {
	s := "Remote"
	if r.Dataset != (RemoteDataset{}) {
		s += "/" + r.Dataset.Name()
	}
	switch {
	case r.Check != "":
		s += "/check=" + r.Check
	case r.Concurrency > 0:
		s += "/rtt=" + r.RTT.String()
	}
	if r.Concurrency > 0 {
		s += "/concurrency=" + strconv.Itoa(r.Concurrency)
	}
	return s
}

// RemoteOutcome is what a Remote measured: every run, in the order they
// were made.
type RemoteOutcome struct {
	Runs []RemoteRun
	// Settings are the result file's configuration lines, which the
	// command gives it (settled); the codec reads records alone.
	Settings []resultfile.Config
}

// settle gives o its file's settings.
func (o *RemoteOutcome) settle(s []resultfile.Config) { o.Settings = s }

var _ Typed[RemoteOutcome] = Remote{}

// Measure is MeasureEach with no callback.
func (r Remote) Measure(ctx context.Context, env Env) (RemoteOutcome, error) {
	return r.MeasureEach(ctx, env, nil)
}

// MeasureEach measures the grid (see Remote), passing each run to each
// (if not nil) as it is made: Run passes its record on to env.Result
// there (`headspace remote` prints it and streams it to its file). An
// error from each stops the run. Datasets are written under env.Dir, one
// at a time, and the server's objects beside them; all is removed at
// the end, and so are the local copies level local makes in the cache.
func (r Remote) MeasureEach(ctx context.Context, env Env, each func(RemoteRun) error) (RemoteOutcome, error) {
	var out RemoteOutcome
	if err := r.Validate(); err != nil {
		return out, err
	}
	dir, err := os.MkdirTemp(env.dir(), "headspace-remote-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	srv, err := s3server.Start(ctx, s3server.Options{Root: filepath.Join(dir, "s3")})
	if err != nil {
		return out, err
	}
	defer srv.Close()
	env.start(r.Name())
	dev, closeDev := env.device().once()
	defer closeDev()
	g := remoteGrid{r: r, srv: srv, dev: dev, out: &out, each: each,
		direct: bucket.Options{Endpoint: srv.Endpoint(), Region: s3server.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}}
	mk, err := bucket.OpenUnchecked(bucket.URL{Bucket: "headspace"}, g.direct)
	if err != nil {
		return out, err
	}
	if err := mk.MakeBucket(ctx); err != nil {
		return out, err
	}
	deviceDone := false
	for _, format := range r.Formats {
		perSample, err := r.sampleBytes(ctx, filepath.Join(dir, "probe-"+format), format)
		if err != nil {
			return out, err
		}
		for _, lay := range r.Layouts {
			ds := RemoteDataset{format, lay.Name}
			url, err := r.upload(ctx, dir, ds, lay, perSample, g.direct)
			if err != nil {
				return out, err
			}
			src := remoteSource{url, lay.Whole}
			if !deviceDone {
				if err := g.run(ctx, src, RemoteRun{}, level.Device, g.direct, nil); err != nil {
					return out, err
				}
				deviceDone = true
			}
			if err := g.points(ctx, src, ds); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// remoteGrid is what the runs of a Remote's MeasureEach share: the grid,
// the server and the options that reach it straight, the device, and
// the runs made so far, each passed to each (if not nil).
type remoteGrid struct {
	r      Remote
	srv    *s3server.Server
	direct bucket.Options
	dev    Device
	out    *RemoteOutcome
	each   func(RemoteRun) error
}

// remoteSource is an uploaded dataset as the ladder reads it: its URL,
// and whether its shards are read whole.
type remoteSource struct {
	url   string
	whole bool
}

// points runs every point of dataset ds, uploaded to src: level local,
// then level none at every round trip and concurrency of the grid, then
// at each check.
func (g remoteGrid) points(ctx context.Context, src remoteSource, ds RemoteDataset) error {
	if err := g.runLocal(ctx, src, ds); err != nil {
		return err
	}
	for _, rtt := range g.r.RTTs {
		for _, c := range g.r.Concurrency {
			if err := g.viaLink(ctx, src, link.Config{Latency: rtt}, RemoteRun{Dataset: ds, RTT: rtt, Concurrency: c}); err != nil {
				return err
			}
		}
	}
	for _, ck := range g.r.Checks {
		cfg, _ := link.Parse(ck.Link) // checked by Validate
		if err := g.viaLink(ctx, src, cfg, RemoteRun{Dataset: ds, Check: ck.Name, Concurrency: ck.Concurrency}); err != nil {
			return err
		}
	}
	return nil
}

// run runs level lv at the point at (its dataset, round trip or check,
// concurrency), reading src through bo, its link's settings those given;
// each of its runs, with the bytes it fetched per sample, is added to
// g.out and passed to g.each.
func (g remoteGrid) run(ctx context.Context, src remoteSource, at RemoteRun, lv level.Level, bo bucket.Options, settings []resultfile.Config) error {
	l := g.r.Ladder
	l.Levels, l.Under = []level.Level{lv}, at.under()
	l.Pipeline.Dataset.N = g.r.Samples
	l.Pipeline.Data, l.Pipeline.Bucket, l.Pipeline.Link = src.url, bo, settings
	if src.whole {
		l.Pipeline.ShardReads = ondisk.ShardReadsWhole
	}
	o, err := l.Measure(ctx, Env{Device: g.dev})
	if err != nil {
		return fmt.Errorf("%s: %w", l.Under, err)
	}
	for _, p := range o.Runs {
		if p.Result.Samples > 0 {
			p.Record.Values = append(p.Record.Values, benchfmt.Value{Value: float64(p.Result.Fetched) / float64(p.Result.Samples), Unit: RemoteBytesUnit})
		}
		at.PointRun = p
		g.out.Runs = append(g.out.Runs, at)
		if g.each != nil {
			if err := g.each(at); err != nil {
				return err
			}
		}
	}
	return nil
}

// Run is MeasureEach, each run's record passed to env.Result as it is
// made; it returns the records (RemoteCodec).
func (r Remote) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	o, err := r.MeasureEach(ctx, env, func(run RemoteRun) error { return env.result(run.Record) })
	return RemoteCodec.Encode(o), err
}

// Codec is RemoteCodec.
func (Remote) Codec() Codec[RemoteOutcome] { return RemoteCodec }

// RemoteCodec is a Remote's records codec: a record a run, in the order
// they ran, named as RemoteBytesUnit's comment shows, with a GOMAXPROCS
// suffix. Decode reads each run's point back, its record kept (its
// figures), and refuses a name whose parts do not make one of the four.
var RemoteCodec = Codec[RemoteOutcome]{
	Experiment: "Remote",
	Keys:       map[string][]string{"Remote": append([]string{"format", "layout", "rtt", "check", "concurrency"}, pointKeys...)},
	Optional:   map[string][]string{"Remote": {"format", "layout", "rtt", "check", "concurrency"}},
	Procs:      true,
	encode:     func(o RemoteOutcome) []*benchfmt.Result { return recordsOf(o.Runs, RemoteRun.record) },
	decode: func(recs []Record) (RemoteOutcome, error) {
		runs, err := decodeEach(recs, decodeRemote)
		return RemoteOutcome{Runs: runs}, err
	},
}

// decodeRemote is the run of a Remote's record: its point, its record
// kept, and the grid's dimensions its name gives.
func decodeRemote(rec Record) (RemoteRun, error) {
	p, err := rec.pointRun()
	if err != nil {
		return RemoteRun{}, err
	}
	k := rec.Keys
	r := RemoteRun{Dataset: RemoteDataset{k["format"], k["layout"]}, Check: k["check"], PointRun: p}
	if k["concurrency"] != "" {
		if r.Concurrency, err = rec.count("concurrency", true); err != nil {
			return r, err
		}
	}
	if rtt := k["rtt"]; rtt != "" {
		if r.RTT, err = time.ParseDuration(rtt); err != nil {
			return r, fmt.Errorf("%s: rtt %q is not a duration", fullName(rec.Result), rtt)
		}
	}
	// Level none reads through a link (a round trip or a check) at a
	// concurrency; local and device read straight from the server,
	// device no dataset.
	fetches, grid, check := p.Point.Level == level.None, k["rtt"] != "", r.Check != ""
	if fetches != (r.Concurrency > 0) || fetches != (grid != check) || (r.Dataset.Format == "") != (r.Dataset.Layout == "") ||
		(p.Point.Level == level.Device) != (r.Dataset.Format == "") {
		return r, fmt.Errorf("%s: not a point of Remote's grid (Remote/format=…/layout=…/rtt=…|check=…/concurrency=…/level=none/…, Remote/format=…/layout=…/level=local/…, Remote/level=device/…)", fullName(rec.Result))
	}
	return r, nil
}

// runLocal runs level local over dataset ds, uploaded to src, and
// removes the local copy it made in the cache.
func (g remoteGrid) runLocal(ctx context.Context, src remoteSource, ds RemoteDataset) error {
	err := g.run(ctx, src, RemoteRun{Dataset: ds}, level.Local, g.direct, nil)
	d, oerr := ondisk.OpenContext(ctx, src.url, ondisk.Options{Bucket: g.direct})
	if oerr == nil {
		if cp, cerr := d.LocalCopyDir(); cerr == nil {
			os.RemoveAll(cp)
		}
		d.Close()
	}
	return err
}

// viaLink runs level none at the point at, reading src through a fresh
// link of cfg to the server with at.Concurrency requests in flight.
func (g remoteGrid) viaLink(ctx context.Context, src remoteSource, cfg link.Config, at RemoteRun) error {
	lk, err := link.Start(ctx, g.srv.Addr(), cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", at.under(), err)
	}
	bo := g.direct
	bo.Endpoint, bo.Concurrency = lk.URL(), at.Concurrency
	err = g.run(ctx, src, at, level.None, bo, cfg.Settings())
	if cerr := lk.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// sampleBytes writes the dataset of format in the files layout to dir
// and returns its mean file size: what sets the samples per shard of a
// shard size.
func (r Remote) sampleBytes(ctx context.Context, dir, format string) (float64, error) {
	defer os.RemoveAll(dir)
	src := r.Ladder.Pipeline.Dataset
	src.N = r.Samples
	m, err := ondisk.Write(ctx, dir, src, ondisk.WriteOptions{Format: format, Layout: "files", Force: true})
	if err != nil {
		return 0, fmt.Errorf("remote: writing the %s dataset: %w", format, err)
	}
	var sum int64
	for _, f := range m.Files {
		sum += f.Size
	}
	return float64(sum) / float64(len(m.Files)), nil
}

// ShardSamples is how many samples of perSample bytes make a shard of
// about shardBytes: each member also carries a 512-byte tar header and
// padding, and a label member of 1 KiB (header and a block), at least 1.
func ShardSamples(shardBytes int64, perSample float64) int {
	member := perSample + 512 + 511 + 1024
	return max(1, int(float64(shardBytes)/member+0.5))
}

// upload writes ds to a directory under dir, uploads it to
// s3://headspace/<format>-<layout> and removes the directory; it returns
// the URL.
func (r Remote) upload(ctx context.Context, dir string, ds RemoteDataset, lay RemoteLayout, perSample float64, direct bucket.Options) (string, error) {
	local := filepath.Join(dir, ds.Format+"-"+ds.Layout)
	defer os.RemoveAll(local)
	src := r.Ladder.Pipeline.Dataset
	src.N = r.Samples
	wo := ondisk.WriteOptions{Format: ds.Format, Layout: "files", Force: true}
	if lay.ShardBytes > 0 {
		wo.Layout, wo.ShardSize = "shards", ShardSamples(lay.ShardBytes, perSample)
	}
	if _, err := ondisk.Write(ctx, local, src, wo); err != nil {
		return "", fmt.Errorf("remote: %s: writing the dataset: %w", ds.Name(), err)
	}
	url := "s3://headspace/" + ds.Format + "-" + ds.Layout
	u, _ := bucket.ParseURL(url)
	c, err := bucket.Open(ctx, u, direct)
	if err != nil {
		return "", err
	}
	if _, err := ondisk.Upload(ctx, c, local); err != nil {
		return "", fmt.Errorf("remote: %s: uploading: %w", ds.Name(), err)
	}
	return url, nil
}
