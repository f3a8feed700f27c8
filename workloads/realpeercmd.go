package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/command"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/membw"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/disturb"
)

const realPeersUsage = `

With --peers NAMES (or all) it compares with the loaders a user would
install instead, each run by its own library from the pinned environment
"make peers-env" makes (--python: its python, by default the one
ci/peers-env.sh made under ~/.cache/headspace): torch2 (torch 2's
DataLoader, worker processes), spdl (SPDL's pipeline, threads, its own
decoding), nodes-threads and nodes-procs (torchdata.nodes), dali (DALI's
CPU pipeline), tfdata (tf.data, AUTOTUNE); "all" is these. "all-bucket" is
s3map and s3iter (s3torchconnector's map-style and iterable datasets),
streaming (Mosaic's StreamingDataset on MDS shards MDSWriter wrote) and
litdata (litdata's StreamingDataset on chunks optimize wrote; its script
adds allow_http to litdata's obstore client options for the server's plain
http), which read the same images from a bucket: the pinned S3 server (versitygw)
on 127.0.0.1, ours with as many GETs in flight as the most workers; the two
kinds run apart. It writes batch x batches natural JPEGs of --raw-size as
an ImageFolder (on disk, or uploaded), and every side does the same job on
them: decode, random crop, RGB to YCbCr, / 255, float32 CHW batches,
at --workers (processes, threads or goroutines per stage) on the same
cores; ours is the goroutine loader with libjpeg-turbo, fast transforms,
mask ratio 0. Ours and every peer alternate, round by round. A peer whose
package is missing stops the command before anything runs (exit 2); a peer
that fails mid-run has its run recorded as missing, with the reason. It
prints samples/s, CPU per sample, peak RSS, TTFB and ours / peer; --out
records every run (BenchmarkRealPeer/peer=…) and each peer's versions,
--report the Markdown (docs/peers.md), --plot BASE samples/s against
workers for ours and each peer (BASE.png, BASE.svg). Between rounds it
measures the limit at each worker count: a STREAM-like copy bandwidth on
as many goroutines (BenchmarkRealPeerLimit/workers=…) and one more run of
ours for its stage times; the share of the limit is samples/s × the bytes
a sample moves through memory in our pipeline ÷ that bandwidth. Defaults with --peers: --workers 2,
--raw-size 512, --crop 224, --batch 32, --batches 24, --count 3.`

// realPeerFlags are the flags only --peers reads.
type realPeerFlags struct {
	peers   string
	quality int
}

func (f *realPeerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.peers, "peers", "", "compare with the real `peers`, comma-separated, all (those reading files) or all-bucket: "+strings.Join(realpeer.Names(), ", "))
	fs.IntVar(&f.quality, "jpeg-quality", 90, "with --peers: the JPEGs' `quality`")
}

// realPeerRun is what peer --peers's flags ask for.
type realPeerRun struct {
	peers       []realpeer.Peer
	python      string
	width       int
	height      int
	settings    realpeer.Settings
	workers     []int
	count       int
	quality     int
	out, report string
	plot        string // the plot's base path, "" for none
}

