package workloads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// PeerComparisons is what headspace peer runs of the loaders'
// comparison (Peer) and --ladder (PeerLadder),
// still made here with one flag set (PeerFlags): the command layer's
// peer (package command) picks it for those modes and their --from.
func PeerComparisons() cli.Command {
	return cli.Command{Name: "peer", Runs: []string{"Peer", "PeerLadder"}, Run: runPeer}
}

// PeerFlags defines the flags of PeerComparisons on fs.
func PeerFlags(fs *flag.FlagSet) {
	var f peerFlags
	f.register(fs)
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

// peerFlags are peer's flags: the loaders' comparison's, and those of
// --ladder and --remote.
type peerFlags struct {
	python, script, impls   string
	workers                 *loader.Workers
	batch, batches          int
	rawSize                 string
	crop                    int
	seed                    uint64
	count                   int
	out, report, plotPrefix string
	df                      loader.DataFlags
	lf                      peerLadderFlags
	from                    string
}

// register defines f's flags on fs.
func (f *peerFlags) register(fs *flag.FlagSet) {
	d := peer.DefaultSettings()
	fs.StringVar(&f.python, "python", "/usr/bin/python3", "Python `interpreter` with torch, torchvision, scipy and PIL (with --peers: the peers env's python, by default the one make peers-env made)")
	fs.StringVar(&f.script, "script", "peers/torch/dataloader.py", "the PyTorch peer `script` (with --ladder: peers/torch/ladder.py)")
	f.workers = loader.WorkersFlag(fs, true, "comma-separated worker `counts`", 1, 2)
	fs.StringVar(&f.impls, "impls", strings.Join(peer.Impls, ","), "comma-separated `implementations`: naive, fast (ours), torch (the peer)")
	fs.IntVar(&f.batch, "batch", d.Batch, "samples per `batch` (the document's 256)")
	fs.IntVar(&f.batches, "batches", d.Batches, "`batches` per run, at least 2 (the first is the time to first batch)")
	fs.StringVar(&f.rawSize, "raw-size", fmt.Sprintf("%dx%d", d.Width, d.Height), "raw image `size`, N or WxH")
	fs.IntVar(&f.crop, "crop", d.Crop, "random crop `side`")
	fs.Uint64Var(&f.seed, "seed", d.Seed, "dataset and transform `seed`")
	fs.IntVar(&f.count, "count", 3, "`rounds`: runs of every implementation at every worker count")
	fs.StringVar(&f.out, "out", "", "benchmark-format result `file`, every run (written atomically)")
	fs.StringVar(&f.report, "report", "", "Markdown report `file`, e.g. notebooks/peer.md")
	fs.StringVar(&f.plotPrefix, "plot", "", "write `prefix`-throughput and prefix-ttfb, .png and .svg (with --peers: prefix.png and prefix.svg, samples/s by peer and workers)")
	f.df.RegisterData(fs, "both sides read the dataset `dir` (ours: --decoder's JPEG decoder; the peer: PIL's): one written by headspace dataset write, whose manifest sets the raw size and seed, or an ImageFolder or WebDataset shards, indexed into the cache and read by both sides by that index, resized to --raw-size (default: the most common size)")
	fs.StringVar(&f.df.Decoder, "decoder", ondisk.DecoderGo, "with --data: our JPEG `decoder`, go or turbojpeg (libjpeg-turbo, as PIL)")
	f.lf.register(fs)
	fs.StringVar(&f.from, "from", "", "rebuild the table, --report and --plot from the results `file` a peer --out wrote, measuring nothing")
}

func runPeer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("peer", "", stdout)
	var f peerFlags
	f.register(fs)
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if f.from != "" {
		return peerFrom(fs, f.from, f.report, f.plotPrefix, stdout)
	}
	if f.lf.on {
		return runPeerLadder(ctx, fs, &f.lf, args, stdout, stderr)
	}
	c, err := f.config(ctx)
	if err != nil {
		return err
	}
	// Make the output folders now rather than fail after minutes of runs.
	if err := mkdirs(f.out, f.report, f.plotPrefix); err != nil {
		return err
	}
	if err := cli.CheckOutputs(peerOutputs(f.report, f.plotPrefix)...); err != nil {
		return err
	}
	return f.run(ctx, c, args, stdout, stderr)
}

