package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/command"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/procloader"
	reports "github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Command is headspace node.
func (Node) Command() cli.Command {
	return cli.Command{Name: "node", Summary: "a node of N emulated accelerators: how many this host keeps at AU ≥ 0.90, and what runs out first", Runs: []string{"Node"}, Run: runNode}
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
(link-use-%), and where a rank stalled for less than --barrier-timeout
while the others waited (a wait of 1 s or more, ten times their mean),
that wait (stall-ns): the table marks the point, and no bound is read
from it. Records carry accelerators=N.

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
--barrier-timeout of the first is named by the timeout; where no rank
reaches a step within it of the step before's release (of the ranks'
start for the first), every rank is named. SIGINT stops every
rank (exit 130); the file keeps every finished N.

--peer also runs the PyTorch DDP peer (peers/torch/node.py: ranks by
torch.multiprocessing.spawn, gloo on 127.0.0.1, an all_reduce before every
step, the document's pipeline through each rank's DataLoader, the same
emulated step) at every point, each of its runs after one of ours; its
records are BenchmarkNodeTorch/…, its table and answer printed after ours.

--out is resumed (points with --count runs are skipped; a point kept
partial is measured again), refused when it holds another setup's results
(--fresh replaces it) or while another run writes it; a run interrupted or
failed leaves it marked partial: true until a resumed run completes it; --shard i/n runs
every n-th accelerator count from the i-th, one node per Slurm array task,
which 'headspace merge' joins. --report and --plot write the Markdown
report and AU against N; --from FILE rebuilds them, the table and the
answer from a node result file, measuring nothing. docs/node.md.`

// RankOptions is how the command starts a rank: this binary's hidden
// rank subcommand; the tests make it the test binary (node.SelfRank).
var RankOptions = func() (procloader.Options, error) {
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

// nodeFlags are node's flags.
type nodeFlags struct {
	pf                      pipelineFlags
	accelerators, levels    string
	workers                 *loader.Workers
	impl                    string
	steps, warmup, count    int
	minAU                   float64
	timeout                 time.Duration
	partial                 bool
	out                     string
	fresh                   bool
	shard, report, plotPath string
	from                    string
	peer                    bool
	python, peerScript      string
}

// register defines f's flags on fs, with def's defaults.
func (f *nodeFlags) register(fs *flag.FlagSet, def Node) {
	f.pf.register(fs)
	fs.StringVar(&f.accelerators, "accelerators", joinInts(def.Accelerators), "comma-separated accelerator `counts` N (rank processes)")
	fs.StringVar(&f.levels, "levels", "none,host", "comma-separated `levels`: none (the pipeline), host (its bound)")
	f.workers = loader.WorkersFlag(fs, false, "loader `workers` per rank", def.Pipeline.Workers)
	fs.StringVar(&f.impl, "transforms", def.Pipeline.Impl, "transform `implementation`: naive or fast")
	fs.IntVar(&f.steps, "steps", def.Train.Steps, "measured training `steps` per run")
	fs.IntVar(&f.warmup, "warmup", def.Train.Warmup, "`steps` run before measuring")
	fs.IntVar(&f.count, "count", def.Count, "`runs` of each point")
	fs.Float64Var(&f.minAU, "min-au", node.DefaultMinAU, "an accelerator is kept busy at this `AU` or more (MLPerf: 0.90; 0.85 for RetinaNet)")
	fs.DurationVar(&f.timeout, "barrier-timeout", node.DefaultTimeout, "a rank that has not reached a step this `long` after the first (every rank, where none has this long after the step before) is named and the run stopped")
	fs.BoolVar(&f.partial, "partial", false, "record an N whose run failed (a rank died or hung) as partial instead of stopping")
	fs.StringVar(&f.out, "out", "", "benchmark-format result `file` (written atomically; resumed if present)")
	fs.BoolVar(&f.fresh, "fresh", false, "start --out afresh instead of resuming it")
	fs.StringVar(&f.shard, "shard", "", "run only shard `i/n` of the accelerator counts (0-based)")
	fs.StringVar(&f.report, "report", "", "write the report in Markdown to `file`")
	fs.StringVar(&f.plotPath, "plot", "", "write AU against accelerators to `file` (.png or .svg)")
	fs.StringVar(&f.from, "from", "", "rebuild the table, the answer, --report and --plot from a node result `file`, measuring nothing")
	fs.BoolVar(&f.peer, "peer", false, "also run the PyTorch DDP peer (--peer-script: torch.multiprocessing.spawn, gloo on 127.0.0.1, an all_reduce per step, the document's pipeline per rank) at every point, alternating with ours")
	fs.StringVar(&f.python, "python", PeerPython, "with --peer: Python `interpreter` with torch, torchvision, scipy and PIL")
	fs.StringVar(&f.peerScript, "peer-script", node.PeerScript, "with --peer: the peer `script`")
}

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := Sized[Node](Default)
	fs := cli.NewFlagSet("node", nodeUsage, stdout)
	var f nodeFlags
	f.register(fs, def)
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	defer f.pf.data.Close()
	if err := checkMinAU(f.minAU); err != nil {
		return err
	}
	// Every output is checked before the sweep: a --plot of another
	// kind used to fail once every count had been measured.
	if err := checkPlot(f.plotPath); err != nil {
		return err
	}
	if err := cli.CheckOutputs(cli.Output{Path: f.report, Kind: node.ReportKind}, cli.Figure(f.plotPath)); err != nil {
		return err
	}
	if f.from != "" {
		return nodeFrom(f.from, f.report, f.plotPath, f.minAU, stdout)
	}
	n, err := f.points(def)
	if err != nil {
		return err
	}
	if err := f.pipeline(ctx, &n); err != nil {
		return err
	}
	if err := fitsNode(n); err != nil {
		return err
	}
	if f.pf.data.StartedLink() != nil {
		n.LinkBandwidth = float64(f.pf.data.StartedLink().Config().Bandwidth)
	}
	return f.run(ctx, n, args, stdout, stderr)
}

// points is the sweep f sets, before its pipeline: the accelerator
// counts, the levels, the runs and the peer, checked.
func (f *nodeFlags) points(def Node) (Node, error) {
	n := def
	var err error
	if n.Accelerators, err = cli.ParseInts("--accelerators", f.accelerators); err != nil {
		return n, err
	}
	if n.Levels, err = level.ParseList(f.levels); err != nil {
		return n, cli.UsageError{Msg: err.Error()}
	}
	for _, l := range n.Levels {
		if l != level.None && l != level.Host {
			return n, cli.Usagef("--levels: %s: a node runs none (the pipeline) and host (its bound)", l)
		}
	}
	if err := cli.FirstErr(cli.InRange("--steps", f.steps, 1, cli.MaxSteps), cli.InRange("--warmup", f.warmup, 0, cli.MaxSteps),
		cli.InRange("--count", f.count, 1, cli.MaxCount), cli.InRange("--workers", f.workers.N(), 1, loader.MaxWorkers)); err != nil {
		return n, err
	}
	if err := checkNodeFlags(n.Accelerators, f.impl, f.pf.dev, f.pf.step); err != nil {
		return n, err
	}
	if f.fresh && f.out == "" {
		return n, cli.Usagef("--fresh needs --out")
	}
	if f.timeout <= 0 {
		return n, cli.Usagef("--barrier-timeout %v: want a positive duration", f.timeout)
	}
	if f.peer {
		if f.pf.data.Dir != "" {
			return n, cli.Usagef("--peer runs the document's synthetic pipeline: not with --data")
		}
		if _, err := os.Stat(f.peerScript); err != nil {
			return n, cli.Usagef("--peer-script %s: %v (run from the repository's root, or give its path)", f.peerScript, err)
		}
		n.Peer = &node.Peer{Python: f.python, Script: f.peerScript}
	}
	n.Train.Steps, n.Train.Warmup, n.Count = f.steps, f.warmup, f.count
	n.Timeout, n.Partial = f.timeout, f.partial
	return n, nil
}

// pipeline sets n's pipeline, device and shard from f, and checks n.
func (f *nodeFlags) pipeline(ctx context.Context, n *Node) error {
	var err error
	if n.Pipeline, err = f.pf.config(ctx, f.workers.N(), f.impl); err != nil {
		return err
	}
	if n.Pipeline.Placement != loader.Host {
		return cli.Usagef("a node's ranks take host batches (placement host)")
	}
	if _, err := f.pf.device(ctx); err != nil {
		return err // the bandwidths' checks
	}
	n.Device = f.pf.emulated()
	if n.Shard, n.Shards, err = cli.ParseShard(f.shard); err != nil {
		return err
	}
	if err := n.Validate(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return nil
}

// emulated is the emulated device the flags set, pinned, as a node's
// ranks run it.
func (pf *pipelineFlags) emulated() device.EmulatedConfig {
	return device.EmulatedConfig{Step: pf.step, Pinned: true, PinnedBandwidth: pf.pinnedBW * 1e9, PageableBandwidth: pf.pageableBW * 1e9, ConvertBandwidth: pf.convertBW * 1e9}
}

// checkNodeFlags refuses what no node runs (node and whatif
// --accelerators): an accelerator count out of range or given twice,
// transforms neither naive nor fast, a device other than the emulated
// one, an emulated step that is not positive (AU is compute time over
// total time).
func checkNodeFlags(accs []int, impl, dev string, step time.Duration) error {
	for i, a := range accs {
		if err := cli.InRange("--accelerators", a, 1, maxAccelerators); err != nil {
			return err
		}
		if slices.Contains(accs[:i], a) {
			return cli.Usagef("--accelerators %s: %d twice", joinInts(accs), a)
		}
	}
	if step <= 0 {
		return cli.Usagef("--step %v: a node's emulated device needs a positive step (AU is compute time over total time)", step)
	}
	if !slices.Contains(transforms.Names, impl) {
		return cli.Usagef("--transforms %q: want %s", impl, strings.Join(transforms.Names, " or "))
	}
	if dev != "emulated" {
		return cli.Usagef("--device %s: a node's ranks run the emulated device (docs/node.md)", dev)
	}
	return nil
}

// checkMinAU refuses a --min-au that is no AU (node and whatif
// --accelerators).
func checkMinAU(au float64) error {
	if !(au > 0 && au <= 1) {
		return cli.Usagef("--min-au %v: want an AU in (0, 1]", au)
	}
	return nil
}

// fitsNode refuses a sweep whose largest node does not fit before
// anything starts: its threads on the cores, its ranks' memory estimate
// in the available memory.
func fitsNode(n Node) error {
	largest := 0
	for _, p := range n.Selected() {
		largest = max(largest, p.Accelerators)
	}
	if threads := largest * (n.Pipeline.Workers + 1); threads > maxThreadsPerCore*runtime.NumCPU() {
		return cli.Usagef("--accelerators %d: %d ranks × (%d workers + 1) = %d threads on %d cores, more than %d a core: the run would measure the scheduler, not the pipeline",
			largest, largest, n.Pipeline.Workers, threads, runtime.NumCPU(), maxThreadsPerCore)
	}
	return fitsRanks(n.Pipeline, largest)
}

// fitsRanks refuses a node of n ranks of pipeline p whose memory
// estimate (each rank's pipeline and two batches) does not fit.
func fitsRanks(p loader.Config, n int) error {
	if err := command.FitsPipeline(p, n, int64(n)*2*p.BatchBytes()); err != nil {
		return cli.Usagef("--accelerators %d: %v", n, err)
	}
	return nil
}

// setLink sets p's link caps to the --link's, if one was started.
func (pf *pipelineFlags) setLink(p *node.Profile) {
	if lk := pf.data.StartedLink(); lk != nil {
		lc := lk.Config()
		p.LinkBandwidth, p.LinkRequestRate = float64(lc.Bandwidth), lc.RequestRate
	}
}

// run runs the sweep n into --out (resumed unless --fresh) and prints
// and writes its outcome.
func (f *nodeFlags) run(ctx context.Context, n Node, args []string, stdout, stderr io.Writer) error {
	rank, err := RankOptions()
	if err != nil {
		return err
	}
	settings := func() []resultfile.Config {
		cfg := driver.Settings("emulated", n.Settings())
		if f.shard != "" {
			cfg = append(cfg, n.ShardSettings(n.Shards)...)
		}
		return cfg
	}
	// A run's records (its ranks', then its node's) go into the file
	// together, in one atomic write (Hooks.Add), so that a file never
	// holds a rank's record without its node's: Done counts the node's,
	// and merge the points. The progress line counts runs.
	o, err := driver.Run(ctx, driver.Job{File: driver.Stream, Settings: settings, Progress: stderr,
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			env := Env{Rank: rank}.Hooked(h)
			// A point kept partial (--partial) is no finished run: a
			// resumed sweep measures it again.
			done := env.Done
			env.Done = func(name string) int { return done(name) - len(h.Values(name, node.UnitPartial)) }
			h.Total(n.Todo(env))
			var recs []*benchfmt.Result
			_, err := n.MeasureEach(ctx, env, func(r NodeRun) error {
				if r.Err != nil {
					fmt.Fprintf(stderr, "headspace node: %s kept as partial: %v\n", r.Point.Name(), r.Err)
				}
				run := r.records()
				recs = append(recs, run...)
				return h.Add(run...)
			})
			return recs, err
		}}, driver.Output{Path: f.out, Fresh: f.fresh})
	if err != nil && !o.Interrupted {
		return err // failed; an interrupted run prints what it finished
	}
	if err := f.write(n, o, args, stdout); err != nil {
		return err
	}
	return o.Err("the table shows the accelerator counts finished before it")
}

// write prints the sweep's setting and its outcome from run's records,
// and writes the report and the plot, unless the run was interrupted;
// it names the result file where one was written.
func (f *nodeFlags) write(n Node, run driver.Outcome, args []string, stdout io.Writer) error {
	recs := run.Records
	fmt.Fprintf(stdout, "node of emulated accelerators: step %v, batch %d per rank, raw %dx%d, crop %d, transforms %s, %s per rank, %s of %s\n",
		n.Device.Step, n.Pipeline.Batch, n.Pipeline.Dataset.Width, n.Pipeline.Dataset.Height, n.Pipeline.Transforms.Crop,
		n.Pipeline.Impl, reports.Plural(n.Pipeline.Workers, "worker"), reports.Plural(n.Count, "run"), reports.Plural(n.Train.Steps, "step"))
	decoded, err := NodeCodec.Decode(recs)
	if err != nil && len(recs) > 0 {
		return fmt.Errorf("node: reading the runs back: %w", err)
	}
	o := node.Sweep{Rows: decoded.Rows(false), Peer: decoded.Rows(true), MinAU: f.minAU, Command: "headspace " + cli.CommandLine("node", args),
		Interrupted: run.Interrupted}
	if o.Profile, o.ProfileErr = node.SmallestProfile(o.Rows, n.Pipeline, n.Device.Step); o.ProfileErr == nil {
		f.pf.setLink(&o.Profile)
	}
	if err := o.Write(stdout, f.report, f.plotPath); err != nil {
		return err
	}
	if n.Peer != nil {
		o.WritePeer(stdout)
	}
	if _, err := os.Stat(run.Path); run.Path != "" && err == nil && len(recs) > 0 {
		fmt.Fprintf(stdout, "results: %s%s\n", run.Path, map[bool]string{true: " (partial: interrupted)"}[run.Interrupted])
	}
	return nil
}

// nodeFrom rebuilds the table, the answer, the report and the plot from
// a node result file.
func nodeFrom(path, report, plotPath string, minAU float64, stdout io.Writer) error {
	o, err := ReadNodeSweep(path, minAU)
	if err != nil {
		return cli.FromErr(path, err)
	}
	o.Command = "headspace node --from " + path + " (rebuilt from the result file)"
	if err := o.Write(stdout, report, plotPath); err != nil {
		return err
	}
	o.WritePeer(stdout)
	return nil
}