// parseRealPeers checks peer --peers's flags: fs's (their defaults with
// --peers where not given) and rf's.
func parseRealPeers(fs *flag.FlagSet, rf *realPeerFlags) (realPeerRun, error) {
	var r realPeerRun
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"data", "ladder", "remote", "impls", "script", "decoder", "decode-crop"} {
		if set[name] {
			return r, cli.Usagef("--%s does not apply to --peers", name)
		}
	}
	get := func(name, def string) string {
		if set[name] {
			return fs.Lookup(name).Value.String()
		}
		return def
	}
	var err error
	if r.peers, err = realpeer.ParseNames(rf.peers); err != nil {
		return r, cli.Usagef("--peers: %v", err)
	}
	if r.workers, err = cli.ParseInts("--workers", get("workers", "2")); err != nil {
		return r, err
	}
	for _, n := range r.workers {
		if err := cli.InRange("--workers", n, 1, loader.MaxWorkers); err != nil {
			return r, err
		}
	}
	if r.width, r.height, err = cli.ParseSize("--raw-size", get("raw-size", "512")); err != nil {
		return r, err
	}
	num := func(name, def string) int { n, _ := strconv.Atoi(get(name, def)); return n }
	seed, _ := strconv.ParseUint(get("seed", "1"), 10, 64)
	r.settings = realpeer.Settings{Crop: num("crop", "224"), Batch: num("batch", "32"), Batches: num("batches", "24"), Seed: seed}
	r.count, r.quality = num("count", "3"), rf.quality
	s := r.settings
	if err := cli.FirstErr(cli.InRange("--count", r.count, 1, cli.MaxCount), cli.InRange("--batches", s.Batches, 2, 10_000),
		cli.InRange("--batch", s.Batch, 1, 4096), cli.InRange("--jpeg-quality", r.quality, 1, 100)); err != nil {
		return r, err
	}
	if s.Batch*s.Batches > ondisk.MaxCount {
		return r, cli.Usagef("--batch %d x --batches %d: at most %d images", s.Batch, s.Batches, ondisk.MaxCount)
	}
	if s.Crop <= 0 || s.Crop%2 != 0 || s.Crop > r.width || s.Crop > r.height {
		return r, cli.Usagef("--crop %d must be positive, even and fit the %dx%d images", s.Crop, r.width, r.height)
	}
	if r.peers[0].Bucket && set["jpeg-quality"] {
		return r, cli.Usagef("--jpeg-quality does not apply to the bucket peers (the images are uploaded at quality 90)")
	}
	if r.python = get("python", realpeer.DefaultPython()); r.python == "" {
		return r, cli.Usagef("--peers: no peers environment found: %s", realpeer.InstallHint)
	}
	r.out, r.report, r.plot = fs.Lookup("out").Value.String(), fs.Lookup("report").Value.String(), fs.Lookup("plot").Value.String()
	return r, mkdirs(r.out, r.report, r.plot)
}

// checkRealPeers is the check before anything runs: each peer's packages
// in the env's status file, then its script's --check (which imports
// them and prints its versions and settings, returned). A peer that
// cannot run is a usage error naming it and how to install it.
func checkRealPeers(ctx context.Context, run realPeerRun, runner realpeer.Runner) ([]resultfile.Config, error) {
	st, ok, err := realpeer.ReadStatus(run.python)
	if err != nil {
		return nil, err
	}
	var config []resultfile.Config
	for _, p := range run.peers {
		if ok {
			if line := st.Unavailable(p); line != "" {
				return nil, cli.Usagef("%s: %s", line, realpeer.InstallHint)
			}
		}
		o, err := runner.Probe(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, cli.Usagef("%v: %s", err, realpeer.InstallHint)
		}
		for _, c := range o.Config {
			if c.Key == "python" {
				c.Key = "peers-python"
			}
			config = append(config, c)
		}
	}
	if _, err := turbojpeg.Load(); err != nil {
		return nil, fmt.Errorf("ours decodes with libjpeg-turbo: %w", err)
	}
	return dedupe(config), nil
}

// dedupe keeps the first line of each key.
func dedupe(cs []resultfile.Config) []resultfile.Config {
	seen := map[string]bool{}
	var out []resultfile.Config
	for _, c := range cs {
		if !seen[c.Key] {
			seen[c.Key] = true
			out = append(out, c)
		}
	}
	return out
}

