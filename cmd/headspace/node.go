package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/workloads"
)

func init() {
	register(command{name: "node", summary: "a node of N emulated accelerators: how many this host keeps at AU ≥ 0.90, and what runs out first", runs: []workloads.Experiment{workloads.Node{}}, run: runNode})
}

const nodeUsage = `
Runs a node of N emulated accelerators for each N of --accelerators: N rank
processes (this binary, re-executed), each with its own loader workers and
its own emulated device, stepping in lockstep through an all-reduce
barrier (a step ends for all when the slowest rank's ends), as PyTorch DDP
runs one process per GPU. Every N runs at level none (the pipeline) and
level host (a batch cached on the host: the bound).

Per N it records, in Go benchmark format: the node's samples/s and steps/s,
AU (MLPerf Storage's accelerator utilisation, compute time / total time;
unit au) per rank (rank=R) and for the node (au: the ranks' mean, au-min:
the smallest), the input wait, the CPU the ranks used (cpu-cores,
cpu-ns/sample), their run-queue delay (run-delay-%), the other processes'
cores and runnable threads, from a dataset on disk or in a bucket bytes/s
and requests/s, and with --link the share of its bandwidth they used
(link-use-%). Records carry accelerators=N.

It prints the table, then the answer: "node-max-accelerators: N", the
largest N at which every rank's AU is at least --min-au (0.90, MLPerf's),
and what runs out first: cores (CPU per sample × samples/s against the
cores), memory (the ranks' estimate, the one the bounds use), the --link's
bandwidth or request rate, with each resource's accelerator count.

An N whose ranks' memory estimate does not fit the available memory, or
whose threads (N × (workers + 1)) exceed 32 per core, is refused before
anything starts (exit 2). A rank that dies stops the others at once: exit
1, naming the rank, and that N is not recorded unless --partial (a record
marked partial 1). A rank that does not reach a step within
--barrier-timeout of the first is named by the timeout. SIGINT stops every
rank (exit 130); the file keeps every finished N.

--peer also runs the PyTorch DDP peer (peers/torch/node.py: ranks by
torch.multiprocessing.spawn, gloo on 127.0.0.1, an all_reduce before every
step, the document's pipeline through each rank's DataLoader, the same
emulated step) at every point, each of its runs after one of ours; its
records are BenchmarkNodeTorch/…, its table and answer printed after ours.

--out is resumed (points with --count runs are skipped), refused when it
holds another setup's results (--fresh replaces it); --shard i/n runs
every n-th accelerator count from the i-th, one node per Slurm array task,
which 'headspace merge' joins. --report and --plot write the Markdown
report and AU against N; --from FILE rebuilds them, the table and the
answer from a node result file, measuring nothing. docs/node.md.`

// rankOptions is how the command starts a rank: this binary's hidden
// rank subcommand; the tests make it the test binary (node.SelfRank).
var rankOptions = func() (procloader.Options, error) {
	exe, err := os.Executable()
	if err != nil {
		return procloader.Options{}, fmt.Errorf("finding this binary to start the ranks: %w", err)
	}
	return procloader.Options{Exe: exe}, nil
}

// maxThreadsPerCore bounds a node: N ranks × (workers + 1) threads beyond
// this many per core measures the scheduler, not the pipeline.
const maxThreadsPerCore = 32

