package workloads

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/whatif"
	"github.com/headspace-bench/headspace/internal/cli"
)

// runNode is whatif --accelerators: it predicts AU per accelerator
// count from one single-rank profiling run, and with --verify measures
// each count and sets the two side by side. command is the command line
// as the report states it.
func (f *whatIfFlags) runNode(ctx context.Context, command string, stdout, stderr io.Writer) error {
	var accs []int
	if f.from == "" {
		var err error
		if accs, err = cli.ParseInts("--accelerators", f.accelerators); err != nil {
			return err
		}
	}
	if err := checkMinAU(f.minAU); err != nil {
		return err
	}
	if f.target < 0 {
		return cli.Usagef("--target %d must not be negative", f.target)
	}
	if err := checkPlot(f.plotPath); err != nil {
		return err
	}
	resultsOut := driver.Output{Path: f.out, Benchmarks: whatif.NodeBenchmarks, Force: f.force, Beside: true}
	if err := cli.FirstErr(cli.CheckOutputs(cli.Output{Path: f.report, Kind: whatif.NodeReportKind}, cli.Figure(f.plotPath)), driver.Check(resultsOut)); err != nil {
		return err
	}
	if f.from != "" {
		w, minAUKnown, err := ReadNodeWhatIf(f.from)
		if err != nil {
			return cli.FromErr(f.from, err)
		}
		// A --min-au given overrides the file's.
		if f.pf.data.Set("min-au") || !minAUKnown {
			w.MinAU = f.minAU
		}
		w.Target = f.target
		return w.Write(stdout, f.report, f.plotPath)
	}
	n, err := f.node(ctx, accs)
	if err != nil {
		return err
	}
	return f.runNodeSweep(ctx, n, accs, command, resultsOut, stdout, stderr)
}

// node is the node experiment of one rank alone that whatif
// --accelerators accs profiles, its flags checked.
func (f *whatIfFlags) node(ctx context.Context, accs []int) (Node, error) {
	n := Sized[Node](Default)
	if err := checkNodeFlags(accs, f.impl, f.pf.dev, f.pf.step); err != nil {
		return n, err
	}
	var err error
	if n.Pipeline, err = f.pf.config(ctx, f.workers.N(), f.impl); err != nil {
		return n, err
	}
	if _, err := f.pf.device(ctx); err != nil {
		return n, err
	}
	n.Device = f.pf.emulated()
	n.Train.Steps, n.Train.Warmup, n.Count = f.steps, f.warmup, f.count
	n.Levels = []level.Level{level.None}
	n.Accelerators = []int{1}
	if err := n.Validate(); err != nil {
		return n, cli.UsageError{Msg: err.Error()}
	}
	if f.verify {
		// The verify runs are nodes of each count: the threads on the
		// cores and the ranks' memory, as headspace node checks them.
		v := n
		v.Accelerators = accs
		return n, fitsNode(v)
	}
	return n, nil
}

// runNodeSweep profiles one rank alone (n), with --verify runs every
// count of accs, and writes the file (--out), the printed prediction,
// the report and the plot. An interrupted run keeps nothing.
func (f *whatIfFlags) runNodeSweep(ctx context.Context, n Node, accs []int, command string, resultsOut driver.Output, stdout, stderr io.Writer) error {
	rank, err := RankOptions()
	if err != nil {
		return err
	}
	total := n.Count
	if f.verify {
		total += n.Count * len(accs)
	}
	var p node.Profile
	var o NodeWhatIfOutcome
	var settings []resultfile.Config
	run, err := driver.Run(ctx, driver.Job{Units: total, Progress: stderr, Settings: func() []resultfile.Config { return driver.Settings("emulated", settings) },
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			env := Env{Rank: rank, Start: h.Start}
			// Each run's records go to the hooks as it finishes.
			stream := func(r NodeRun) error {
				for _, rec := range r.records() {
					if err := h.Result(rec); err != nil {
						return err
					}
				}
				return nil
			}
			var err error
			if o.Profile, err = n.MeasureEach(ctx, env, stream); err == nil && f.verify {
				v := n
				v.Accelerators = accs
				o.Verify, err = v.MeasureEach(ctx, env, stream)
			}
			if err != nil {
				return nil, err
			}
			memPerRank := n.Pipeline.MemoryEstimate() + 2*n.Pipeline.BatchBytes()
			avail, _ := machine.Memory()
			one := node.Row{Accelerators: 1}
			if rows := o.Profile.Rows(false); len(rows) > 0 {
				one = rows[0]
			}
			if p, err = node.ProfileOf(one, float64(runtime.NumCPU()), n.Pipeline.Batch, n.Pipeline.Workers, n.Device.Step); err != nil {
				return nil, err
			}
			p.MemoryPerRank, p.Memory = memPerRank, avail
			f.pf.setLink(&p)
			settings = append(n.Settings(), nodeWhatIfSettings(f.minAU, memPerRank, avail, command)...)
			o.Predictions = nodePredictions(p, accs, o.Verify.Rows(false))
			return NodeWhatIfCodec.Encode(o), nil
		}}, resultsOut)
	if run.Interrupted {
		return run.Err("")
	}
	if err != nil {
		return err
	}
	if f.out != "" {
		cli.KeptNote(stdout, f.out, run.Path)
		defer fmt.Fprintf(stdout, "results: %s\n", run.Path)
	}
	w := whatif.NodeWhatIf{Profile: p, Accelerators: accs, MinAU: f.minAU, Target: f.target, Command: command, Measured: o.Verify.Rows(false)}
	return w.Write(stdout, f.report, f.plotPath)
}