// config is the loaders' comparison f sets, checked; with --data, both
// sides read the dataset.
func (f *peerFlags) config(ctx context.Context) (peer.Config, error) {
	var c peer.Config
	workers, err := f.workers.Counts()
	if err != nil {
		return c, err
	}
	impls, err := cli.ParseList("--impls", f.impls, peer.Impls)
	if err != nil {
		return c, err
	}
	w, h, err := cli.ParseSize("--raw-size", f.rawSize)
	if err != nil {
		return c, err
	}
	if f.batches < 2 {
		return c, cli.Usagef("--batches %d: want at least 2 (the first is the time to first batch)", f.batches)
	}
	if err := cli.FirstErr(cli.InRange("--count", f.count, 1, cli.MaxCount), cli.InRange("--batches", f.batches, 2, cli.MaxBatches)); err != nil {
		return c, err
	}
	settings := peer.Settings{Width: w, Height: h, Crop: f.crop, Batch: f.batch, Batches: f.batches, Seed: f.seed}
	if bucket.IsURL(f.df.Dir) {
		return c, cli.Usagef("--data %s: the PyTorch peer reads a directory; for data in a bucket, --remote compares with the boto3 peer on a server it starts", f.df.Dir)
	}
	if f.df.Dir != "" {
		pc := settings.Pipeline("fast", 1)
		if pc, err = f.df.Resolve(ctx, pc); err != nil {
			return c, err
		}
		settings.Width, settings.Height, settings.Seed, settings.Data = pc.Dataset.Width, pc.Dataset.Height, pc.Dataset.Seed, f.df.Dir
		settings.Decoder = pc.Decoder
		if settings.Index, err = peer.IndexFor(ctx, f.df.Dir); err != nil {
			return c, err
		}
	}
	if err := settings.Validate(); err != nil {
		return c, cli.UsageError{Msg: err.Error()}
	}
	return peer.Config{Peer: peer.Peer{Python: f.python, Script: f.script}, Settings: settings, Workers: workers, Impls: impls, Count: f.count}, nil
}

// run runs the comparison c and prints and writes its outcome.
func (f *peerFlags) run(ctx context.Context, c peer.Config, args []string, stdout, stderr io.Writer) error {
	exp := Peer{Config: c}
	var env []resultfile.Config
	var r peer.Report
	settings := func() []resultfile.Config { return peer.FileConfig(env, r.PeerConfig) }
	_, err := driver.Run(ctx, driver.Job{Settings: settings, Measure: func(ctx context.Context, _ *driver.Hooks) ([]*benchfmt.Result, error) {
		if slices.Contains(c.Impls, peer.Torch) {
			if err := c.Peer.Check(ctx); err != nil {
				return nil, withHint(err, peerInstallHint)
			}
		}
		// Read before the runs: they may start git, whose CPU is no loader's.
		host := machine.Describe()
		if f.out != "" {
			// Everything the report states goes into the file, so that
			// --from rebuilds it (peer.ReportKeys).
			env = append(append(machine.Environment("none"), exp.Settings()...),
				resultfile.Config{Key: "distro", Value: host.Distro}, resultfile.Config{Key: "command", Value: peerCommand(args)})
		}
		res, err := exp.MeasureEach(ctx, Env{}, func(m peer.Measurement) {
			fmt.Fprintf(stderr, "%s: TTFB %.3fs, %.1f samples/s, CPU %.2fs\n", m.BenchName(), m.TTFB.Seconds(), m.SamplesPerSec, m.CPU.Seconds())
		})
		if err != nil {
			return nil, err
		}
		r = peer.Report{
			Machine:    host,
			PeerConfig: res.PeerConfig,
			Command:    peerCommand(args),
			Settings:   c.Settings,
			Count:      f.count,
			Rows:       peer.Summarize(res.Measurements),
		}
		return exp.Codec().Encode(res), r.WriteText(stdout)
	}}, driver.Output{Path: f.out, Benchmarks: []string{"Peer"}})
	if err != nil {
		return err
	}
	if f.out != "" {
		fmt.Fprintf(stdout, "\nresults: %s\n", f.out)
	}
	return r.WriteFiles(stdout, f.report, f.plotPrefix)
}