// maxAccelerators bounds --accelerators.
const maxAccelerators = 1024

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := workloads.Sized[workloads.Node](workloads.Default)
	fs := newFlagSet("node", nodeUsage, stdout)
	var pf pipelineFlags
	pf.register(fs)
	accFlag := fs.String("accelerators", joinInts(def.Accelerators), "comma-separated accelerator `counts` N (rank processes)")
	levelsFlag := fs.String("levels", "none,host", "comma-separated `levels`: none (the pipeline), host (its bound)")
	workers := fs.Int("workers", def.Pipeline.Workers, "loader `workers` per rank")
	impl := fs.String("transforms", def.Pipeline.Impl, "transform `implementation`: naive or fast")
	steps := fs.Int("steps", def.Train.Steps, "measured training `steps` per run")
	warmup := fs.Int("warmup", def.Train.Warmup, "`steps` run before measuring")
	count := fs.Int("count", def.Count, "`runs` of each point")
	minAU := fs.Float64("min-au", node.DefaultMinAU, "an accelerator is kept busy at this `AU` or more (MLPerf: 0.90; 0.85 for RetinaNet)")
	timeout := fs.Duration("barrier-timeout", node.DefaultTimeout, "a rank that has not reached a step this `long` after the first is named and the run stopped")
	partial := fs.Bool("partial", false, "record an N whose run failed (a rank died or hung) as partial instead of stopping")
	out := fs.String("out", "", "benchmark-format result `file` (written atomically; resumed if present)")
	fresh := fs.Bool("fresh", false, "start --out afresh instead of resuming it")
	shard := fs.String("shard", "", "run only shard `i/n` of the accelerator counts (0-based)")
	report := fs.String("report", "", "write the report in Markdown to `file`")
	plotPath := fs.String("plot", "", "write AU against accelerators to `file` (.png or .svg)")
	from := fs.String("from", "", "rebuild the table, the answer, --report and --plot from a node result `file`, measuring nothing")
	peerFlag := fs.Bool("peer", false, "also run the PyTorch DDP peer (--peer-script: torch.multiprocessing.spawn, gloo on 127.0.0.1, an all_reduce per step, the document's pipeline per rank) at every point, alternating with ours")
	python := fs.String("python", workloads.PeerPython, "with --peer: Python `interpreter` with torch, torchvision, scipy and PIL")
	peerScript := fs.String("peer-script", node.PeerScript, "with --peer: the peer `script`")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	defer pf.data.close()
	if !(*minAU > 0 && *minAU <= 1) {
		return usagef("--min-au %v: want an AU in (0, 1]", *minAU)
	}
	if err := checkOutputs(output{*report, nodeReport}, figure(*plotPath)); err != nil {
		return err
	}
	if *from != "" {
		return nodeFrom(*from, *report, *plotPath, *minAU, stdout)
	}
	n := def
	var err error
	if n.Accelerators, err = parseInts("--accelerators", *accFlag); err != nil {
		return err
	}
	if n.Levels, err = level.ParseList(*levelsFlag); err != nil {
		return usageError{err.Error()}
	}
	for _, l := range n.Levels {
		if l != level.None && l != level.Host {
			return usagef("--levels: %s: a node runs none (the pipeline) and host (its bound)", l)
		}
	}
	if err := firstErr(inRange("--steps", *steps, 1, maxSteps), inRange("--warmup", *warmup, 0, maxSteps),
		inRange("--count", *count, 1, maxCount), inRange("--workers", *workers, 1, loader.MaxWorkers)); err != nil {
		return err
	}
	for _, a := range n.Accelerators {
		if err := inRange("--accelerators", a, 1, maxAccelerators); err != nil {
			return err
		}
	}
	if *impl != transforms.Names[0] && *impl != transforms.Names[1] {
		return usagef("--transforms %q: want %s", *impl, strings.Join(transforms.Names, " or "))
	}
	if pf.dev != "emulated" {
		return usagef("--device %s: a node's ranks run the emulated device (docs/node.md)", pf.dev)
	}
	if *fresh && *out == "" {
		return usagef("--fresh needs --out")
	}
	if *timeout <= 0 {
		return usagef("--barrier-timeout %v: want a positive duration", *timeout)
	}
	if *peerFlag {
		if pf.data.Dir != "" {
			return usagef("--peer runs the document's synthetic pipeline: not with --data")
		}
		if _, err := os.Stat(*peerScript); err != nil {
			return usagef("--peer-script %s: %v (run from the repository's root, or give its path)", *peerScript, err)
		}
		n.Peer = &node.Peer{Python: *python, Script: *peerScript}
	}
	n.Train.Steps, n.Train.Warmup, n.Count = *steps, *warmup, *count
	n.Timeout, n.Partial = *timeout, *partial
	if n.Pipeline, err = pf.config(ctx, *workers, *impl); err != nil {
		return err
	}
	if n.Pipeline.Placement != loader.Host {
		return usagef("a node's ranks take host batches (placement host)")
	}
	if _, err := pf.device(ctx); err != nil {
		return err // the bandwidths' checks
	}
	n.Device = device.EmulatedConfig{Step: pf.step, Pinned: true, PinnedBandwidth: pf.pinnedBW * 1e9, PageableBandwidth: pf.pageableBW * 1e9, ConvertBandwidth: pf.convertBW * 1e9}
	if n.Shard, n.Shards, err = parseShard(*shard); err != nil {
		return err
	}
	if err := n.Validate(); err != nil {
		return usageError{err.Error()}
	}
	// The largest node must fit before anything starts: its threads on
	// the cores, its ranks' memory estimate in the available memory.
	largest := 0
	for _, p := range n.Selected() {
		largest = max(largest, p.Accelerators)
	}
	if threads := largest * (n.Pipeline.Workers + 1); threads > maxThreadsPerCore*runtime.NumCPU() {
		return usagef("--accelerators %d: %d ranks × (%d workers + 1) = %d threads on %d cores, more than %d a core: the run would measure the scheduler, not the pipeline",
			largest, largest, n.Pipeline.Workers, threads, runtime.NumCPU(), maxThreadsPerCore)
	}
	if err := fitsPipeline(n.Pipeline, largest, int64(largest)*2*n.Pipeline.BatchBytes()); err != nil {
		return usagef("--accelerators %d: %v", largest, err)
	}
	if pf.data.link != nil {
		n.LinkBandwidth = float64(pf.data.link.Config().Bandwidth)
	}
	rank, err := rankOptions()
	if err != nil {
		return err
	}
	env := workloads.Env{Rank: rank}
	var file *driver.Run
	if *out != "" {
		cfg := driver.Settings("emulated", n.Settings())
		if *shard != "" {
			cfg = append(cfg, n.ShardSettings(n.Shards)...)
		}
		if file, err = driver.Open(ctx, driver.Output{Path: *out, Fresh: *fresh}, cfg); err != nil {
			return err
		}
		defer file.Close()
		env.Done = file.Done
	}
	var recs []*benchfmt.Result
	if file != nil && !*fresh {
		if prev, err := resultfile.Read(*out); err == nil {
			recs = prev // a resumed file's records first
		}
	}
	// A run's records (its ranks', then its node's) go into the file
	// together, in one atomic write, so that a file never holds a rank's
	// record without its node's: Done counts the node's, and merge the
	// points. The progress line counts runs.
	s := driver.Begin(nil, stderr, n.Todo(env), nil)
	defer s.Finish()
	var pending []*benchfmt.Result
	env.Start = s.Start
	env.Result = func(b *benchfmt.Result) error {
		pending = append(pending, b)
		if !isNodeRecord(b) {
			return nil
		}
		run := pending
		pending = nil
		recs = append(recs, run...)
		s.Tick()
		if file == nil {
			return nil
		}
		return file.Add(run...)
	}
	env.Details.Node = func(r workloads.NodeRun) {
		if r.Err != nil {
			fmt.Fprintf(stderr, "headspace node: %s kept as partial: %v\n", r.Point.Name(), r.Err)
		}
	}
	_, runErr := n.Run(ctx, env)
	if err := s.End(runErr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "node of emulated accelerators: step %v, batch %d per rank, raw %dx%d, crop %d, transforms %s, %s per rank, %s of %s\n",
		n.Device.Step, n.Pipeline.Batch, n.Pipeline.Dataset.Width, n.Pipeline.Dataset.Height, n.Pipeline.Transforms.Crop,
		n.Pipeline.Impl, plural(n.Pipeline.Workers, "worker"), plural(n.Count, "run"), plural(n.Train.Steps, "step"))
	p, perr := nodeProfile(recs, n.Pipeline, n.Device.Step, pf.data.link)
	if err := writeNode(stdout, recs, p, perr, *minAU, *report, *plotPath, "headspace "+commandLine("node", args)); err != nil {
		return err
	}
	if n.Peer != nil {
		writePeer(stdout, recs, *minAU)
	}
	if file != nil {
		fmt.Fprintf(stdout, "results: %s\n", *out)
	}
	return s.Err("the table shows the accelerator counts finished before it")
}

