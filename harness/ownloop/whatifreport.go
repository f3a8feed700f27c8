package ownloop

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/report"
)

// WhatIfReport is what `headspace whatif -- COMMAND` reports, every
// figure and name of it, so that its result file holds all of it and
// --from prints the same bytes: the analysis's headspace and verdict, a
// node's answer (for a node's ranks), the model of the training loader
// (WhatIf: the slowest rank's, for a node) and the checks of --verify.
type WhatIfReport struct {
	Command string // the command line as typed
	// Before and After are the analysis's median steps with the loader
	// and on cached batches; Class and Stage its verdict's.
	Before, After time.Duration
	Class         analysis.Class
	Stage         string
	Node          *NodeWhatIf // nil for one process
	Model         WhatIf
	// VerifySteps are the steps of each check, Checks the checks made
	// (--verify), in the order they ran.
	VerifySteps int
	Checks      []Check
}

// Check is one run of the script as it is at Workers workers: its
// steps/s measured and as the model predicted them.
type Check struct {
	Workers             int
	Measured, Predicted float64
}

// NodeWhatIf is a node's answer as whatif prints it: its ranks and what
// started them, the slowest rank and the spread, each rank's AU and
// what it would take (the node model of a rank, from the slowest rank's
// stages; HasModel false where they were not timed).
type NodeWhatIf struct {
	Launcher    string
	Slowest     int
	Spread      float64
	AU          []float64 // by rank
	Model       node.Profile
	HasModel    bool
	NeedWorkers int
}

// NewWhatIfReport is the what-if of an analysis: the model (NewWhatIf)
// of rep, the slowest rank's where nr is a node's (nil for one
// process); a loader the model cannot take is refused (ErrRefused).
func NewWhatIfReport(cmd Command, rep Report, nr *NodeReport) (WhatIfReport, error) {
	w, err := NewWhatIf(rep)
	if err != nil {
		return WhatIfReport{}, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	out := WhatIfReport{Command: cmd.String(), Before: rep.Before.Median, After: rep.After.Median, Class: rep.Verdict.Class, Stage: rep.Verdict.Stage, Model: w}
	if nr != nil {
		n := nr.whatIf()
		out.Node = &n
	}
	return out, nil
}

// Verify runs the checks (WhatIf.VerifyAll) of the script that rep's
// analysis measured, steps steps each (start, if not nil, called
// before each), keeping those made before an error.
func (r *WhatIfReport) Verify(ctx context.Context, cmd Command, rep Report, steps int, first, stall time.Duration, log io.Writer, start func(workers int)) error {
	r.VerifySteps = steps
	var err error
	// The loader the analysis measured (one whose steps train, where
	// the first trained nothing), by its number.
	r.Checks, err = r.Model.VerifyAll(ctx, cmd, rep.Loader.Index, steps, first, stall, log, start)
	return err
}

// HeadspacePercent is the analysis's headspace: the share of the step
// with the loader that cached batches save.
func (r WhatIfReport) HeadspacePercent() float64 {
	return analysis.Report{Before: analysis.Estimate{Median: r.Before}, After: analysis.Estimate{Median: r.After}}.HeadspacePercent()
}

// WriteText prints the what-if: the command and the analysis's
// headspace and verdict, a node's answer, what it would take, and the
// checks.
func (r WhatIfReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "command: %s\n", r.Command)
	fmt.Fprintf(w, "headspace: %.1f%% (step %.1f ms with the loader, %.1f ms on cached batches); verdict: %s, %s\n\n",
		r.HeadspacePercent(), float64(r.Before)/1e6, float64(r.After)/1e6, r.Class, r.Stage)
	if r.Node != nil {
		r.Node.writeText(w)
	}
	r.Model.WriteText(w)
	if len(r.Checks) == 0 {
		return
	}
	fmt.Fprintf(w, "\nverify (%d steps, the script as it is):\n", r.VerifySteps)
	for _, c := range r.Checks {
		c.writeText(w, r.Model.Cores)
	}
}

// writeText prints the check's line, and a line under it where its
// workers outnumber the machine's cores.
func (c Check) writeText(w io.Writer, cores int) {
	fmt.Fprintf(w, "  %d workers: measured %.2f steps/s, predicted %.2f: error %+.0f%%\n", c.Workers, c.Measured, c.Predicted, 100*(c.Predicted-c.Measured)/c.Measured)
	if c.Workers > cores {
		fmt.Fprintf(w, "    more workers than cores (%d on %d): the model budgets the cores' CPU time alone, not the workers' start-up, memory and switching, which grow with their number\n", c.Workers, cores)
	}
}

// whatIf is the node's answer as whatif prints it.
func (nr NodeReport) whatIf() NodeWhatIf {
	return NodeWhatIf{Launcher: nr.launcher(), Slowest: nr.Slowest, Spread: nr.Spread, AU: nr.AU, Model: nr.Model, HasModel: nr.HasModel, NeedWorkers: nr.NeedWorkers}
}

// writeText prints the node's ranks and what the node would take; the
// model of one rank that follows is the slowest rank's.
func (n NodeWhatIf) writeText(w io.Writer) {
	fmt.Fprintf(w, "node: %d ranks (%s); the slowest rank: %d (spread %.0f%%); AU by rank:", len(n.AU), n.Launcher, n.Slowest, n.Spread)
	for _, au := range n.AU {
		fmt.Fprintf(w, " %.2f", au)
	}
	fmt.Fprintln(w)
	n.writeModel(w)
	fmt.Fprintf(w, "\nrank %d, ", n.Slowest)
}

// writeModel prints what it would take, from the node model.
func (n NodeWhatIf) writeModel(w io.Writer) {
	fmt.Fprintf(w, "\nwhat it would take (the model of whatif --accelerators, from rank %d's stages):\n", n.Slowest)
	if !n.HasModel {
		fmt.Fprintf(w, "  not modelled: the slowest rank's stages were not timed (an iterable that is not a DataLoader, or a dataset whose class cannot be wrapped)\n")
		return
	}
	p, ranks := n.Model, len(n.AU)
	fmt.Fprintf(w, "  a rank asks %.3g cores (%s CPU a sample, its workers' and its loop's, × %.4g samples/s at its step on cached batches, %s)\n",
		p.CPUPerSample.Seconds()*p.Demand(), us(p.CPUPerSample), p.Demand(), report.Ms(p.Step, 1))
	fmt.Fprintf(w, "  its loader's workers (%d) alone keep it at AU %.2f; %d ranks on these %.0f cores: predicted AU %.2f (the other processes' use of the cores not measured)\n",
		p.Workers, p.AU, ranks, p.Cores, p.PredictAU(ranks))
	full := p
	full.AU = 1
	need := ""
	for _, nd := range full.Needs(ranks, minAU) {
		if nd.Resource == node.ResourceCores {
			need = nd.Need
		}
	}
	fmt.Fprintf(w, "  for AU %.2f in every rank: %d workers a rank (now %d) and %s\n", minAU, max(n.NeedWorkers, p.Workers), p.Workers, need)
}
