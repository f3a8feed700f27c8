package node

// What headspace node prints and writes of a sweep's records, the same
// from a run and from its result file: the table, the answer, what runs
// out first, the PyTorch DDP peer's table, the Markdown report and the
// plot.

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// ReportKind is what a node sweep's Markdown report is, for the output
// policy.
var ReportKind = atomicfile.Report("node report")

// SmallestProfile is the model's profile from the smallest node of rows,
// on this machine's cores, with the memory estimate of cfg (a rank's
// pipeline, stepping every step) and the machine's available memory;
// the link's caps are the caller's to set.
func SmallestProfile(rows []Row, cfg loader.Config, step time.Duration) (Profile, error) {
	if len(rows) == 0 {
		return Profile{}, fmt.Errorf("no node measured")
	}
	p, err := ProfileOf(rows[0], float64(runtime.NumCPU()), cfg.Batch, cfg.Workers, step)
	if err != nil {
		return p, err
	}
	// One rank's profile: the CPU per sample is per rank already.
	p.MemoryPerRank = cfg.MemoryEstimate() + 2*cfg.BatchBytes()
	if avail, ok := machine.Memory(); ok {
		p.Memory = avail
	}
	return p, nil
}

// Sweep is a node sweep's outcome as headspace node prints and writes
// it.
type Sweep struct {
	// Rows are ours, Peer the PyTorch DDP peer's (none without it).
	Rows, Peer []Row
	// Profile is the model's profile of the smallest node, for the
	// bounds; ProfileErr, where not nil, says why there is none.
	Profile    Profile
	ProfileErr error
	// MinAU is the AU an accelerator is kept busy at, or more.
	MinAU float64
	// Command is the command line the report names.
	Command string
	// Interrupted says the sweep was interrupted: the table shows the
	// counts finished, and no answer, bound, report or plot is given as
	// if it were the sweep's.
	Interrupted bool
}

// Write prints the table, the answer and the bounds, and writes the
// report to report and the plot to plotPath, each where its path is not
// "", saying where on stdout.
func (o Sweep) Write(stdout io.Writer, report, plotPath string) error {
	rows, peer := o.Rows, o.Peer
	if err := WriteTable(stdout, rows, nil); err != nil {
		return err
	}
	if o.Interrupted {
		_, err := fmt.Fprintln(stdout, "interrupted: the table shows the accelerator counts finished; no answer, bounds, report or plot (run it again with the same --out to finish it)")
		return err
	}
	fmt.Fprintf(stdout, "%s (every rank's AU ≥ %.2f)\n", AnswerLine(MaxAccelerators(rows, o.MinAU)), o.MinAU)
	var bounds []Bound
	if o.ProfileErr == nil {
		bounds = o.Profile.Bounds(o.MinAU)
		fmt.Fprintf(stdout, "runs out first: %s at %.2f accelerators\n", bounds[0].Resource, bounds[0].Accelerators)
		if err := WriteBounds(stdout, bounds); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "what runs out first: not known (%v)\n", o.ProfileErr)
	}
	if report != "" {
		var b strings.Builder
		if err := WriteMarkdown(&b, o.Command, rows, nil, peer, o.MinAU, bounds); err != nil {
			return err
		}
		if err := atomicfile.WriteKindBytes(report, ReportKind, []byte(b.String())); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "report: %s\n", report)
	}
	if plotPath != "" {
		if err := SavePlot(plotPath, "AU against accelerators", rows, nil, peer, o.MinAU); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s\n", plotPath)
	}
	return nil
}

// WritePeer prints the PyTorch DDP peer's table and answer, where the
// records hold its records.
func (o Sweep) WritePeer(stdout io.Writer) {
	rows := o.Peer
	if len(rows) == 0 || o.Interrupted {
		return
	}
	fmt.Fprintf(stdout, "\nthe PyTorch DDP peer (%s):\n", PeerScript)
	_ = WriteTable(stdout, rows, nil)
	fmt.Fprintf(stdout, "peer %s (every rank's AU ≥ %.2f)\n", AnswerLine(MaxAccelerators(rows, o.MinAU)), o.MinAU)
}
