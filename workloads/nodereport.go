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

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/preflight"
	"github.com/headspace-bench/headspace/harness/procloader"
	reports "github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/internal/cli"
)

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
	if err := preflight.FitsPipeline(p, n, int64(n)*2*p.BatchBytes()); err != nil {
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

// nodeCommand is what headspace node's flags set beside the sweep: the
// pipeline's flags, the shard, the peer, the answer's AU and the files
// its report writes, and how the command was made.
type nodeCommand struct {
	pf                 pipelineFlags
	shard              string
	peer               bool
	python, peerScript string
	minAU              float64
	report, plot       string
	// ran says the report is of a run (Prepare), not of --from: its
	// profile is this machine's, with the --link's caps.
	ran, interrupted bool
	commandLine      string
	stderr           io.Writer
}

// The bounds of node's own flags.
var _ = cli.Declare(map[string]cli.Bound{
	"node min-au":          {Lo: 0, Hi: 1},
	"node barrier-timeout": {Lo: 0, Hi: float64(24 * time.Hour)},
})

// Flags are node's: the sweep's fields, its pipeline from the registry's
// Default size (DefaultNode: 256² raw images, batches of 32).
func (n *Node) Flags(fs *flag.FlagSet) {
	c := &nodeCommand{minAU: node.DefaultMinAU, python: PeerPython, peerScript: node.PeerScript}
	n.cmd = c
	c.pf.registerFrom(fs, n.Pipeline)
	fs.Var(nodeIntsFlag{&n.Accelerators}, "accelerators", "comma-separated accelerator `counts` N (rank processes)")
	fs.Var(nodeLevelsFlag{&n.Levels}, "levels", "comma-separated `levels`: none (the pipeline), host (its bound)")
	loader.WorkersVar(fs, &n.Pipeline.Workers, "loader `workers` per rank")
	fs.StringVar(&n.Pipeline.Impl, "transforms", n.Pipeline.Impl, "transform `implementation`: naive or fast")
	fs.IntVar(&n.Train.Steps, "steps", n.Train.Steps, "measured training `steps` per run")
	fs.IntVar(&n.Train.Warmup, "warmup", n.Train.Warmup, "`steps` run before measuring")
	fs.IntVar(&n.Count, "count", n.Count, "`runs` of each point")
	fs.Float64Var(&c.minAU, "min-au", c.minAU, "an accelerator is kept busy at this `AU` or more (MLPerf: 0.90; 0.85 for RetinaNet)")
	fs.DurationVar(&n.Timeout, "barrier-timeout", n.Timeout, "a rank that has not reached a step this `long` after the first (every rank, where none has this long after the step before) is named and the run stopped")
	fs.BoolVar(&n.Partial, "partial", n.Partial, "record an N whose run failed (a rank died or hung) as partial instead of stopping")
	fs.StringVar(&c.shard, "shard", "", "run only shard `i/n` of the accelerator counts (0-based)")
	fs.StringVar(&c.report, "report", "", "write the report in Markdown to `file`")
	fs.StringVar(&c.plot, "plot", "", "write AU against accelerators to `file` (.png or .svg)")
	fs.BoolVar(&c.peer, "peer", false, "also run the PyTorch DDP peer (--peer-script: torch.multiprocessing.spawn, gloo on 127.0.0.1, an all_reduce per step, the document's pipeline per rank) at every point, alternating with ours")
	fs.StringVar(&c.python, "python", c.python, "with --peer: Python `interpreter` with torch, torchvision, scipy and PIL")
	fs.StringVar(&c.peerScript, "peer-script", c.peerScript, "with --peer: the peer `script`")
}

// File is driver.Stream: each run's records on disk as it finishes,
// resumed unless --fresh.
func (*Node) File() driver.Mode { return driver.Stream }

// Outputs are --report and --plot; --min-au is the answer's, --from's
// too. Every output is checked before the sweep: a --plot of another
// kind used to fail once every count had been measured.
func (n *Node) Outputs() ([]string, error) {
	c := n.cmd
	if err := checkMinAU(c.minAU); err != nil {
		return nil, err
	}
	if err := checkPlot(c.plot); err != nil {
		return nil, err
	}
	return []string{"report", "plot", "min-au"}, cli.CheckOutputs(cli.Output{Path: c.report, Kind: node.ReportKind}, cli.Figure(c.plot))
}

// Invoked keeps the command line the report names.
func (n *Node) Invoked(commandLine, from string) {
	n.cmd.commandLine = commandLine
	if from != "" {
		n.cmd.commandLine = "headspace node --from " + from + " (rebuilt from the result file)"
	}
}

// Interrupt makes the report of an interrupted sweep the table of the
// counts it finished, with no answer.
func (n *Node) Interrupt() string {
	n.cmd.interrupted = true
	return "the table shows the accelerator counts finished before it"
}

// Prepare checks the sweep the flags set, builds its pipeline and
// refuses a node that does not fit before anything starts.
func (n *Node) Prepare(ctx context.Context, _, stderr io.Writer) (Setup, error) {
	c := n.cmd
	c.ran, c.stderr = true, stderr
	if err := n.check(ctx); err != nil {
		c.pf.data.Close()
		return Setup{}, err
	}
	if lk := c.pf.data.StartedLink(); lk != nil {
		n.LinkBandwidth = float64(lk.Config().Bandwidth)
	}
	rank, err := RankOptions()
	if err != nil {
		c.pf.data.Close()
		return Setup{}, err
	}
	settings := n.Settings()
	if c.shard != "" {
		settings = append(settings, n.ShardSettings(n.Shards)...)
	}
	units := len(n.Selected()) * n.Count
	if n.Peer != nil {
		units *= 2
	}
	return Setup{Env: Env{Rank: rank}, Settings: settings, Units: units, Close: c.pf.data.Close}, nil
}

// check checks the flags and sets n's pipeline, device, shard and peer.
func (n *Node) check(ctx context.Context) error {
	c := n.cmd
	for _, l := range n.Levels {
		if l != level.None && l != level.Host {
			return cli.Usagef("--levels: %s: a node runs none (the pipeline) and host (its bound)", l)
		}
	}
	if err := cli.FirstErr(cli.InRange("--steps", n.Train.Steps, 1, cli.MaxSteps), cli.InRange("--warmup", n.Train.Warmup, 0, cli.MaxSteps),
		cli.InRange("--count", n.Count, 1, cli.MaxCount), cli.InRange("--workers", n.Pipeline.Workers, 1, loader.MaxWorkers)); err != nil {
		return err
	}
	if err := checkNodeFlags(n.Accelerators, n.Pipeline.Impl, c.pf.dev, c.pf.step); err != nil {
		return err
	}
	if n.Timeout <= 0 {
		return cli.Usagef("--barrier-timeout %v: want a positive duration", n.Timeout)
	}
	if c.peer {
		if c.pf.data.Dir != "" {
			return cli.Usagef("--peer runs the document's synthetic pipeline: not with --data")
		}
		if _, err := os.Stat(c.peerScript); err != nil {
			return cli.Usagef("--peer-script %s: %v (run from the repository's root, or give its path)", c.peerScript, err)
		}
		n.Peer = &node.Peer{Python: c.python, Script: c.peerScript}
	}
	var err error
	if n.Pipeline, err = c.pf.config(ctx, n.Pipeline.Workers, n.Pipeline.Impl); err != nil {
		return err
	}
	if n.Pipeline.Placement != loader.Host {
		return cli.Usagef("a node's ranks take host batches (placement host)")
	}
	if _, err := c.pf.device(ctx); err != nil {
		return err // the bandwidths' checks
	}
	n.Device = c.pf.emulated()
	if n.Shard, n.Shards, err = cli.ParseShard(c.shard); err != nil {
		return err
	}
	if err := n.Validate(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return fitsNode(*n)
}

// Report prints the sweep's table, the answer and what runs out first
// (a run's: after its setting; its profile this machine's), the PyTorch
// peer's, and writes --report and --plot unless the run was interrupted.
func (n *Node) Report(o NodeOutcome, stdout io.Writer) error {
	c := n.cmd
	s := node.Sweep{Rows: o.Rows(false), Peer: o.Rows(true), MinAU: c.minAU, Command: c.commandLine, Interrupted: c.interrupted}
	if c.ran {
		fmt.Fprintf(stdout, "node of emulated accelerators: step %v, batch %d per rank, raw %dx%d, crop %d, transforms %s, %s per rank, %s of %s\n",
			n.Device.Step, n.Pipeline.Batch, n.Pipeline.Dataset.Width, n.Pipeline.Dataset.Height, n.Pipeline.Transforms.Crop,
			n.Pipeline.Impl, reports.Plural(n.Pipeline.Workers, "worker"), reports.Plural(n.Count, "run"), reports.Plural(n.Train.Steps, "step"))
		if s.Profile, s.ProfileErr = node.SmallestProfile(s.Rows, n.Pipeline, n.Device.Step); s.ProfileErr == nil {
			c.pf.setLink(&s.Profile)
		}
	} else {
		if len(s.Rows) == 0 {
			return cli.Usagef("no node records (BenchmarkNode/…): not a headspace node result file")
		}
		s.Profile, s.ProfileErr = nodeProfileOf(func(key string) string { return setting(o.Settings, key) }, s.Rows[0])
	}
	if err := s.Write(stdout, c.report, c.plot); err != nil {
		return err
	}
	s.WritePeer(stdout)
	return nil
}

// nodeIntsFlag is --accelerators, a comma-separated list of counts
// bound to a field.
type nodeIntsFlag struct{ p *[]int }

func (f nodeIntsFlag) String() string {
	if f.p == nil {
		return ""
	}
	return joinInts(*f.p)
}

func (f nodeIntsFlag) Set(s string) (err error) {
	*f.p, err = cli.ParseInts("--accelerators", s)
	return err
}

// nodeLevelsFlag is --levels, a comma-separated list of levels bound to
// a field.
type nodeLevelsFlag struct{ p *[]level.Level }

func (f nodeLevelsFlag) String() string {
	if f.p == nil {
		return ""
	}
	return joined(*f.p, level.Level.String)
}

func (f nodeLevelsFlag) Set(s string) (err error) {
	if *f.p, err = level.ParseList(s); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return nil
}
