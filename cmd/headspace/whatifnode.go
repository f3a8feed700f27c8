package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/summary"
	"github.com/headspace-bench/headspace/workloads"
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

// The records and settings of whatif --accelerators' file: the profile's
// run under NodeProfile/ (so that a --verify run of one accelerator is
// its own), the verify runs under Node/, the predictions under
// NodeWhatIf/accelerators=N.
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

// runWhatIfNode predicts AU per accelerator count from one single-rank
// profiling run, and with --verify measures each count and sets the two
// side by side.
func runWhatIfNode(ctx context.Context, a whatIfNode, stdout, stderr io.Writer) error {
	if !(a.minAU > 0 && a.minAU <= 1) {
		return usagef("--min-au %v: want an AU in (0, 1]", a.minAU)
	}
	if a.target < 0 {
		return usagef("--target %d must not be negative", a.target)
	}
	if a.plotPath != "" && !strings.HasSuffix(a.plotPath, ".png") && !strings.HasSuffix(a.plotPath, ".svg") {
		return usagef("--plot %q: want a .png or .svg file", a.plotPath)
	}
	resultsOut := driver.Output{Path: a.out, Benchmarks: []string{"Node", "NodeProfile", "NodeWhatIf"}, Force: a.force, Beside: true}
	if err := firstErr(checkOutputs(output{a.report, nodeWhatIfReport}, figure(a.plotPath)), driver.Check(resultsOut)); err != nil {
		return err
	}
	if a.from != "" {
		recs, err := resultfile.Read(a.from)
		if err != nil {
			return usagef("--from %s: %v", a.from, err)
		}
		prof := profileRecords(recs)
		if len(prof) == 0 {
			return usagef("--from %s: no node profile (BenchmarkNodeProfile/…): not a file of whatif --accelerators", a.from)
		}
		p, err := node.ProfileFrom(prof, 1)
		if err != nil {
			return usagef("--from %s: %v", a.from, err)
		}
		cfg := prof[0]
		p.MemoryPerRank, _ = strconv.ParseInt(cfg.GetConfig(memoryPerRankKey), 10, 64)
		p.Memory, _ = strconv.ParseInt(cfg.GetConfig(memoryAvailableKey), 10, 64)
		if !a.minAUSet {
			if v, err := strconv.ParseFloat(cfg.GetConfig(minAUKey), 64); err == nil {
				a.minAU = v
			}
		}
		a.command = cfg.GetConfig("command")
		a.accelerators = nil
		for _, r := range recs {
			name := strings.TrimPrefix(string(r.Name), "Benchmark")
			if rest, ok := strings.CutPrefix(name, predictionPrefix+"accelerators="); ok {
				if i := strings.IndexByte(rest, '-'); i > 0 {
					rest = rest[:i]
				}
				if v, err := strconv.Atoi(rest); err == nil {
					a.accelerators = append(a.accelerators, v)
				}
			}
		}
		if len(a.accelerators) == 0 {
			return usagef("--from %s: no predictions (BenchmarkNodeWhatIf/…)", a.from)
		}
		return writeWhatIfNode(stdout, recs, p, a)
	}
	for _, n := range a.accelerators {
		if err := inRange("--accelerators", n, 1, maxAccelerators); err != nil {
			return err
		}
	}
	if !slices.Contains(transforms.Names, a.impl) {
		return usagef("--transforms %q: want %s", a.impl, strings.Join(transforms.Names, " or "))
	}
	if a.pf.dev != "emulated" {
		return usagef("--device %s: a node's ranks run the emulated device (docs/node.md)", a.pf.dev)
	}
	n := workloads.Sized[workloads.Node](workloads.Default)
	var err error
	if n.Pipeline, err = a.pf.config(ctx, a.workers, a.impl); err != nil {
		return err
	}
	if _, err := a.pf.device(ctx); err != nil {
		return err
	}
	n.Device = device.EmulatedConfig{Step: a.pf.step, Pinned: true, PinnedBandwidth: a.pf.pinnedBW * 1e9, PageableBandwidth: a.pf.pageableBW * 1e9, ConvertBandwidth: a.pf.convertBW * 1e9}
	n.Train.Steps, n.Train.Warmup, n.Count = a.steps, a.warmup, a.count
	n.Levels = []level.Level{level.None}
	n.Accelerators = []int{1}
	if err := n.Validate(); err != nil {
		return usageError{err.Error()}
	}
	if a.verify {
		largest := slices.Max(a.accelerators)
		if err := fitsPipeline(n.Pipeline, largest, int64(largest)*2*n.Pipeline.BatchBytes()); err != nil {
			return usagef("--accelerators %d: %v", largest, err)
		}
	}
	rank, err := rankOptions()
	if err != nil {
		return err
	}
	// The profile: one rank alone.
	var recs []*benchfmt.Result
	total := n.Count
	if a.verify {
		total += n.Count * len(a.accelerators)
	}
	s := driver.Begin(nil, stderr, total, nil)
	defer s.Finish()
	env := workloads.Env{Rank: rank, Start: s.Start, Result: s.Result}
	prof, runErr := n.Run(ctx, env)
	for _, r := range prof {
		c := *r
		c.Name = benchfmt.Name("Benchmark" + profilePrefix + strings.TrimPrefix(string(r.Name), "BenchmarkNode/"))
		recs = append(recs, &c)
	}
	if runErr == nil && a.verify {
		v := n
		v.Accelerators = a.accelerators
		var made []*benchfmt.Result
		made, runErr = v.Run(ctx, env)
		recs = append(recs, made...)
	}
	if err := s.End(runErr); err != nil {
		return err
	}
	if s.Interrupted() {
		return s.Err("")
	}
	memPerRank := n.Pipeline.MemoryEstimate() + 2*n.Pipeline.BatchBytes()
	avail, _ := machine.Memory()
	p, err := whatIfNodeProfile(recs, float64(runtime.NumCPU()), n.Pipeline.Batch, n.Pipeline.Workers, n.Device, memPerRank, avail, a.pf)
	if err != nil {
		return err
	}
	recs = append(recs, predictionRecords(p, a.accelerators, recs)...)
	if a.out != "" {
		settings := append(n.Settings(),
			resultfile.Config{Key: minAUKey, Value: fmt.Sprint(a.minAU)},
			resultfile.Config{Key: memoryPerRankKey, Value: strconv.FormatInt(memPerRank, 10)},
			resultfile.Config{Key: memoryAvailableKey, Value: strconv.FormatInt(avail, 10)},
			resultfile.Config{Key: "command", Value: a.command},
		)
		wrote, err := s.Write(resultsOut, driver.Settings("emulated", settings), recs)
		if err != nil {
			return err
		}
		keptNote(stdout, a.out, wrote)
		defer fmt.Fprintf(stdout, "results: %s\n", wrote)
	}
	return writeWhatIfNode(stdout, recs, p, a)
}

