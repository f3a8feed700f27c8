package workloads

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/membw"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// RealPeer is headspace peer --peers: our goroutine loader (libjpeg-turbo,
// fast transforms, mask ratio 0) against the loaders a user would install
// instead, each run by its own library from the pinned peers env
// (harness/realpeer), the same job on the same natural JPEGs (an
// ImageFolder on disk, or, the bucket peers, uploaded to the pinned S3
// server), round by round, with the limit at each worker count: a copy
// bandwidth on as many goroutines. It needs the peers env (make
// peers-env): the Registry marks it so.
type RealPeer struct {
	Peers []realpeer.Peer
	// Python is the peers env's python; "" where none is found.
	Python        string
	Width, Height int
	// Job is the peers' job but its data: crop, batch, batches, seed.
	Job     realpeer.Settings
	Workers []int
	// Count is the rounds; Quality the JPEGs' (the bucket peers' are
	// uploaded at 90).
	Count, Quality int
	// run, if set, is a command's run: where the lines go, what the
	// run's file says beside its records (nil: stderr discarded).
	run *realPeerRun
	// report and plot are the files Report writes: --report's Markdown
	// and --plot's base ("" for none); from is --from's file ("" for a
	// run).
	report, plot, from string
	// qualityGiven says --jpeg-quality was given (refused with the
	// bucket peers).
	qualityGiven bool
}

// realPeerRun is what a command keeps of a RealPeer run beside its
// records: its log, and the result file's lines the run made (its
// images', ours's and the limit's) and its runs, for the lines of the
// missing ones.
type realPeerRun struct {
	log    io.Writer
	lines  []resultfile.Config
	runs   []realpeer.Measurement
	limits []realpeer.LimitRun
}

// DefaultRealPeer is peer --peers's defaults: every peer reading files,
// 2 workers, 512x512 JPEGs of quality 90 cropped to 224, 24 batches of
// 32, 3 rounds.
func DefaultRealPeer() RealPeer {
	ps, _ := realpeer.ParseNames("all")
	return RealPeer{Peers: ps, Python: realpeer.DefaultPython(), Width: 512, Height: 512,
		Job: realpeer.Settings{Crop: 224, Batch: 32, Batches: 24, Seed: 1}, Workers: []int{2}, Count: 3, Quality: 90}
}

// QuickRealPeer runs every code path of one peer (torch 2's DataLoader)
// in seconds: 1 worker, 64x64 JPEGs cropped to 32, 2 batches of 4, one
// round.
func QuickRealPeer() RealPeer {
	ps, _ := realpeer.ParseNames("torch2")
	return RealPeer{Peers: ps, Python: realpeer.DefaultPython(), Width: 64, Height: 64,
		Job: realpeer.Settings{Crop: 32, Batch: 4, Batches: 2, Seed: 1}, Workers: []int{1}, Count: 1, Quality: 90}
}

// Name is RealPeer: BenchmarkRealPeer/… and BenchmarkRealPeerLimit/….
func (RealPeer) Name() string { return "RealPeer" }

// Document is "": a comparison of headspace's own (docs/peers.md).
func (RealPeer) Document() string { return "" }

// Codec is RealPeerCodec.
func (RealPeer) Codec() Codec[RealPeerOutcome] { return RealPeerCodec }

// Settings are the comparison's specification, as its result file's
// lines name them.
func (e RealPeer) Settings() []resultfile.Config {
	s := e.Job
	return []resultfile.Config{
		{Key: "peers", Value: strings.Join(namesOf(e.Peers), ",")},
		{Key: "workers", Value: joinInts(e.Workers)},
		{Key: "rounds", Value: strconv.Itoa(e.Count)},
		{Key: "batch", Value: strconv.Itoa(s.Batch)},
		{Key: "batches", Value: strconv.Itoa(s.Batches)},
		{Key: "crop", Value: strconv.Itoa(s.Crop)},
		{Key: "raw-size", Value: fmt.Sprintf("%dx%d", e.Width, e.Height)},
		{Key: "seed", Value: strconv.FormatUint(s.Seed, 10)},
		{Key: "images", Value: strconv.Itoa(s.Batch * s.Batches)},
	}
}