// runRealPeers is peer --peers.
func runRealPeers(ctx context.Context, fs *flag.FlagSet, rf *realPeerFlags, args []string, stdout, stderr io.Writer) error {
	run, err := parseRealPeers(fs, rf)
	if err != nil {
		return err
	}
	if err := cli.CheckOutputs(realPeersOutputs(run.report, run.plot)...); err != nil {
		return err
	}
	runner := realpeer.Runner{Python: run.python, Dir: realpeer.ScriptDir}
	peerConfig, err := checkRealPeers(ctx, run, runner)
	if err != nil {
		return err
	}
	busy, err := waitQuiet(ctx, stderr)
	if err != nil {
		return err
	}
	host := machine.Describe()
	var ms []realpeer.Measurement
	var limits []realpeer.LimitRun
	var settings []resultfile.Config
	fileConfig := func() []resultfile.Config {
		return append(append(append([]resultfile.Config(nil), settings...), peerConfig...), realpeer.MissingConfig(ms)...)
	}
	_, err = driver.Run(ctx, driver.Job{Settings: fileConfig, Measure: func(ctx context.Context, _ *driver.Hooks) ([]*benchfmt.Result, error) {
		d, err := run.data(ctx, &runner, stderr)
		if err != nil {
			return nil, err
		}
		defer d.close()
		settings = append(append(machine.Environment("none"), busy...), run.fileLines(d, host.Distro, peerCommand(args))...)
		c := realpeer.Config{Runner: runner, Settings: d.settings, Ours: d.ours, Peers: run.peers, Workers: run.workers, Count: run.count, Copy: realPeerCopy,
			Limit: func(l realpeer.LimitRun) {
				limits = append(limits, l)
				fmt.Fprintf(stderr, "%s round %d: copy %.2f GB/s\n", l.BenchName(), l.Round, l.Copy.BytesPerSec/1e9)
			}}
		ms, err = realpeer.Sweep(ctx, c, func(m realpeer.Measurement) { logRealPeer(stderr, m) })
		return append(realpeer.Records(ms), realpeer.LimitRecords(limits)...), err
	}}, driver.Output{Path: run.out, Benchmarks: []string{realpeer.Benchmark, realpeer.LimitBenchmark}})
	if err != nil {
		return err
	}
	rep, err := realpeer.NewReport(fileConfig(), ms, limits, "this run")
	if err != nil {
		return err
	}
	if run.out != "" {
		fmt.Fprintf(stdout, "results: %s\n", run.out)
	}
	return writeRealPeersReport(stdout, rep, run.report, run.plot)
}

