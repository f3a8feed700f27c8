package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// peerRemoteCommand is what peer --remote's flags set beside the
// comparison, read by Prepare: the link's spec and how ours reads a
// shard; and where a command's run keeps its file's lines.
type peerRemoteCommand struct {
	link, shardReads string
	lines            *[]resultfile.Config
}

// Flags are peer --remote's, bound to r's fields, the registry's
// Default size their defaults.
func (r *PeerRemote) Flags(fs *flag.FlagSet) {
	s := &r.Job
	fs.Bool("remote", false, "compare on data in a bucket: start the pinned S3 server on 127.0.0.1, upload natural JPEGs once as an ImageFolder and as tar shards, and run our loader (--data s3://…) beside the boto3 peer (peers/torch/s3.py) through one --link (docs/remote.md)")
	fs.StringVar(&r.Python, "python", r.Python, "Python `interpreter` with torch, torchvision, PIL and boto3")
	fs.StringVar(&r.Script, "script", r.Script, "the boto3 peer's `script`")
	loader.WorkersListVar(fs, &r.Workers, "comma-separated worker `counts`")
	fs.Var(listFlag{"layouts", &r.Layouts, peer.RemoteLayouts}, "layouts", "with --remote: comma-separated `layouts`: imagefolder (one GET per image), shards (the peer streams each shard)")
	fs.Var(sizeFlag{"raw-size", &s.Width, &s.Height}, "raw-size", "the JPEGs' `size`, N or WxH")
	fs.IntVar(&s.Crop, "crop", s.Crop, "random crop `side`")
	fs.IntVar(&s.Batch, "batch", s.Batch, "samples per `batch`")
	fs.IntVar(&s.Batches, "batches", s.Batches, "`batches` per run, at least 2 (the first is the time to first batch)")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "dataset and transform `seed`")
	fs.IntVar(&r.Count, "count", r.Count, "`rounds`: runs of each side on each layout at every worker count")
	fs.StringVar(&s.Decoder, "decoder", s.Decoder, "our JPEG `decoder`, go or turbojpeg")
	fs.IntVar(&r.ShardSize, "shard-size", r.ShardSize, "with --remote: images per tar `shard`")
	loader.LinkFlag(fs, &r.cmd.link, "cross-region")
	bucket.ConcurrencyFlag(fs, &r.FetchConcurrency)
	loader.ShardReadsFlag(fs, &r.cmd.shardReads, ondisk.ShardReadsWhole)
	fs.StringVar(&r.ReportPath, "report", "", "Markdown report `file`")
}

// The bound of --remote's own flag.
var _ = cli.Declare(map[string]cli.Bound{"peer shard-size": {Lo: 1, Hi: 1 << 16}})

// Outputs is --report, its folder made.
func (r *PeerRemote) Outputs() ([]string, error) {
	if err := mkdirs(r.ReportPath); err != nil {
		return nil, err
	}
	return []string{"report"}, cli.CheckOutputs(cli.Output{Path: r.ReportPath, Kind: peer.ReportKind})
}

// Invoked is the command line, for the file and the report.
func (r *PeerRemote) Invoked(commandLine, _ string) { r.Command = commandLine }

// Prepare checks the comparison, reads the link, prints what is set up
// and each run on stderr, and has the file's lines, the run's own (the
// bucket's, the layouts' costs, the peer's versions), asked for once it
// has ended.
func (r *PeerRemote) Prepare(_ context.Context, _, stderr io.Writer) (Setup, error) {
	if err := r.check(); err != nil {
		return Setup{}, err
	}
	var err error
	if r.Link, err = link.Parse(r.cmd.link); err != nil {
		return Setup{}, cli.Usagef("--link: %s", strings.TrimPrefix(err.Error(), "link: "))
	}
	r.Job.Link = r.Link.Settings()
	if r.Job.ShardReads = ""; r.cmd.shardReads == ondisk.ShardReadsWhole {
		r.Job.ShardReads = ondisk.ShardReadsWhole
	}
	var lines []resultfile.Config
	r.Log, r.cmd.lines = stderr, &lines
	return Setup{Device: func() string { return "none" }, Lines: func() []resultfile.Config { return lines }}, nil
}

// check refuses a comparison r that cannot run: counts out of bounds, a
// decoder the peer does not match, a crop larger than the images.
func (r *PeerRemote) check() error {
	s := r.Job
	for _, n := range r.Workers {
		if err := cli.InRange("--workers", n, 1, loader.MaxWorkers); err != nil {
			return err
		}
	}
	if s.Decoder != ondisk.DecoderGo && s.Decoder != ondisk.DecoderTurbo {
		return cli.Usagef("--decoder %q: the peer decodes on the host: want go or turbojpeg", s.Decoder)
	}
	if err := cli.FirstErr(cli.InRange("--count", r.Count, 1, cli.MaxCount), cli.InRange("--batches", s.Batches, 2, cli.MaxBatches),
		cli.InRange("--batch", s.Batch, 1, 4096)); err != nil {
		return err
	}
	if err := loader.CheckShardReads(r.cmd.shardReads); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if s.Crop <= 0 || s.Crop > s.Width || s.Crop > s.Height {
		return cli.Usagef("--crop %d must be positive and fit the %dx%d images", s.Crop, s.Width, s.Height)
	}
	return nil
}

// logRemote is m's line on log.
func logRemote(log io.Writer, m peer.RemoteMeasurement) {
	fmt.Fprintf(log, "%s: TTFB %.3fs, %.1f samples/s, CPU %.2fs\n", m.BenchName(), m.TTFB.Seconds(), m.SamplesPerSec, m.CPU.Seconds())
}