// isNodeRecord says whether b is a run's last record, its node's (ours
// or the peer's), not a rank's.
func isNodeRecord(b *benchfmt.Result) bool {
	name := strings.TrimPrefix(string(b.Name), "Benchmark")
	return (strings.HasPrefix(name, "Node/") || strings.HasPrefix(name, node.PeerPrefix+"/")) && !strings.Contains(name, "/rank=")
}

// nodeProfile is the model's profile from the smallest node of recs,
// with the memory estimate of cfg and the link's caps where one runs.
func nodeProfile(recs []*benchfmt.Result, cfg loader.Config, step time.Duration, lk *link.Link) (node.Profile, error) {
	ns := workloads.NodeAccelerators(recs)
	if len(ns) == 0 {
		return node.Profile{}, fmt.Errorf("no node measured")
	}
	p, err := node.ProfileOf(recs, ns[0], float64(runtime.NumCPU()), cfg.Batch, cfg.Workers, step)
	if err != nil {
		return p, err
	}
	// One rank's profile: the CPU per sample is per rank already.
	p.MemoryPerRank = cfg.MemoryEstimate() + 2*cfg.BatchBytes()
	if avail, ok := machine.Memory(); ok {
		p.Memory = avail
	}
	if lk != nil {
		lc := lk.Config()
		p.LinkBandwidth, p.LinkRequestRate = float64(lc.Bandwidth), lc.RequestRate
	}
	return p, nil
}