var nodeWhatIfReport = atomicfile.Report("node what-if report")

// whatIfNodeProfile is the node model's profile from the profile's run.
func whatIfNodeProfile(recs []*benchfmt.Result, cores float64, batch, workers int, dev device.EmulatedConfig, memPerRank, avail int64, pf *pipelineFlags) (node.Profile, error) {
	p, err := node.ProfileOf(profileRecords(recs), 1, cores, batch, workers, dev.Step)
	if err != nil {
		return p, err
	}
	p.MemoryPerRank, p.Memory = memPerRank, avail
	if pf != nil && pf.data.link != nil {
		lc := pf.data.link.Config()
		p.LinkBandwidth, p.LinkRequestRate = float64(lc.Bandwidth), lc.RequestRate
	}
	return p, nil
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

// verifyRecords are recs' Node/ records (the --verify runs).
func verifyRecords(recs []*benchfmt.Result) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, r := range recs {
		if _, _, ok := node.ParsePointName(string(r.Name)); ok {
			out = append(out, r)
		}
	}
	return out
}

// predictionRecords are the model's AU at each count, with the measured
// AU (the smallest rank's, median over runs) and the error where a
// verify run measured the count.
func predictionRecords(p node.Profile, accelerators []int, recs []*benchfmt.Result) []*benchfmt.Result {
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

// writeWhatIfNode prints the prediction (and the verification) from
// recs, and writes the report and the plot: the same from a run and from
// --from.
func writeWhatIfNode(stdout io.Writer, recs []*benchfmt.Result, p node.Profile, a whatIfNode) error {
	accs := a.accelerators
	predicted := map[int]float64{}
	for _, n := range accs {
		predicted[n] = p.PredictAU(n)
	}
	var b strings.Builder
	threads := "not sampled"
	if p.OtherThreads >= 0 {
		threads = fmt.Sprintf("%.3g", p.OtherThreads)
	}
	fmt.Fprintf(&b, "node what-if from one rank alone: %.4g samples/s asked per accelerator (batch %d, step %v, %s a rank), %v CPU a sample, AU %.3f; %.3g cores; other processes: %.3g cores used, runnable threads %s\n\n",
		p.Demand(), p.Batch, p.Step, plural(p.Workers, "worker"), p.CPUPerSample.Round(1000), p.AU, p.Cores, max(p.OtherCores, 0), threads)
	rows := node.Rows(verifyRecords(recs))
	fmt.Fprintf(&b, "%12s %12s %12s %8s\n", "accelerators", "predicted-au", "measured-au", "error")
	var errs []float64
	for _, n := range accs {
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
		fmt.Fprintf(&b, "%12d %12.3f %12s %8s\n", n, predicted[n], meas, e)
	}
	if len(errs) > 0 {
		fmt.Fprintf(&b, "\nmedian error on AU over %d accelerator counts: %.1f%% (worst %.1f%%)\n", len(errs), summary.Median(slices.Clone(errs)), summary.Max(errs))
	}
	limit := slices.Max(accs)
	fmt.Fprintf(&b, "\npredicted %s (every rank's AU ≥ %.2f, up to %d)\n", node.AnswerLine(p.MaxAccelerators(a.minAU, limit)), a.minAU, limit)
	if len(rows) > 0 {
		fmt.Fprintf(&b, "measured %s\n", node.AnswerLine(node.MaxAccelerators(rows, a.minAU)))
	}
	bounds := p.Bounds(a.minAU)
	fmt.Fprintf(&b, "runs out first: %s at %.2f accelerators\n", bounds[0].Resource, bounds[0].Accelerators)
	if err := node.WriteBounds(&b, bounds); err != nil {
		return err
	}
	target := a.target
	if target == 0 {
		target = limit
	}
	fmt.Fprintf(&b, "\n%d accelerators at AU %.2f would take:\n", target, a.minAU)
	for _, need := range p.Needs(target, a.minAU) {
		fmt.Fprintf(&b, "  %-9s %s\n", need.Resource, need.Need)
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if a.report != "" {
		md := "# A node of accelerators: predicted and measured\n\nMade with:\n\n    " + a.command + "\n\n```\n" + b.String() + "```\n"
		if err := atomicfile.WriteKindBytes(a.report, nodeWhatIfReport, []byte(md)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "report: %s\n", a.report)
	}
	if a.plotPath != "" {
		plotRows := rows
		if len(plotRows) == 0 {
			for _, n := range accs {
				plotRows = append(plotRows, node.Row{Accelerators: n, AU: math.NaN(), AUMin: math.NaN(), HostAU: math.NaN()})
			}
		}
		if err := node.SavePlot(a.plotPath, "AU against accelerators: predicted from one rank, and measured", plotRows, predicted, nil, a.minAU); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s\n", a.plotPath)
	}
	return nil
}

// isNodeWhatIf says whether path is a result file of whatif
// --accelerators (it holds a node profile).
func isNodeWhatIf(path string) bool {
	recs, err := resultfile.Read(path)
	return err == nil && len(profileRecords(recs)) > 0
}
