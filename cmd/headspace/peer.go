package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/harness/driver"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/workloads"
)

func init() {
	register(command{name: "peer", summary: "our loader against the document's PyTorch DataLoader pipeline, same settings, same run: samples/s, TTFB, ratios", runs: []workloads.Experiment{workloads.Peer{}, workloads.PeerLadder{}}, run: runPeer})
}

const peerUsage = `
Sets our goroutine loader at level none (naive and fast transforms) beside
the document's own PyTorch pipeline (--script: FakeDataset, PILToTensor,
RandomCrop, RandomMask, ConvertColor, Scale, DataLoader with num_workers
worker processes) at the same settings, in the same run, on the same cores.
For each worker count and each of --count rounds it measures every
implementation once, back to back, the order rotated between groups, each
as harness/loadbench measures a loader: time to first batch, samples/s
after the first batch, CPU seconds. It prints the medians with our
samples/s over torch's and whether each target (fast >= 10x torch, naive
>= 2x) is met, and writes a benchmark-format file (--out), a Markdown
report (--report) and plots (--plot). torch comes from Debian's
python3-torch: run "make peer" to install it and run this.

With --data DIR both sides read the dataset on disk that headspace dataset
write made: ours with Go's decoders, the peer (--data DIR) with PIL's.

With --ladder it compares training loops instead of loaders: the document's
whole script (peers/torch/ladder.py --device emulated) and our ladder, at
every caching level, on the same emulated device (--step, and the emulated
device's bandwidths, passed to the script as arguments), alternating level
by level, and prints each level's steps/s and its ratio to that
implementation's own device level. --step calibrated first measures this
machine against the document's host for the document's code (its
DataLoader's samples/s at raw and none against the document's 1.72 and
0.89 steps/s x 256) and scales the 290ms step by that ratio; the
calibration goes into --out. See docs/yardstick.md.

--from FILE rebuilds the table, --report and --plot from a results file
that peer --out wrote, measuring nothing: the machine, the command and the
settings come from the file's configuration lines, so the report is the
one the run wrote (notebooks/peer.md from results/peer-emulated.txt).` + peerRemoteUsage

// peerInstallHint is what to do when the peer cannot run.
const peerInstallHint = "run `make peer`, which installs python3-torch, python3-torchvision, python3-scipy and python3-pil (apt-get) and runs this command"