// Run is RunTyped of Measure.
func (e RealPeer) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped(ctx, e, env)
}

// Measure writes the images (data), then measures ours and every peer
// at each worker count, round by round, and the limit between rounds
// (realpeer.Sweep). A peer that fails mid-run has its run kept as
// missing, with the reason (a line of the file, no record).
func (e RealPeer) Measure(ctx context.Context, env Env) (RealPeerOutcome, error) {
	run := e.run
	if run == nil {
		run = &realPeerRun{log: io.Discard}
	}
	runner := realpeer.Runner{Python: e.Python, Dir: realpeer.ScriptDir}
	d, err := e.data(ctx, &runner, run.log)
	if err != nil {
		return RealPeerOutcome{}, err
	}
	defer d.close()
	run.lines = e.fileLines(d)
	c := realpeer.Config{Runner: runner, Settings: d.settings, Ours: d.ours, Peers: e.Peers, Workers: e.Workers, Count: e.Count, Copy: realPeerCopy,
		Limit: func(l realpeer.LimitRun) {
			run.limits = append(run.limits, l)
			fmt.Fprintf(run.log, "%s round %d: copy %.2f GB/s\n", l.BenchName(), l.Round, l.Copy.BytesPerSec/1e9)
		}}
	run.runs, err = realpeer.Sweep(ctx, c, func(m realpeer.Measurement) { logRealPeer(run.log, m) })
	return RealPeerOutcome{Runs: run.runs, Limits: run.limits}, err
}

// Report prints o's table and writes its Markdown and its plot where
// e's report and plot name them: a run's, o decoded from its records as
// its file holds them, and --from's of a file alike. Lines that make no
// report are bad input from a file.
func (e RealPeer) Report(o RealPeerOutcome, w io.Writer) error {
	r, err := realpeer.ReportOf(cmp.Or(e.from, "this run"), o.Config, o.Runs, o.Limits)
	if err != nil && e.from != "" {
		return cli.Usagef("--from: %v", err)
	}
	if err != nil {
		return err
	}
	return writeRealPeersReport(w, r, e.report, e.plot)
}

// realPeerCopy is how the limit's copy bandwidth is measured.
var realPeerCopy = membw.Config{Buffer: membw.BufferSize(), Reps: 8, Trials: 3}

// realPeerData is the images every side of peer --peers reads, and our
// pipeline reading them.
type realPeerData struct {
	settings   realpeer.Settings // the peers', Data set
	ours       loader.Config
	where      string  // where the images are, for the file's dataset line
	fetch      string  // ours's GETs in flight, for its ours line ("" on disk)
	imageBytes float64 // an image's bytes
	close      func()  // removes them (stops the server)
}

