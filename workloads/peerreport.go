package workloads

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// peerCommand is what peer's flags set beside the loaders' comparison:
// the dataset on disk, the files the report writes, the command line and
// --from's file; and, for a command's run, where its lines go and the
// peer's own lines once it has run.
type peerCommand struct {
	df                 loader.DataFlags
	out                func() string
	report, plot, from string
	command            string
	log                io.Writer
	peerConfig         *[]resultfile.Config
}

// Flags are peer's, the loaders' comparison's, bound to p's fields,
// the registry's Default size their defaults.
func (p *Peer) Flags(fs *flag.FlagSet) {
	c, s := &p.Config, &p.Config.Settings
	p.cmd.out = flagValue(fs, "out")
	fs.StringVar(&c.Peer.Python, "python", c.Peer.Python, "Python `interpreter` with torch, torchvision, scipy and PIL (with --peers: the peers env's python, by default the one make peers-env made)")
	fs.StringVar(&c.Peer.Script, "script", c.Peer.Script, "the PyTorch peer `script` (with --ladder: peers/torch/ladder.py)")
	loader.WorkersListVar(fs, &c.Workers, "comma-separated worker `counts`")
	c.Impls = peer.Impls
	fs.Var(listFlag{"impls", &c.Impls, peer.Impls}, "impls", "comma-separated `implementations`: naive, fast (ours), torch (the peer)")
	fs.IntVar(&s.Batch, "batch", s.Batch, "samples per `batch` (the document's 256)")
	fs.IntVar(&s.Batches, "batches", s.Batches, "`batches` per run, at least 2 (the first is the time to first batch)")
	fs.Var(sizeFlag{"raw-size", &s.Width, &s.Height}, "raw-size", "raw image `size`, N or WxH")
	fs.IntVar(&s.Crop, "crop", s.Crop, "random crop `side`")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "dataset and transform `seed`")
	fs.IntVar(&c.Count, "count", c.Count, "`rounds`: runs of every implementation at every worker count")
	fs.StringVar(&p.cmd.report, "report", "", "Markdown report `file`, e.g. notebooks/peer.md")
	fs.StringVar(&p.cmd.plot, "plot", "", "write `prefix`-throughput and prefix-ttfb, .png and .svg (with --peers: prefix.png and prefix.svg, samples/s by peer and workers)")
	p.cmd.df.RegisterData(fs, "both sides read the dataset `dir` (ours: --decoder's JPEG decoder; the peer: PIL's): one written by headspace dataset write, whose manifest sets the raw size and seed, or an ImageFolder or WebDataset shards, indexed into the cache and read by both sides by that index, resized to --raw-size (default: the most common size)")
	fs.StringVar(&p.cmd.df.Decoder, "decoder", ondisk.DecoderGo, "with --data: our JPEG `decoder`, go or turbojpeg (libjpeg-turbo, as PIL)")
}

// The bound of peer's --batches, every mode's (the first batch is the
// time to first batch).
var _ = cli.Declare(map[string]cli.Bound{"peer batches": {Lo: 2, Hi: cli.MaxBatches}})

// flagValue is flag name's value in fs as it is parsed ("" where fs has
// none): --out, which the command layer defines before Flags, for an
// experiment that makes its folder.
func flagValue(fs *flag.FlagSet, name string) func() string {
	f := fs.Lookup(name)
	return func() string {
		if f == nil {
			return ""
		}
		return f.Value.String()
	}
}

// Outputs are --report and --plot's four files, their folders and
// --out's made now rather than after minutes of runs.
func (p *Peer) Outputs() ([]string, error) {
	if err := mkdirs(p.cmd.out(), p.cmd.report, p.cmd.plot); err != nil {
		return nil, err
	}
	return []string{"report", "plot"}, cli.CheckOutputs(peerOutputs(p.cmd.report, p.cmd.plot)...)
}

// Invoked keeps the command line, for the file, and --from's file.
func (p *Peer) Invoked(commandLine, from string) { p.cmd.command, p.cmd.from = commandLine, from }

