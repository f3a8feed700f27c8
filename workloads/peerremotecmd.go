package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// peerRemoteFlags are peer --remote's own flags.
type peerRemoteFlags struct {
	on          bool
	linkSpec    string
	layouts     string
	shardSize   int
	concurrency int
	shardReads  string
}

func (f *peerRemoteFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "remote", false, "compare on data in a bucket: start the pinned S3 server on 127.0.0.1, upload natural JPEGs once as an ImageFolder and as tar shards, and run our loader (--data s3://…) beside the boto3 peer (peers/torch/s3.py) through one --link (docs/remote.md)")
	loader.LinkFlag(fs, &f.linkSpec, "cross-region")
	fs.StringVar(&f.layouts, "layouts", strings.Join(peer.RemoteLayouts, ","), "with --remote: comma-separated `layouts`: imagefolder (one GET per image), shards (the peer streams each shard)")
	fs.IntVar(&f.shardSize, "shard-size", 8, "with --remote: images per tar `shard`")
	bucket.ConcurrencyFlag(fs, &f.concurrency)
	loader.ShardReadsFlag(fs, &f.shardReads, ondisk.ShardReadsWhole)
}

// peerRemoteHint is what to do when the boto3 peer cannot run.
const peerRemoteHint = "run `make peer`, which installs python3-torch, python3-torchvision, python3-scipy, python3-pil and python3-boto3 (apt-get)"

// peerRemoteRun is what peer --remote's flags ask for.
type peerRemoteRun struct {
	settings    peer.Settings
	workers     []int
	layouts     []string
	count       int
	lc          link.Config
	script      string // the peer's: peer.RemoteScript unless --script is given
	out, report string
}

// parsePeerRemote checks peer --remote's flags: fs's (their defaults
// with --remote where the flag was not given) and rf.
func parsePeerRemote(fs *flag.FlagSet, rf *peerRemoteFlags) (peerRemoteRun, error) {
	var r peerRemoteRun
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"data", "ladder", "impls", "plot"} {
		if set[name] {
			return r, cli.Usagef("--%s does not apply to --remote", name)
		}
	}
	get := func(name, def string) string {
		if set[name] {
			return fs.Lookup(name).Value.String()
		}
		return def
	}
	var err error
	if r.workers, err = cli.ParseInts("--workers", get("workers", "1,4,16")); err != nil {
		return r, err
	}
	for _, n := range r.workers {
		if err := cli.InRange("--workers", n, 1, loader.MaxWorkers); err != nil {
			return r, err
		}
	}
	if r.layouts, err = cli.ParseList("--layouts", rf.layouts, peer.RemoteLayouts); err != nil {
		return r, err
	}
	w, h, err := cli.ParseSize("--raw-size", get("raw-size", "256"))
	if err != nil {
		return r, err
	}
	num := func(name, def string) int { n, _ := strconv.Atoi(get(name, def)); return n }
	seed, _ := strconv.ParseUint(get("seed", "1"), 10, 64)
	s := peer.Settings{Width: w, Height: h, Crop: num("crop", "128"), Batch: num("batch", "32"), Batches: num("batches", "6"), Seed: seed, Decoder: get("decoder", ondisk.DecoderGo)}
	if s.Decoder != ondisk.DecoderGo && s.Decoder != ondisk.DecoderTurbo {
		return r, cli.Usagef("--decoder %q: the peer decodes on the host: want go or turbojpeg", s.Decoder)
	}
	r.count = num("count", "1")
	if err := cli.FirstErr(cli.InRange("--count", r.count, 1, cli.MaxCount), cli.InRange("--batches", s.Batches, 2, cli.MaxBatches),
		cli.InRange("--batch", s.Batch, 1, 4096), cli.InRange("--shard-size", rf.shardSize, 1, 1<<16)); err != nil {
		return r, err
	}
	if err := loader.CheckShardReads(rf.shardReads); err != nil {
		return r, cli.UsageError{Msg: err.Error()}
	}
	if s.Crop <= 0 || s.Crop > w || s.Crop > h {
		return r, cli.Usagef("--crop %d must be positive and fit the %dx%d images", s.Crop, w, h)
	}
	if rf.shardReads == ondisk.ShardReadsWhole {
		s.ShardReads = ondisk.ShardReadsWhole
	}
	if r.lc, err = link.Parse(rf.linkSpec); err != nil {
		return r, cli.Usagef("--link: %s", strings.TrimPrefix(err.Error(), "link: "))
	}
	s.Link = r.lc.Settings()
	r.settings, r.script = s, get("script", peer.RemoteScript)
	r.out, r.report = fs.Lookup("out").Value.String(), fs.Lookup("report").Value.String()
	return r, mkdirs(r.out, r.report)
}

// experiment is the PeerRemote experiment r asks for: the peer's Python
// and script, our fetch concurrency, the command line and the report's
// file.
func (r peerRemoteRun) experiment(fs *flag.FlagSet, rf *peerRemoteFlags, args []string, log io.Writer) PeerRemote {
	return PeerRemote{Python: fs.Lookup("python").Value.String(), Script: r.script, Job: r.settings, Layouts: r.layouts, Workers: r.workers,
		Count: r.count, ShardSize: rf.shardSize, Link: r.lc, FetchConcurrency: rf.concurrency, Command: peerCommand(args), Log: log, ReportPath: r.report}
}

// runPeerRemote is peer --remote: the PeerRemote experiment, each run's
// line printed as it ends, its file (--out) and its report.
func runPeerRemote(ctx context.Context, fs *flag.FlagSet, rf *peerRemoteFlags, args []string, stdout, stderr io.Writer) error {
	r, err := parsePeerRemote(fs, rf)
	if err != nil {
		return err
	}
	if err := cli.CheckOutputs(cli.Output{Path: r.report, Kind: peer.ReportKind}); err != nil {
		return err
	}
	e := r.experiment(fs, rf, args, stderr)
	var o PeerRemoteOutcome
	_, err = driver.Run(ctx, driver.Job{Settings: func() []resultfile.Config { return o.Config }, Measure: func(ctx context.Context, _ *driver.Hooks) ([]*benchfmt.Result, error) {
		var err error
		o, err = e.MeasureEach(ctx, Env{}, func(m peer.RemoteMeasurement) {
			fmt.Fprintf(stderr, "%s: TTFB %.3fs, %.1f samples/s, CPU %.2fs\n", m.BenchName(), m.TTFB.Seconds(), m.SamplesPerSec, m.CPU.Seconds())
		})
		if err != nil || r.out == "" {
			return nil, err
		}
		return PeerRemoteCodec.Encode(o), nil
	}}, driver.Output{Path: r.out, Benchmarks: []string{"PeerRemote"}})
	if err != nil {
		return err
	}
	if r.out != "" {
		fmt.Fprintf(stdout, "results: %s\n", r.out)
	}
	return e.Report(o, stdout)
}

// rebuildPeerRemote is --remote's --from: its records decoded through
// PeerRemoteCodec, its report written as the run wrote it
// (PeerRemote.Report).
func rebuildPeerRemote(from string, recs []*benchfmt.Result, report, _ string, stdout io.Writer) error {
	o, err := PeerRemoteCodec.Decode(recs)
	if err == nil && o.Report.Command == "" {
		err = fmt.Errorf("%s: no configuration lines (headspace peer --remote --out records them)", from)
	}
	if err != nil {
		return cli.Usagef("--from: %v", err)
	}
	return PeerRemote{ReportPath: report}.Report(o, stdout)
}