// data writes e's images, on disk as an ImageFolder or (the bucket
// peers) uploaded to the pinned S3 server it starts, whose credentials
// and endpoint go into runner's environment, and sets our pipeline to
// read them.
func (e RealPeer) data(ctx context.Context, runner *realpeer.Runner, log io.Writer) (d realPeerData, err error) {
	s := e.Job
	n := s.Batch * s.Batches
	src := datasets.Synthetic{Width: e.Width, Height: e.Height, Classes: 10, N: n, Seed: s.Seed, Content: datasets.ContentNatural}
	ours := peer.Settings{Width: e.Width, Height: e.Height, Crop: s.Crop, Batch: s.Batch, Batches: s.Batches, Seed: s.Seed}.Pipeline(transforms.Fast, 1)
	ours.Decoder = ondisk.DecoderTurbo
	var data string
	if e.Peers[0].Bucket {
		fmt.Fprintf(log, "peer --peers: writing %d natural %dx%d JPEGs (quality 90), starting the S3 server, uploading them as an ImageFolder…\n", n, e.Width, e.Height)
		rb, err := peer.StartRemote(ctx, src, n, link.Config{})
		if err != nil {
			return d, err
		}
		d.close = func() { rb.Close() }
		// StartRemote put the server's credentials in this process's
		// environment, for ours; the peers get them and the endpoint.
		runner.Env = rb.Env()
		s.Data = rb.URLs[peer.ImageFolder]
		// Ours keeps as many GETs in flight as the peers have workers
		// (each map-style worker has one at a time).
		ours.Bucket = bucket.Options{Endpoint: rb.Link.URL(), Concurrency: slices.Max(e.Workers)}
		d.imageBytes = rb.Costs[peer.ImageFolder].BytesPerSample
		d.where = "in a bucket of the pinned S3 server on 127.0.0.1 (versitygw), one object an image, no emulated link"
		data, d.fetch = s.Data, fmt.Sprintf(", %d GETs in flight (the most workers)", ours.Bucket.Concurrency)
	} else {
		fmt.Fprintf(log, "peer --peers: writing %d natural %dx%d JPEGs (quality %d) as an ImageFolder…\n", n, e.Width, e.Height, e.Quality)
		folder, err := realpeer.WriteFolder(ctx, src, e.Quality)
		if err != nil {
			return d, err
		}
		d.close = func() { folder.Close() }
		s.Data, data = folder.Dir, folder.Dir
		d.imageBytes = float64(folder.Bytes) / float64(n)
		d.where = "in an ImageFolder of 10 classes, read from the page cache"
	}
	if ours, err = ours.WithDataContext(ctx, data); err != nil {
		d.close()
		return d, fmt.Errorf("ours: %s: %w", data, err)
	}
	ours.Transforms.MaskRatio = 0
	ours.DecodeCrop = loader.DecodeCropOn
	d.settings, d.ours = s, ours
	return d, nil
}

// fileLines are the result file's lines of e on d after its Settings:
// the images, the job, ours, and the limit's bytes and copy.
func (e RealPeer) fileLines(d realPeerData) []resultfile.Config {
	settings := []resultfile.Config{
		{Key: "dataset", Value: fmt.Sprintf("natural (dead leaves) JPEG quality %d %s, %.0f KiB an image", e.Quality, d.where, d.imageBytes/1024)},
		{Key: "transforms", Value: "decode to RGB, random crop, RGB to YCbCr (the document's ConvertColor), / 255, float32 CHW batch"},
		{Key: "ours", Value: "goroutine loader at level none, libjpeg-turbo (--decoder turbojpeg, --decode-crop on), fast transforms, mask ratio 0, 2 batches prefetched" + d.fetch},
		{Key: "decode-crop", Value: loader.DecodeCropSetting},
	}
	sampleBytes, parts := realpeer.SampleBytes(d.imageBytes, e.Width, e.Height, e.Job.Crop, d.ours.DecodesCrop())
	settings = append(settings,
		resultfile.Config{Key: realpeer.LimitBytesKey, Value: strconv.FormatInt(sampleBytes, 10)},
		resultfile.Config{Key: realpeer.LimitBytesPartsKey, Value: parts})
	return append(settings, realpeer.LimitConfig(realPeerCopy)...)
}

// logRealPeer is m's line on log.
func logRealPeer(log io.Writer, m realpeer.Measurement) {
	if m.Missing != "" {
		fmt.Fprintf(log, "%s round %d: missing: %s\n", m.BenchName(), m.Round, m.Missing)
		return
	}
	fmt.Fprintf(log, "%s round %d: TTFB %.3fs, %.1f samples/s, CPU %.2fs, peak RSS %.0f MiB\n", m.BenchName(), m.Round, m.TTFB.Seconds(), m.SamplesPerSec, m.CPU.Seconds(), float64(m.PeakRSS)/(1<<20))
}

func namesOf(ps []realpeer.Peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}