// waitQuiet waits (at most $HEADSPACE_QUIET_WAIT, 10 s) for a quiet
// machine; a busy one is measured all the same, said on stderr, and the
// result file says so: the line returned.
func waitQuiet(ctx context.Context, stderr io.Writer) ([]resultfile.Config, error) {
	q, err := disturb.WaitQuiet(ctx, disturb.Quiet{Max: command.DefaultQuietWait()})
	if err != nil || !q.Busy {
		return nil, err
	}
	fmt.Fprintf(stderr, "headspace: the machine did not get quiet (%s): measuring anyway; the result file says so\n", q)
	return []resultfile.Config{{Key: resultfile.BusyKey, Value: q.String()}}, nil
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

// data writes run's images, on disk as an ImageFolder or (the bucket
// peers) uploaded to the pinned S3 server it starts, whose credentials
// and endpoint go into runner's environment, and sets our pipeline to
// read them.
func (run realPeerRun) data(ctx context.Context, runner *realpeer.Runner, stderr io.Writer) (d realPeerData, err error) {
	s := run.settings
	n := s.Batch * s.Batches
	src := datasets.Synthetic{Width: run.width, Height: run.height, Classes: 10, N: n, Seed: s.Seed, Content: datasets.ContentNatural}
	ours := peer.Settings{Width: run.width, Height: run.height, Crop: s.Crop, Batch: s.Batch, Batches: s.Batches, Seed: s.Seed}.Pipeline(transforms.Fast, 1)
	ours.Decoder = ondisk.DecoderTurbo
	var data string
	if run.peers[0].Bucket {
		fmt.Fprintf(stderr, "peer --peers: writing %d natural %dx%d JPEGs (quality 90), starting the S3 server, uploading them as an ImageFolder…\n", n, run.width, run.height)
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
		ours.Bucket = bucket.Options{Endpoint: rb.Link.URL(), Concurrency: slices.Max(run.workers)}
		d.imageBytes = rb.Costs[peer.ImageFolder].BytesPerSample
		d.where = "in a bucket of the pinned S3 server on 127.0.0.1 (versitygw), one object an image, no emulated link"
		data, d.fetch = s.Data, fmt.Sprintf(", %d GETs in flight (the most workers)", ours.Bucket.Concurrency)
	} else {
		fmt.Fprintf(stderr, "peer --peers: writing %d natural %dx%d JPEGs (quality %d) as an ImageFolder…\n", n, run.width, run.height, run.quality)
		folder, err := realpeer.WriteFolder(ctx, src, run.quality)
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

// fileLines are the result file's lines of run on d after the machine's:
// what it compares, on what, and the limit's bytes and copy.
func (run realPeerRun) fileLines(d realPeerData, distro, command string) []resultfile.Config {
	s, n := d.settings, d.settings.Batch*d.settings.Batches
	settings := []resultfile.Config{
		{Key: "distro", Value: distro},
		{Key: "command", Value: command},
		{Key: "peers", Value: strings.Join(namesOf(run.peers), ",")},
		{Key: "workers", Value: joinInts(run.workers)},
		{Key: "rounds", Value: strconv.Itoa(run.count)},
		{Key: "batch", Value: strconv.Itoa(s.Batch)},
		{Key: "batches", Value: strconv.Itoa(s.Batches)},
		{Key: "crop", Value: strconv.Itoa(s.Crop)},
		{Key: "raw-size", Value: fmt.Sprintf("%dx%d", run.width, run.height)},
		{Key: "seed", Value: strconv.FormatUint(s.Seed, 10)},
		{Key: "images", Value: strconv.Itoa(n)},
		{Key: "dataset", Value: fmt.Sprintf("natural (dead leaves) JPEG quality %d %s, %.0f KiB an image", run.quality, d.where, d.imageBytes/1024)},
		{Key: "transforms", Value: "decode to RGB, random crop, RGB to YCbCr (the document's ConvertColor), / 255, float32 CHW batch"},
		{Key: "ours", Value: "goroutine loader at level none, libjpeg-turbo (--decoder turbojpeg, --decode-crop on), fast transforms, mask ratio 0, 2 batches prefetched" + d.fetch},
		{Key: "decode-crop", Value: loader.DecodeCropSetting},
	}
	sampleBytes, parts := realpeer.SampleBytes(d.imageBytes, run.width, run.height, s.Crop, d.ours.DecodesCrop())
	settings = append(settings,
		resultfile.Config{Key: realpeer.LimitBytesKey, Value: strconv.FormatInt(sampleBytes, 10)},
		resultfile.Config{Key: realpeer.LimitBytesPartsKey, Value: parts})
	return append(settings, realpeer.LimitConfig(realPeerCopy)...)
}

// logRealPeer is m's line on stderr.
func logRealPeer(stderr io.Writer, m realpeer.Measurement) {
	if m.Missing != "" {
		fmt.Fprintf(stderr, "%s round %d: missing: %s\n", m.BenchName(), m.Round, m.Missing)
		return
	}
	fmt.Fprintf(stderr, "%s round %d: TTFB %.3fs, %.1f samples/s, CPU %.2fs, peak RSS %.0f MiB\n", m.BenchName(), m.Round, m.TTFB.Seconds(), m.SamplesPerSec, m.CPU.Seconds(), float64(m.PeakRSS)/(1<<20))
}

// realPeersOutputs are the report and the plot's two files, for the
// output policy.
func realPeersOutputs(report, plot string) []cli.Output {
	return []cli.Output{{Path: report, Kind: peer.ReportKind}, cli.Figure(cli.Prefixed(plot, ".png")), cli.Figure(cli.Prefixed(plot, ".svg"))}
}

func namesOf(ps []realpeer.Peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// writeRealPeersReport prints r's table, writes its Markdown to report
// and its plot to plot's .png and .svg, each if set.
func writeRealPeersReport(stdout io.Writer, r realpeer.Report, report, plot string) error {
	if err := r.WriteText(stdout); err != nil {
		return err
	}
	if plot != "" {
		paths, err := r.Plot(plot)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s\n", strings.Join(paths, ", "))
	}
	if report == "" {
		return nil
	}
	if err := atomicfile.WriteKind(report, peer.ReportKind, r.WriteMarkdown); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", report)
	return nil
}

// rebuildRealPeers is --peers' --from: its records decoded through
// RealPeerCodec, its report rebuilt (realpeer.ReportOf).
func rebuildRealPeers(from string, recs []*benchfmt.Result, report, plot string, stdout io.Writer) error {
	o, err := RealPeerCodec.Decode(recs)
	var r realpeer.Report
	if err == nil {
		r, err = realpeer.ReportOf(from, o.Config, o.Runs, o.Limits)
	}
	if err != nil {
		return cli.Usagef("--from: %v", err)
	}
	return writeRealPeersReport(stdout, r, report, plot)
}