// ranRecords are a run's records as its result file holds them, for
// its report to be --from's: read back from the file the run wrote, or,
// written nowhere (or in place), given settings as the file's lines.
func ranRecords(o driver.Outcome, settings []resultfile.Config) ([]*benchfmt.Result, error) {
	if o.Path != "" && !atomicfile.InPlace(o.Path) {
		return resultfile.Read(o.Path)
	}
	return resultfile.WithSettings(o.Records, settings), nil
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

// peerOutputs are the files of a peer comparison's report and plots, for
// the output policy.
func peerOutputs(report, plotPrefix string) []cli.Output {
	var outs []cli.Output
	for _, name := range peer.PlotNames {
		outs = append(outs, cli.Figure(cli.Prefixed(plotPrefix, "-"+name+".png")), cli.Figure(cli.Prefixed(plotPrefix, "-"+name+".svg")))
	}
	return append(outs, cli.Output{Path: report, Kind: peer.ReportKind})
}

// peerFromKind is one kind of results file peer --from rebuilds: the
// experiment whose codec's Keys own its records' benchmarks, the flags
// that apply to its rebuild, the files they name, and the rebuild, its
// records decoded through that codec and reported as its run reports
// them.
type peerFromKind struct {
	keys    map[string][]string
	flags   []string
	outputs func(report, plot string) []cli.Output
	rebuild func(from string, recs []*benchfmt.Result, report, plot string, stdout io.Writer) error
}

// peerFromKinds are the peer's experiments with a --from: the loaders'
// comparison (Peer) and --remote.
var peerFromKinds = []peerFromKind{
	{PeerCodec.Keys, []string{"report", "plot"}, peerOutputs, rebuildPeer},
}

// peerFrom is peer --from: the results file's first record's benchmark
// names the experiment whose codec owns it (peerFromKinds), which rebuilds
// the report, measuring nothing. The flags that set a measurement are
// refused with it.
func peerFrom(fs *flag.FlagSet, from, report, plot string, stdout io.Writer) error {
	recs, err := resultfile.Read(from)
	if err != nil {
		return cli.FromErr(from, err)
	}
	var kind *peerFromKind
	if len(recs) > 0 {
		base, _ := recs[0].Name.Parts()
		for i := range peerFromKinds {
			if _, ok := peerFromKinds[i].keys[string(base)]; ok {
				kind = &peerFromKinds[i]
				break
			}
		}
	}
	if kind == nil {
		kind = &peerFromKinds[0] // the loaders' comparison's codec says what is wrong
	}
	if err := cli.FromOnly(fs, kind.flags...); err != nil {
		return err
	}
	if err := mkdirs(report, plot); err != nil {
		return err
	}
	if err := cli.CheckOutputs(kind.outputs(report, plot)...); err != nil {
		return err
	}
	return kind.rebuild(from, recs, report, plot, stdout)
}

// reportOutput is the report file of a rebuild that draws no plot.
func reportOutput(report, _ string) []cli.Output {
	return []cli.Output{{Path: report, Kind: peer.ReportKind}}
}

// rebuildPeer is the loaders' comparison's --from: the table, the report
// and the plots from its records (PeerCodec) and lines (peer.ReportOf).
func rebuildPeer(from string, recs []*benchfmt.Result, report, plot string, stdout io.Writer) error {
	o, err := PeerCodec.Decode(recs)
	if err != nil {
		return cli.FromErr(from, inFile(from, err))
	}
	var settings []resultfile.Config
	if len(recs) > 0 {
		settings = fileSettings(recs[0])
	}
	r, err := peer.ReportOf(from, settings, o.Measurements)
	if err != nil {
		return cli.FromErr(from, err)
	}
	if err := r.WriteText(stdout); err != nil {
		return err
	}
	return r.WriteFiles(stdout, report, plot)
}

// peerCommand is how this command was invoked, quoted for a shell.
func peerCommand(args []string) string {
	name := "headspace"
	if a0 := os.Args[0]; filepath.Base(a0) == "headspace" {
		name = a0
	}
	parts := []string{name, "peer"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
