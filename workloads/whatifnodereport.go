package workloads

import (
	"context"
	"fmt"
	"io"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/whatif"
	"github.com/headspace-bench/headspace/internal/cli"
)

// runNode is whatif --accelerators: the NodeWhatIf experiment, which
// predicts AU per accelerator count from one single-rank profiling run,
// and with --verify measures each count and sets the two side by side;
// with --from its report rebuilt from a file through NodeWhatIfCodec.
// command is the command line as the report states it.
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
	e := NodeWhatIf{Accelerators: accs, Verify: f.verify, MinAU: f.minAU, Command: command, Target: f.target, ReportPath: f.report, PlotPath: f.plotPath}
	if f.from != "" {
		o, err := ReadNodeWhatIf(f.from)
		if err != nil {
			return cli.FromErr(f.from, err)
		}
		// A --min-au given overrides the file's.
		if !f.pf.data.Set("min-au") && o.MinAUKnown {
			e.MinAU = 0
		}
		return e.Report(o, stdout)
	}
	var err error
	if e.Rank, err = f.node(ctx, accs); err != nil {
		return err
	}
	if lk := f.pf.data.StartedLink(); lk != nil {
		lc := lk.Config()
		e.LinkBandwidth, e.LinkRequestRate = float64(lc.Bandwidth), lc.RequestRate
	}
	return f.runNodeSweep(ctx, e, resultsOut, stdout, stderr)
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

// runNodeSweep runs e (each run's records into the file, --out, as it
// finishes) and reports it (NodeWhatIf.Report). An interrupted run
// keeps nothing.
func (f *whatIfFlags) runNodeSweep(ctx context.Context, e NodeWhatIf, resultsOut driver.Output, stdout, stderr io.Writer) error {
	rank, err := RankOptions()
	if err != nil {
		return err
	}
	total := e.Rank.Count
	if e.Verify {
		total += e.Rank.Count * len(e.Accelerators)
	}
	var o NodeWhatIfOutcome
	run, err := driver.Run(ctx, driver.Job{Units: total, Progress: stderr, Settings: func() []resultfile.Config { return driver.Settings("emulated", e.SettingsOf(o)) },
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
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
			if o, err = e.MeasureEach(ctx, Env{Rank: rank, Start: h.Start}, stream); err != nil {
				return nil, err
			}
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
	return e.Report(o, stdout)
}
