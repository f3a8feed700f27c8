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

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/preflight"
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

// realPeerFiles are the files peer --peers writes: --out, --report and
// --plot's base ("" for none).
type realPeerFiles struct{ out, report, plot string }

// parseRealPeers checks peer --peers's flags: fs's (the defaults of
// RealPeer's Default size where not given) and rf's.
func parseRealPeers(fs *flag.FlagSet, rf *realPeerFlags) (e RealPeer, files realPeerFiles, err error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"data", "ladder", "remote", "impls", "script", "decoder", "decode-crop"} {
		if set[name] {
			return e, files, cli.Usagef("--%s does not apply to --peers", name)
		}
	}
	def := Sized[RealPeer](Default)
	get := func(name, def string) string {
		if set[name] {
			return fs.Lookup(name).Value.String()
		}
		return def
	}
	if e.Peers, err = realpeer.ParseNames(rf.peers); err != nil {
		return e, files, cli.Usagef("--peers: %v", err)
	}
	if e.Workers, err = cli.ParseInts("--workers", get("workers", joinInts(def.Workers))); err != nil {
		return e, files, err
	}
	for _, n := range e.Workers {
		if err := cli.InRange("--workers", n, 1, loader.MaxWorkers); err != nil {
			return e, files, err
		}
	}
	if e.Width, e.Height, err = cli.ParseSize("--raw-size", get("raw-size", fmt.Sprintf("%dx%d", def.Width, def.Height))); err != nil {
		return e, files, err
	}
	num := func(name string, def int) int { n, _ := strconv.Atoi(get(name, strconv.Itoa(def))); return n }
	seed, _ := strconv.ParseUint(get("seed", strconv.FormatUint(def.Job.Seed, 10)), 10, 64)
	e.Job = realpeer.Settings{Crop: num("crop", def.Job.Crop), Batch: num("batch", def.Job.Batch), Batches: num("batches", def.Job.Batches), Seed: seed}
	e.Count, e.Quality = num("count", def.Count), rf.quality
	if err := e.check(set["jpeg-quality"]); err != nil {
		return e, files, err
	}
	if e.Python = get("python", def.Python); e.Python == "" {
		return e, files, cli.Usagef("--peers: no peers environment found: %s", realpeer.InstallHint)
	}
	files = realPeerFiles{fs.Lookup("out").Value.String(), fs.Lookup("report").Value.String(), fs.Lookup("plot").Value.String()}
	return e, files, mkdirs(files.out, files.report, files.plot)
}

// check refuses a comparison e that cannot run: a count, batch, crop or
// quality out of bounds, more images than a folder holds, a quality
// given (qualityGiven) to the bucket peers.
func (e RealPeer) check(qualityGiven bool) error {
	s := e.Job
	if err := cli.FirstErr(cli.InRange("--count", e.Count, 1, cli.MaxCount), cli.InRange("--batches", s.Batches, 2, 10_000),
		cli.InRange("--batch", s.Batch, 1, 4096), cli.InRange("--jpeg-quality", e.Quality, 1, 100)); err != nil {
		return err
	}
	if s.Batch*s.Batches > ondisk.MaxCount {
		return cli.Usagef("--batch %d x --batches %d: at most %d images", s.Batch, s.Batches, ondisk.MaxCount)
	}
	if s.Crop <= 0 || s.Crop%2 != 0 || s.Crop > e.Width || s.Crop > e.Height {
		return cli.Usagef("--crop %d must be positive, even and fit the %dx%d images", s.Crop, e.Width, e.Height)
	}
	if e.Peers[0].Bucket && qualityGiven {
		return cli.Usagef("--jpeg-quality does not apply to the bucket peers (the images are uploaded at quality 90)")
	}
	return nil
}

// checkRealPeers is the check before anything runs: each peer's packages
// in the env's status file, then its script's --check (which imports
// them and prints its versions and settings, returned). A peer that
// cannot run is a usage error naming it and how to install it.
func checkRealPeers(ctx context.Context, e RealPeer) ([]resultfile.Config, error) {
	st, ok, err := realpeer.ReadStatus(e.Python)
	if err != nil {
		return nil, err
	}
	runner := realpeer.Runner{Python: e.Python, Dir: realpeer.ScriptDir}
	var config []resultfile.Config
	for _, p := range e.Peers {
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

// runRealPeers is peer --peers: the RealPeer experiment its flags
// make, checked, run by the driver (Job) once the machine is quiet, and
// its report.
func runRealPeers(ctx context.Context, fs *flag.FlagSet, rf *realPeerFlags, args []string, stdout, stderr io.Writer) error {
	e, files, err := parseRealPeers(fs, rf)
	if err != nil {
		return err
	}
	if err := cli.CheckOutputs(realPeersOutputs(files.report, files.plot)...); err != nil {
		return err
	}
	peerConfig, err := checkRealPeers(ctx, e)
	if err != nil {
		return err
	}
	busy, err := waitQuiet(ctx, stderr)
	if err != nil {
		return err
	}
	host := machine.Describe()
	run := &realPeerRun{log: stderr}
	e.run = run
	job := Job(e, Env{})
	var settings []resultfile.Config
	job.Settings = func() []resultfile.Config { // asked for once the run has ended
		if settings == nil {
			settings = slices.Concat(machine.Environment("none"), busy,
				[]resultfile.Config{{Key: "distro", Value: host.Distro}, {Key: "command", Value: peerCommand(args)}},
				e.Settings(), run.lines, peerConfig, realpeer.MissingConfig(run.runs))
		}
		return settings
	}
	o, err := driver.Run(ctx, job, driver.Output{Path: files.out, Benchmarks: []string{realpeer.Benchmark, realpeer.LimitBenchmark}})
	if err != nil {
		return err
	}
	recs, err := ranRecords(o, job.Settings())
	if err != nil {
		return err
	}
	r, err := RealPeerCodec.Decode(recs)
	if err != nil {
		return err
	}
	if files.out != "" {
		fmt.Fprintf(stdout, "results: %s\n", files.out)
	}
	e.report, e.plot = files.report, files.plot
	return e.Report(r, stdout)
}

// waitQuiet waits (at most $HEADSPACE_QUIET_WAIT, 10 s) for a quiet
// machine; a busy one is measured all the same, said on stderr, and the
// result file says so: the line returned.
func waitQuiet(ctx context.Context, stderr io.Writer) ([]resultfile.Config, error) {
	q, err := disturb.WaitQuiet(ctx, disturb.Quiet{Max: preflight.DefaultQuietWait()})
	if err != nil || !q.Busy {
		return nil, err
	}
	fmt.Fprintf(stderr, "headspace: the machine did not get quiet (%s): measuring anyway; the result file says so\n", q)
	return []resultfile.Config{{Key: resultfile.BusyKey, Value: q.String()}}, nil
}

// realPeersOutputs are the report and the plot's two files, for the
// output policy.
func realPeersOutputs(report, plot string) []cli.Output {
	return []cli.Output{{Path: report, Kind: peer.ReportKind}, cli.Figure(cli.Prefixed(plot, ".png")), cli.Figure(cli.Prefixed(plot, ".svg"))}
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
// RealPeerCodec, and RealPeer's Report, as a run's.
func rebuildRealPeers(from string, recs []*benchfmt.Result, report, plot string, stdout io.Writer) error {
	o, err := RealPeerCodec.Decode(recs)
	if err != nil {
		return cli.Usagef("--from: %v", err)
	}
	return RealPeer{report: report, plot: plot, from: from}.Report(o, stdout)
}
