package workloads

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/whatif"
	"github.com/headspace-bench/headspace/internal/cli"
)

// whatIfNode is what whatif --accelerators takes from the flags.
type whatIfNode struct {
	pf                          *pipelineFlags
	accelerators                []int
	workers                     int
	impl                        string
	steps, warmup, count        int
	minAU                       float64
	minAUSet                    bool // --min-au given: it overrides a --from file's
	target                      int
	verify                      bool
	out, report, plotPath, from string
	force                       bool
	command                     string
}

// runWhatIfNode predicts AU per accelerator count from one single-rank
// profiling run, and with --verify measures each count and sets the two
// side by side.
func runWhatIfNode(ctx context.Context, a whatIfNode, stdout, stderr io.Writer) error {
	if !(a.minAU > 0 && a.minAU <= 1) {
		return cli.Usagef("--min-au %v: want an AU in (0, 1]", a.minAU)
	}
	if a.target < 0 {
		return cli.Usagef("--target %d must not be negative", a.target)
	}
	if a.plotPath != "" && !strings.HasSuffix(a.plotPath, ".png") && !strings.HasSuffix(a.plotPath, ".svg") {
		return cli.Usagef("--plot %q: want a .png or .svg file", a.plotPath)
	}
	resultsOut := driver.Output{Path: a.out, Benchmarks: whatif.NodeBenchmarks, Force: a.force, Beside: true}
	if err := cli.FirstErr(cli.CheckOutputs(cli.Output{Path: a.report, Kind: whatif.NodeReportKind}, cli.Figure(a.plotPath)), driver.Check(resultsOut)); err != nil {
		return err
	}
	if a.from != "" {
		w, minAUKnown, err := whatif.ReadNode(a.from)
		if err != nil {
			return cli.Usagef("--from %s: %v", a.from, err)
		}
		if a.minAUSet || !minAUKnown {
			w.MinAU = a.minAU
		}
		w.Target = a.target
		return w.Write(stdout, a.report, a.plotPath)
	}
	n, err := a.node(ctx)
	if err != nil {
		return err
	}
	return a.run(ctx, n, resultsOut, stdout, stderr)
}

// node is the node experiment of one rank alone that a's profile runs,
// its flags checked.
func (a whatIfNode) node(ctx context.Context) (Node, error) {
	n := Sized[Node](Default)
	for _, c := range a.accelerators {
		if err := cli.InRange("--accelerators", c, 1, maxAccelerators); err != nil {
			return n, err
		}
	}
	if !slices.Contains(transforms.Names, a.impl) {
		return n, cli.Usagef("--transforms %q: want %s", a.impl, strings.Join(transforms.Names, " or "))
	}
	if a.pf.dev != "emulated" {
		return n, cli.Usagef("--device %s: a node's ranks run the emulated device (docs/node.md)", a.pf.dev)
	}
	var err error
	if n.Pipeline, err = a.pf.config(ctx, a.workers, a.impl); err != nil {
		return n, err
	}
	if _, err := a.pf.device(ctx); err != nil {
		return n, err
	}
	n.Device = a.pf.emulated()
	n.Train.Steps, n.Train.Warmup, n.Count = a.steps, a.warmup, a.count
	n.Levels = []level.Level{level.None}
	n.Accelerators = []int{1}
	if err := n.Validate(); err != nil {
		return n, cli.UsageError{Msg: err.Error()}
	}
	if a.verify {
		largest := slices.Max(a.accelerators)
		if err := cli.FitsPipeline(n.Pipeline, largest, int64(largest)*2*n.Pipeline.BatchBytes()); err != nil {
			return n, cli.Usagef("--accelerators %d: %v", largest, err)
		}
	}
	return n, nil
}

// run profiles one rank alone (n), with --verify runs every count, and
// writes the file (--out), the printed prediction, the report and the
// plot. An interrupted run keeps nothing.
func (a whatIfNode) run(ctx context.Context, n Node, resultsOut driver.Output, stdout, stderr io.Writer) error {
	rank, err := RankOptions()
	if err != nil {
		return err
	}
	total := n.Count
	if a.verify {
		total += n.Count * len(a.accelerators)
	}
	var p node.Profile
	var settings []resultfile.Config
	o, err := driver.Run(ctx, driver.Job{Units: total, Progress: stderr, Settings: func() []resultfile.Config { return driver.Settings("emulated", settings) },
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			env := Env{Rank: rank, Start: h.Start}
			// Each run's records go to the hooks as it finishes.
			stream := func(r NodeRun) error {
				for _, rec := range NodeCodec.Encode(NodeOutcome{Runs: []NodeRun{r}}) {
					if err := h.Result(rec); err != nil {
						return err
					}
				}
				return nil
			}
			prof, err := n.MeasureEach(ctx, env, stream)
			recs := whatif.NodeProfileRecords(NodeCodec.Encode(prof))
			if err == nil && a.verify {
				v := n
				v.Accelerators = a.accelerators
				var made NodeOutcome
				made, err = v.MeasureEach(ctx, env, stream)
				recs = append(recs, NodeCodec.Encode(made)...)
			}
			if err != nil {
				return nil, err
			}
			memPerRank := n.Pipeline.MemoryEstimate() + 2*n.Pipeline.BatchBytes()
			avail, _ := machine.Memory()
			if p, err = whatif.NodeProfile(recs, float64(runtime.NumCPU()), n.Pipeline.Batch, n.Pipeline.Workers, n.Device.Step); err != nil {
				return nil, err
			}
			p.MemoryPerRank, p.Memory = memPerRank, avail
			if a.pf.data.StartedLink() != nil {
				lc := a.pf.data.StartedLink().Config()
				p.LinkBandwidth, p.LinkRequestRate = float64(lc.Bandwidth), lc.RequestRate
			}
			settings = append(n.Settings(), whatif.NodeSettings(a.minAU, memPerRank, avail, a.command)...)
			return append(recs, whatif.NodePredictions(p, a.accelerators, recs)...), nil
		}}, resultsOut)
	if o.Interrupted {
		return o.Err("")
	}
	if err != nil {
		return err
	}
	if a.out != "" {
		cli.KeptNote(stdout, a.out, o.Path)
		defer fmt.Fprintf(stdout, "results: %s\n", o.Path)
	}
	w := whatif.NodeWhatIf{Profile: p, Accelerators: a.accelerators, MinAU: a.minAU, Target: a.target, Command: a.command, Records: o.Records}
	return w.Write(stdout, a.report, a.plotPath)
}