// writeNode prints the table, the answer and the bounds, and writes the
// report and the plot.
func writeNode(stdout io.Writer, recs []*benchfmt.Result, p node.Profile, perr error, minAU float64, report, plotPath, command string) error {
	rows := node.Rows(recs)
	if err := node.WriteTable(stdout, rows, nil); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s (every rank's AU ≥ %.2f)\n", node.AnswerLine(node.MaxAccelerators(rows, minAU)), minAU)
	var bounds []node.Bound
	if perr == nil {
		bounds = p.Bounds(minAU)
		fmt.Fprintf(stdout, "runs out first: %s at %.2f accelerators\n", bounds[0].Resource, bounds[0].Accelerators)
		if err := node.WriteBounds(stdout, bounds); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "what runs out first: not known (%v)\n", perr)
	}
	if report != "" {
		var b strings.Builder
		if err := node.WriteMarkdown(&b, command, rows, nil, node.PeerRows(recs), minAU, bounds); err != nil {
			return err
		}
		if err := atomicfile.WriteKindBytes(report, nodeReport, []byte(b.String())); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "report: %s\n", report)
	}
	if plotPath != "" {
		if err := node.SavePlot(plotPath, "AU against accelerators", rows, nil, node.PeerRows(recs), minAU); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s\n", plotPath)
	}
	return nil
}

// nodeFrom rebuilds the table, the answer, the report and the plot from
// a node result file.
func nodeFrom(path, report, plotPath string, minAU float64, stdout io.Writer) error {
	recs, err := resultfile.Read(path)
	if err != nil {
		return usagef("--from %s: %v", path, err)
	}
	if len(workloads.NodeAccelerators(recs)) == 0 {
		return usagef("--from %s: no node records (BenchmarkNode/…): not a headspace node result file", path)
	}
	p, perr := node.ProfileFrom(recs, workloads.NodeAccelerators(recs)[0])
	if err := writeNode(stdout, recs, p, perr, minAU, report, plotPath, "headspace node --from "+path+" (rebuilt from the result file)"); err != nil {
		return err
	}
	writePeer(stdout, recs, minAU)
	return nil
}

// writePeer prints the PyTorch DDP peer's table and answer, where recs
// hold its records.
func writePeer(stdout io.Writer, recs []*benchfmt.Result, minAU float64) {
	rows := node.PeerRows(recs)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(stdout, "\nthe PyTorch DDP peer (%s):\n", node.PeerScript)
	_ = node.WriteTable(stdout, rows, nil)
	fmt.Fprintf(stdout, "peer %s (every rank's AU ≥ %.2f)\n", node.AnswerLine(node.MaxAccelerators(rows, minAU)), minAU)
}

// nodeReport is the kind of node's --report.
var nodeReport = atomicfile.Report("node report")
