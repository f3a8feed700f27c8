package whatif

// A node of accelerators (whatif --accelerators): one rank alone is
// profiled, the node model (node.Profile) predicts every rank's AU at
// each accelerator count, and a verify run measures each count. This file
// owns the printed text, the report and the plot, the same from a run
// and from its result file (which workloads.NodeWhatIfCodec writes and
// reads back).

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

// NodeBenchmarks are the benchmarks of a node what-if's result file
// (workloads.NodeWhatIfCodec): the verify runs under Node/, the
// profile's run under NodeWhatIfProfile/ (so that a verify run of one
// accelerator is its own) and the predictions under
// NodeWhatIf/accelerators=N.
var NodeBenchmarks = []string{"Node", "NodeWhatIfProfile", "NodeWhatIf"}

// NodeReportKind is what a node what-if's Markdown report is, for the
// output policy.
var NodeReportKind = atomicfile.Report("node what-if report")

// NodeWhatIf is a node what-if's outcome: the profile of one rank alone,
// the counts it predicts, and what the verify runs measured.
type NodeWhatIf struct {
	// Profile is the node model's profile of one rank alone.
	Profile node.Profile
	// Accelerators are the counts predicted (and verified).
	Accelerators []int
	// MinAU is the AU an accelerator is kept busy at, or more.
	MinAU float64
	// Target is the count whose needs are printed; 0 is the largest of
	// Accelerators.
	Target int
	// Command is the command line that made the outcome, for the report.
	Command string
	// Measured are the verify runs' rows (none without --verify).
	Measured []node.Row
}

// Write prints the prediction (and the verification), and writes the
// Markdown report to report and the plot to plotPath, each where its
// path is not "", saying where on stdout.
func (w NodeWhatIf) Write(stdout io.Writer, report, plotPath string) error {
	text, err := w.Text()
	if err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, text); err != nil {
		return err
	}
	if report != "" {
		md := "# A node of accelerators: predicted and measured\n\nMade with:\n\n    " + w.Command + "\n\n```\n" + text + "```\n"
		if err := atomicfile.WriteKindBytes(report, NodeReportKind, []byte(md)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "report: %s\n", report)
	}
	if plotPath != "" {
		plotRows := w.Measured
		if len(plotRows) == 0 {
			for _, n := range w.Accelerators {
				plotRows = append(plotRows, node.Row{Accelerators: n, AU: math.NaN(), AUMin: math.NaN(), HostAU: math.NaN()})
			}
		}
		if err := node.SavePlot(plotPath, "AU against accelerators: predicted from one rank, and measured", plotRows, w.predicted(), nil, w.MinAU); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s\n", plotPath)
	}
	return nil
}

// predicted is the model's AU at each count.
func (w NodeWhatIf) predicted() map[int]float64 {
	predicted := map[int]float64{}
	for _, n := range w.Accelerators {
		predicted[n] = w.Profile.PredictAU(n)
	}
	return predicted
}

// Text is what Write prints: the profile, predicted against measured AU
// at each count, the largest count kept busy, the bounds and what Target
// would take.
func (w NodeWhatIf) Text() (string, error) {
	var b strings.Builder
	p := w.Profile
	threads := "not sampled"
	if p.OtherThreads >= 0 {
		threads = fmt.Sprintf("%.3g", p.OtherThreads)
	}
	fmt.Fprintf(&b, "node what-if from one rank alone: %.4g samples/s asked per accelerator (batch %d, step %v, %s a rank), %v CPU a sample, AU %.3f; %.3g cores; other processes: %.3g cores used, runnable threads %s\n\n",
		p.Demand(), p.Batch, p.Step, report.Plural(p.Workers, "worker"), p.CPUPerSample.Round(1000), p.AU, p.Cores, max(p.OtherCores, 0), threads)
	rows := w.Measured
	w.writeAU(&b, rows)
	limit := slices.Max(w.Accelerators)
	fmt.Fprintf(&b, "\npredicted %s (every rank's AU ≥ %.2f, up to %d)\n", node.AnswerLine(p.MaxAccelerators(w.MinAU, limit)), w.MinAU, limit)
	if len(rows) > 0 {
		fmt.Fprintf(&b, "measured %s\n", node.AnswerLine(node.MaxAccelerators(rows, w.MinAU)))
	}
	bounds := p.Bounds(w.MinAU)
	fmt.Fprintf(&b, "runs out first: %s at %.2f accelerators\n", bounds[0].Resource, bounds[0].Accelerators)
	if err := node.WriteBounds(&b, bounds); err != nil {
		return "", err
	}
	target := w.Target
	if target == 0 {
		target = limit
	}
	fmt.Fprintf(&b, "\n%d accelerators at AU %.2f would take:\n", target, w.MinAU)
	for _, need := range p.Needs(target, w.MinAU) {
		fmt.Fprintf(&b, "  %-9s %s\n", need.Resource, need.Need)
	}
	return b.String(), nil
}

// writeAU writes the table of predicted against measured AU (rows are
// the verify runs') and the median error.
func (w NodeWhatIf) writeAU(b *strings.Builder, rows []node.Row) {
	predicted := w.predicted()
	fmt.Fprintf(b, "%12s %12s %12s %8s\n", "accelerators", "predicted-au", "measured-au", "error")
	var errs []float64
	for _, n := range w.Accelerators {
		meas, e := "–", "–"
		for _, r := range rows {
			if r.Accelerators == n && !math.IsNaN(r.AUMin) {
				meas = fmt.Sprintf("%.3f", r.AUMin)
				if r.AUMin > 0 {
					ev := 100 * math.Abs(predicted[n]-r.AUMin) / r.AUMin
					errs = append(errs, ev)
					e = fmt.Sprintf("%.1f%%", ev)
				}
			}
		}
		fmt.Fprintf(b, "%12d %12.3f %12s %8s\n", n, predicted[n], meas, e)
	}
	if len(errs) > 0 {
		fmt.Fprintf(b, "\nmedian error on AU over %d accelerator counts: %.1f%% (worst %.1f%%)\n", len(errs), summary.Median(slices.Clone(errs)), summary.Max(errs))
	}
}
