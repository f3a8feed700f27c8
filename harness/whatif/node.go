package whatif

// A node of accelerators (whatif --accelerators): one rank alone is
// profiled, the node model (node.Profile) predicts every rank's AU at
// each accelerator count, and a verify run measures each count. This file
// owns that run's result file — the profile's records, the predictions
// and the settings — reading one back, and the printed text, the report
// and the plot, the same from a run and from a file.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

// NodeBenchmarks are the benchmarks of a node what-if's result file: the
// verify runs under Node/, the profile's run under NodeProfile/ (so that
// a verify run of one accelerator is its own) and the predictions under
// NodeWhatIf/accelerators=N.
var NodeBenchmarks = []string{"Node", "NodeProfile", "NodeWhatIf"}

// The records' prefixes, units and settings of a node what-if's file.
const (
	profilePrefix      = "NodeProfile/"
	predictionPrefix   = "NodeWhatIf/"
	unitPredictedAU    = "predicted-au"
	unitMeasuredAU     = "measured-au"
	unitAUError        = "au-error-%"
	memoryPerRankKey   = "node-memory-per-rank"
	memoryAvailableKey = "memory-available"
	minAUKey           = "min-au"
)

// NodeReportKind is what a node what-if's Markdown report is, for the
// output policy.
var NodeReportKind = atomicfile.Report("node what-if report")

// NodeWhatIf is a node what-if's outcome: the profile of one rank alone,
// the counts it predicts, and the records that hold the profile's run,
// the verify runs and the predictions.
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
	// Records are the profile's records (NodeProfileRecords), the verify
	// runs' and the predictions (NodePredictions).
	Records []*benchfmt.Result
}

// NodeProfileRecords are a node run's records of one rank alone renamed
// from Node/ to NodeProfile/, the profile's records in the file.
func NodeProfileRecords(run []*benchfmt.Result) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, r := range run {
		c := *r
		c.Name = benchfmt.Name("Benchmark" + profilePrefix + strings.TrimPrefix(string(r.Name), "BenchmarkNode/"))
		out = append(out, &c)
	}
	return out
}

// profileRecords are the profile's records of recs named as node records
// again, for node.ProfileOf.
func profileRecords(recs []*benchfmt.Result) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, r := range recs {
		name := strings.TrimPrefix(string(r.Name), "Benchmark")
		if rest, ok := strings.CutPrefix(name, profilePrefix); ok {
			c := *r
			c.Name = benchfmt.Name("Node/" + rest)
			out = append(out, &c)
		}
	}
	return out
}

// verifyRecords are recs' Node/ records (the verify runs).
func verifyRecords(recs []*benchfmt.Result) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, r := range recs {
		if _, _, ok := node.ParsePointName(string(r.Name)); ok {
			out = append(out, r)
		}
	}
	return out
}

// NodeProfile is the node model's profile from the profile's records of
// recs (NodeProfileRecords), on a machine of cores cores with batch
// samples a step of step and workers loader workers a rank; the memory
// and the link's caps are the caller's to set.
func NodeProfile(recs []*benchfmt.Result, cores float64, batch, workers int, step time.Duration) (node.Profile, error) {
	return node.ProfileOf(profileRecords(recs), 1, cores, batch, workers, step)
}

// NodePredictions are the model's AU at each count, with the measured AU
// (the smallest rank's, median over runs) and the error where a verify
// run of recs measured the count.
func NodePredictions(p node.Profile, accelerators []int, recs []*benchfmt.Result) []*benchfmt.Result {
	measured := map[int]float64{}
	for _, r := range node.Rows(verifyRecords(recs)) {
		if !math.IsNaN(r.AUMin) {
			measured[r.Accelerators] = r.AUMin
		}
	}
	var out []*benchfmt.Result
	for _, n := range accelerators {
		res := &benchfmt.Result{Name: benchfmt.Name(resultfile.BenchName(fmt.Sprintf("%saccelerators=%d", predictionPrefix, n), runtime.GOMAXPROCS(0))), Iters: 1}
		pred := p.PredictAU(n)
		res.Values = append(res.Values, benchfmt.Value{Value: pred, Unit: unitPredictedAU})
		if m, ok := measured[n]; ok && m > 0 {
			res.Values = append(res.Values, benchfmt.Value{Value: m, Unit: unitMeasuredAU},
				benchfmt.Value{Value: 100 * math.Abs(pred-m) / m, Unit: unitAUError})
		}
		out = append(out, res)
	}
	return out
}

// NodeSettings are the lines a node what-if's file adds to the run's
// settings, so that ReadNode rebuilds its outcome: the AU asked, the
// profile's memory (a rank's estimate, the machine's available) and the
// command line.
func NodeSettings(minAU float64, memPerRank, avail int64, command string) []resultfile.Config {
	return []resultfile.Config{
		{Key: minAUKey, Value: fmt.Sprint(minAU)},
		{Key: memoryPerRankKey, Value: strconv.FormatInt(memPerRank, 10)},
		{Key: memoryAvailableKey, Value: strconv.FormatInt(avail, 10)},
		{Key: "command", Value: command},
	}
}

// IsNodeFile says whether path is a node what-if's result file (it holds
// a node profile).
func IsNodeFile(path string) bool {
	recs, err := resultfile.Read(path)
	return err == nil && len(profileRecords(recs)) > 0
}

// ReadNode reads a node what-if's outcome back from its result file:
// the profile, the counts predicted, the command and the records, and
// the AU asked where the file records one (minAUKnown). Target is left
// 0. Its errors do not name path.
func ReadNode(path string) (w NodeWhatIf, minAUKnown bool, err error) {
	recs, err := resultfile.Read(path)
	if err != nil {
		return w, false, err
	}
	prof := profileRecords(recs)
	if len(prof) == 0 {
		return w, false, errors.New("no node profile (BenchmarkNodeProfile/…): not a file of whatif --accelerators")
	}
	if w.Profile, err = node.ProfileFrom(prof, 1); err != nil {
		return w, false, err
	}
	cfg := prof[0]
	w.Profile.MemoryPerRank, _ = strconv.ParseInt(cfg.GetConfig(memoryPerRankKey), 10, 64)
	w.Profile.Memory, _ = strconv.ParseInt(cfg.GetConfig(memoryAvailableKey), 10, 64)
	if v, err := strconv.ParseFloat(cfg.GetConfig(minAUKey), 64); err == nil {
		w.MinAU, minAUKnown = v, true
	}
	w.Command = cfg.GetConfig("command")
	w.Records = recs
	for _, r := range recs {
		name := strings.TrimPrefix(string(r.Name), "Benchmark")
		if rest, ok := strings.CutPrefix(name, predictionPrefix+"accelerators="); ok {
			if i := strings.IndexByte(rest, '-'); i > 0 {
				rest = rest[:i]
			}
			if v, err := strconv.Atoi(rest); err == nil {
				w.Accelerators = append(w.Accelerators, v)
			}
		}
	}
	if len(w.Accelerators) == 0 {
		return w, minAUKnown, errors.New("no predictions (BenchmarkNodeWhatIf/…)")
	}
	return w, minAUKnown, nil
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
		plotRows := node.Rows(verifyRecords(w.Records))
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
	rows := node.Rows(verifyRecords(w.Records))
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