func runPeer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("peer", peerUsage, stdout)
	d := peer.DefaultSettings()
	python := fs.String("python", "/usr/bin/python3", "Python `interpreter` with torch, torchvision, scipy and PIL")
	script := fs.String("script", "peers/torch/dataloader.py", "the PyTorch peer `script` (with --ladder: peers/torch/ladder.py)")
	workersFlag := fs.String("workers", "1,2", "comma-separated worker `counts`")
	implsFlag := fs.String("impls", strings.Join(peer.Impls, ","), "comma-separated `implementations`: naive, fast (ours), torch (the peer)")
	batch := fs.Int("batch", d.Batch, "samples per `batch` (the document's 256)")
	batches := fs.Int("batches", d.Batches, "`batches` per run, at least 2 (the first is the time to first batch)")
	rawSize := fs.String("raw-size", fmt.Sprintf("%dx%d", d.Width, d.Height), "raw image `size`, N or WxH")
	crop := fs.Int("crop", d.Crop, "random crop `side`")
	seed := fs.Uint64("seed", d.Seed, "dataset and transform `seed`")
	count := fs.Int("count", 3, "`rounds`: runs of every implementation at every worker count")
	out := fs.String("out", "", "benchmark-format result `file`, every run (written atomically)")
	report := fs.String("report", "", "Markdown report `file`, e.g. notebooks/peer.md")
	plotPrefix := fs.String("plot", "", "write `prefix`-throughput and prefix-ttfb, .png and .svg")
	var df dataFlags
	df.registerData(fs, "both sides read the dataset `dir` (ours: --decoder's JPEG decoder; the peer: PIL's): one written by headspace dataset write, whose manifest sets the raw size and seed, or an ImageFolder or WebDataset shards, indexed into the cache and read by both sides by that index, resized to --raw-size (default: the most common size)")
	fs.StringVar(&df.Decoder, "decoder", ondisk.DecoderGo, "with --data: our JPEG `decoder`, go or turbojpeg (libjpeg-turbo, as PIL)")
	var lf peerLadderFlags
	lf.register(fs)
	var rf peerRemoteFlags
	rf.register(fs)
	from := fs.String("from", "", "rebuild the table, --report and --plot from the results `file` a peer --out wrote, measuring nothing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *from != "" {
		if isRemoteResults(*from) {
			return rebuildPeerRemote(fs, *from, *report, stdout)
		}
		return rebuildPeer(fs, *from, *report, *plotPrefix, stdout)
	}
	if rf.on {
		return runPeerRemote(ctx, fs, &rf, args, stdout, stderr)
	}
	if lf.on {
		return runPeerLadder(ctx, fs, &lf, args, stdout, stderr)
	}
	workers, err := parseInts("--workers", *workersFlag)
	if err != nil {
		return err
	}
	impls, err := parseList("--impls", *implsFlag, peer.Impls)
	if err != nil {
		return err
	}
	w, h, err := parseSize("--raw-size", *rawSize)
	if err != nil {
		return err
	}
	if *batches < 2 {
		return usagef("--batches %d: want at least 2 (the first is the time to first batch)", *batches)
	}
	if err := firstErr(inRange("--count", *count, 1, maxCount), inRange("--batches", *batches, 2, maxBatches)); err != nil {
		return err
	}
	for _, n := range workers {
		if err := inRange("--workers", n, 1, loader.MaxWorkers); err != nil {
			return err
		}
	}
	settings := peer.Settings{Width: w, Height: h, Crop: *crop, Batch: *batch, Batches: *batches, Seed: *seed}
	if bucket.IsURL(df.Dir) {
		return usagef("--data %s: the PyTorch peer reads a directory; for data in a bucket, --remote compares with the boto3 peer on a server it starts", df.Dir)
	}
	if df.Dir != "" {
		c := settings.Pipeline("fast", 1)
		if c, err = df.apply(ctx, c); err != nil {
			return err
		}
		settings.Width, settings.Height, settings.Seed, settings.Data = c.Dataset.Width, c.Dataset.Height, c.Dataset.Seed, df.Dir
		settings.Decoder = c.Decoder
		w, h = c.Dataset.Width, c.Dataset.Height
		if kind, _ := ondisk.DetectKind(df.Dir); kind != "headspace" {
			// The peer reads the same files by our index: save it to the
			// cache (never into the dataset) and pass its path.
			x, _, err := ondisk.LoadIndex(ctx, df.Dir)
			if err != nil {
				return err
			}
			if settings.Index, err = ondisk.SaveIndex(x); err != nil {
				return err
			}
		}
	}
	if err := settings.Validate(); err != nil {
		return usageError{err.Error()}
	}
	// Make the output folders now rather than fail after minutes of runs.
	for _, path := range []string{*out, *report, *plotPrefix} {
		if path != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
		}
	}
	var outs []output
	for _, name := range peer.PlotNames {
		outs = append(outs, figure(prefixed(*plotPrefix, "-"+name+".png")), figure(prefixed(*plotPrefix, "-"+name+".svg")))
	}
	resultsOut := driver.Output{Path: *out, Benchmarks: []string{"Peer"}}
	if err := firstErr(checkOutputs(append(outs, output{*report, peerReport})...), driver.Check(resultsOut)); err != nil {
		return err
	}
	p := peer.Peer{Python: *python, Script: *script}
	if slices.Contains(impls, peer.Torch) {
		if err := p.Check(ctx); err != nil {
			if errors.Is(err, peer.ErrNotInstalled) {
				return fmt.Errorf("%v: %s", err, peerInstallHint)
			}
			return err
		}
	}

	// Read before the runs: they may start git, whose CPU is no loader's.
	host := machine.Describe()
	exp := workloads.Peer{Config: peer.Config{Peer: p, Settings: settings, Workers: workers, Impls: impls, Count: *count}}
	var env []resultfile.Config
	if *out != "" {
		// Everything the report states goes into the file, so that
		// --from rebuilds it (peer.ReportKeys).
		env = append(append(machine.Environment("none"), exp.Settings()...),
			resultfile.Config{Key: "distro", Value: host.Distro}, resultfile.Config{Key: "command", Value: peerCommand(args)})
	}
	var run workloads.Env
	run.Details.Peer = func(m peer.Measurement) {
		fmt.Fprintf(stderr, "%s: TTFB %.3fs, %.1f samples/s, CPU %.2fs\n", m.BenchName(), m.TTFB.Seconds(), m.SamplesPerSec, m.CPU.Seconds())
	}
	var res peer.Result
	run.Details.PeerResult = func(r peer.Result) { res = r }
	if _, err := exp.Run(ctx, run); err != nil {
		return err
	}
	r := peer.Report{
		Machine:    host,
		PeerConfig: res.PeerConfig,
		Command:    peerCommand(args),
		Settings:   settings,
		Count:      *count,
		Rows:       peer.Summarize(res.Measurements),
	}
	if err := writePeerTable(stdout, r); err != nil {
		return err
	}
	if *out != "" {
		cfg, recs := peer.Records(env, res)
		if _, err := driver.Write(resultsOut, cfg, recs, false); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nresults: %s\n", *out)
	}
	return writePeerReport(stdout, r, *report, *plotPrefix)
}