// Prepare checks the comparison, resolves --data (both sides read the
// dataset), checks that the peer runs, and has the file's lines, the
// peer's own after the rest, asked for once it has run.
func (p *Peer) Prepare(ctx context.Context, _, stderr io.Writer) (Setup, error) {
	if err := p.resolve(ctx); err != nil {
		return Setup{}, err
	}
	c := p.Config
	if slices.Contains(c.Impls, peer.Torch) {
		if err := c.Peer.Check(ctx); err != nil {
			return Setup{}, withHint(err, peerInstallHint)
		}
	}
	var peerConfig []resultfile.Config
	p.cmd.log, p.cmd.peerConfig = stderr, &peerConfig
	// Everything the report states goes into the file, so that --from
	// rebuilds it (peer.ReportKeys).
	lines := append(p.Settings(), resultfile.Config{Key: "distro", Value: machine.Describe().Distro}, resultfile.Config{Key: "command", Value: p.cmd.command})
	return Setup{Device: func() string { return "none" }, Lines: func() []resultfile.Config { return peer.FileConfig(lines, peerConfig) }}, nil
}

// resolve checks p's settings; with --data, both sides read the
// dataset, its sizes and seed the manifest's.
func (p *Peer) resolve(ctx context.Context) error {
	c, s := &p.Config, &p.Config.Settings
	for _, n := range c.Workers {
		if err := cli.InRange("--workers", n, 1, loader.MaxWorkers); err != nil {
			return err
		}
	}
	if err := cli.FirstErr(cli.InRange("--count", c.Count, 1, cli.MaxCount), cli.InRange("--batches", s.Batches, 2, cli.MaxBatches)); err != nil {
		return err
	}
	df := &p.cmd.df
	if bucket.IsURL(df.Dir) {
		return cli.Usagef("--data %s: the PyTorch peer reads a directory; for data in a bucket, --remote compares with the boto3 peer on a server it starts", df.Dir)
	}
	if df.Dir != "" {
		pc, err := df.Resolve(ctx, s.Pipeline("fast", 1))
		if err != nil {
			return err
		}
		s.Width, s.Height, s.Seed, s.Data, s.Decoder = pc.Dataset.Width, pc.Dataset.Height, pc.Dataset.Seed, df.Dir, pc.Decoder
		if s.Index, err = peer.IndexFor(ctx, df.Dir); err != nil {
			return err
		}
	}
	if err := s.Validate(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return nil
}

// Report prints the table of o, a run's or a file's, and writes the
// Markdown report and the plots where asked: the report of o's file
// lines (peer.ReportOf), a run's as --from's.
func (p *Peer) Report(o PeerOutcome, w io.Writer) error {
	r, err := peer.ReportOf(cmp.Or(p.cmd.from, "this run"), o.Config, o.Measurements)
	if err != nil {
		return cli.FromErr(p.cmd.from, err)
	}
	if err := r.WriteText(w); err != nil {
		return err
	}
	return r.WriteFiles(w, p.cmd.report, p.cmd.plot)
}

// peerOutputs are the files of a peer comparison's report and plots, for
// the output policy.
func peerOutputs(report, plotPrefix string) []cli.Output {
	var outs []cli.Output
	for _, name := range peer.PlotNames {
		outs = append(outs, cli.Figure(cli.Prefixed(plotPrefix, "-"+name+".png")), cli.Figure(cli.Prefixed(plotPrefix, "-"+name+".svg")))
	}
	return append(outs, cli.Output{Path: report, Kind: peer.ReportKind})
}

// logPeer is m's line on log.
func logPeer(log io.Writer, m peer.Measurement) {
	fmt.Fprintf(log, "%s: TTFB %.3fs, %.1f samples/s, CPU %.2fs\n", m.BenchName(), m.TTFB.Seconds(), m.SamplesPerSec, m.CPU.Seconds())
}

// peerInstallHint is what to do when the peer cannot run.
const peerInstallHint = "run `make peer`, which installs python3-torch, python3-torchvision, python3-scipy and python3-pil (apt-get) and runs this command"

// withHint is err with hint, what to do, after it where the peer is not
// installed (peer.ErrNotInstalled).
func withHint(err error, hint string) error {
	if errors.Is(err, peer.ErrNotInstalled) {
		return fmt.Errorf("%v: %s", err, hint)
	}
	return err
}

// mkdirs makes the folder of each path that is not "".
func mkdirs(paths ...string) error {
	for _, path := range paths {
		if path != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

// WithPeerHint is err with what to do where the PyTorch peer is not
// installed (peer.ErrNotInstalled): run make peer.
func WithPeerHint(err error) error { return withHint(err, peerInstallHint) }