// rebuildPeer is peer --from: the table, the report and the plots rebuilt
// from a results file (peer.ReadReport), measuring nothing. The flags that
// set a measurement are refused with it.
func rebuildPeer(fs *flag.FlagSet, from, report, plotPrefix string, stdout io.Writer) error {
	if err := fromOnly(fs, "report", "plot"); err != nil {
		return err
	}
	for _, path := range []string{report, plotPrefix} {
		if path != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
		}
	}
	var outs []output
	for _, name := range peer.PlotNames {
		outs = append(outs, figure(prefixed(plotPrefix, "-"+name+".png")), figure(prefixed(plotPrefix, "-"+name+".svg")))
	}
	if err := checkOutputs(append(outs, output{report, peerReport})...); err != nil {
		return err
	}
	r, err := peer.ReadReport(from)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return usagef("--from %s: no such file", from)
		}
		return usagef("--from: %v", err)
	}
	if err := writePeerTable(stdout, r); err != nil {
		return err
	}
	return writePeerReport(stdout, r, report, plotPrefix)
}

// writePeerTable prints the settings' line and the table of r's rows.
func writePeerTable(stdout io.Writer, r peer.Report) error {
	s := r.Settings
	fmt.Fprintf(stdout, "raw %dx%d, crop %d, batch %d, %d batches a run, %s; medians\n\n",
		s.Width, s.Height, s.Crop, s.Batch, s.Batches, plural(r.Count, "round"))
	return peer.WriteTable(stdout, r.Rows)
}

// writePeerReport draws r's plots (with a prefix) and writes its Markdown
// report (with a path), the report embedding the PNGs by their path
// relative to it.
func writePeerReport(stdout io.Writer, r peer.Report, report, plotPrefix string) error {
	var plots []string
	if plotPrefix != "" {
		s := r.Settings
		title := fmt.Sprintf("raw %dx%d, crop %d, batch %d", s.Width, s.Height, s.Crop, s.Batch)
		var err error
		if plots, err = peer.Plots(r.Rows, plotPrefix, title); err != nil {
			return err
		}
		for _, path := range plots {
			fmt.Fprintf(stdout, "plot: %s\n", path)
		}
	}
	if report == "" {
		return nil
	}
	for i, name := range peer.PlotNames {
		if len(plots) < 2*(i+1) {
			break
		}
		rel, err := filepath.Rel(filepath.Dir(report), plots[2*i]) // the PNG
		if err != nil {
			return err
		}
		alt := map[string]string{"throughput": "samples/s against workers", "ttfb": "time to first batch against workers"}[name]
		r.Figures = append(r.Figures, peer.Figure{Alt: alt, Path: filepath.ToSlash(rel)})
	}
	if err := atomicfile.WriteKind(report, peerReport, func(w io.Writer) error { return peer.WriteMarkdown(w, r) }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", report)
	return nil
}

// peerReport is what peer --report writes, for the output policy.
var peerReport = atomicfile.Report("peer report")

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
