package ownloop

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// NodeReport is the headspace analysis of a node's ranks: each rank's
// (Report), and the node's answer: the slowest rank and the spread
// between the ranks, whether the node is input-bound and the stage in
// the way (the slowest rank's), and what it would take, from the model
// of `whatif --accelerators` (node.Profile).
type NodeReport struct {
	Command  Command
	Settings Settings
	Run      *Run
	Ranks    []Report // by rank
	// AU is each rank's accelerator utilisation as `headspace node`
	// defines it: compute time over total time, here the rank's step on
	// cached batches over its step with the loader.
	AU []float64
	// Pace is each rank's loader time a batch: a batch every Pace from
	// its workers (their time a batch over their number), or where the
	// stages were not timed, its wait a step.
	Pace []time.Duration
	// Slowest is the rank whose loader is slowest: the one the others
	// wait for in their collectives. Spread is its pace over the
	// fastest rank's, less 1, in %.
	Slowest int
	Spread  float64
	// Switch is each rank's first step on cached batches (-1: none).
	Switch []int
	// Model is the node model's profile of a rank, from the slowest
	// rank's stages (HasModel false where they were not timed), and
	// NeedWorkers the workers a rank that the slowest rank's loader
	// needs to keep up with its step.
	Model       node.Profile
	HasModel    bool
	NeedWorkers int
}

// minAU is the node's answer's target: MLPerf Storage's, as `headspace
// node`'s.
const minAU = node.DefaultMinAU

// AnalyzeRanks analyses each rank of a node's run (Analyze) and the node.
func AnalyzeRanks(cmd Command, s Settings, run *Run, totalSteps int) (NodeReport, error) {
	nr := NodeReport{Command: cmd, Settings: s, Run: run}
	if len(run.Ranks) == 0 {
		return nr, fmt.Errorf("%w: the run has no ranks", ErrNoLoader)
	}
	for r, rr := range run.Ranks {
		if rr == nil {
			return nr, fmt.Errorf("rank %d reported nothing", r)
		}
		rep, err := Analyze(cmd, s, rr, totalSteps)
		if err != nil {
			return nr, fmt.Errorf("rank %d: %w", r, err)
		}
		nr.Ranks = append(nr.Ranks, rep)
		au := 0.0
		if rep.Before.Median > 0 {
			au = min(1, float64(rep.After.Median)/float64(rep.Before.Median))
		}
		nr.AU = append(nr.AU, au)
		nr.Switch = append(nr.Switch, SwitchStep(rr))
	}
	timed := true
	for _, rep := range nr.Ranks {
		timed = timed && rep.Stages.Batches > 0
	}
	for _, rep := range nr.Ranks {
		pace := rep.Stages.Wait
		if timed {
			pace = rep.Stages.PerBatch() / time.Duration(max(1, rep.Stages.Workers))
		}
		nr.Pace = append(nr.Pace, pace)
	}
	lo := 0
	for r, p := range nr.Pace {
		if p > nr.Pace[nr.Slowest] {
			nr.Slowest = r
		}
		if p < nr.Pace[lo] {
			lo = r
		}
	}
	if nr.Pace[lo] > 0 {
		nr.Spread = 100 * (float64(nr.Pace[nr.Slowest])/float64(nr.Pace[lo]) - 1)
	}
	for _, rep := range nr.Ranks {
		if w, err := NewWhatIf(rep); err == nil {
			nr.NeedWorkers = max(nr.NeedWorkers, w.NeedWorkers())
		}
	}
	if w, err := NewWhatIf(nr.Ranks[nr.Slowest]); err == nil && w.Step > 0 && w.PerBatch > 0 {
		ld := nr.Ranks[nr.Slowest].Loader
		batch := max(1, ld.BatchSize)
		workers := max(1, ld.Workers)
		nr.Model = node.Profile{Cores: float64(runtime.NumCPU()), OtherThreads: -1, Batch: batch, Workers: workers, Step: w.Step,
			AU:           min(1, float64(workers)*float64(w.Step)/float64(w.PerBatch)),
			CPUPerSample: (w.CPUPerBatch + w.MainCPUPerStep) / time.Duration(batch)}
		nr.HasModel = nr.Model.Validate() == nil
	}
	return nr, nil
}

// SwitchStep is the index of a run's first step on cached batches, as
// the hook said it (the step's phase may say epoch instead), else its
// first step marked cached; -1 where it has none.
func SwitchStep(run *Run) int {
	if run.SwitchAt > 0 {
		return run.SwitchAt - 1
	}
	first := -1
	for _, st := range run.Steps {
		if st.Phase == "cached" && (first < 0 || st.Index < first) {
			first = st.Index
		}
	}
	return first
}

// Lockstep says every rank switched to cached batches at the same step.
func (nr NodeReport) Lockstep() bool {
	for _, s := range nr.Switch {
		if s != nr.Switch[0] {
			return false
		}
	}
	return true
}

// Verdict is the node's: the slowest rank's, which every rank waits for.
func (nr NodeReport) Verdict() analysis.Verdict { return nr.Ranks[nr.Slowest].Verdict }

// WriteText prints the node's answer, then each rank's analysis.
func (nr NodeReport) WriteText(w io.Writer) {
	rep0 := nr.Ranks[0]
	fmt.Fprintf(w, "command: %s\n", nr.Command)
	st := nr.Run.Start
	fmt.Fprintf(w, "python %s (%s), torch %s", st.Python, st.Executable, st.Torch)
	if st.Torchvision != "" {
		fmt.Fprintf(w, ", torchvision %s", st.Torchvision)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "loader %s: the training loop's in each rank: cached and timed\n", rep0.Loader)
	if rep0.Partial {
		fmt.Fprintf(w, "partial: the ranks ended after %d of %d steps\n", nr.Run.fewestSteps(), nr.Settings.Total())
	}
	fmt.Fprintf(w, "\nnode: %d ranks (%s), %d steps from the loader, then %d on %d cached batches\n", len(nr.Ranks), nr.launcher(), nr.Settings.ReturnCachesAfter, nr.Settings.StepsAfter, nr.Settings.NumCaches)
	if nr.Lockstep() {
		fmt.Fprintf(w, "  every rank switched to cached batches at step %d\n", nr.Switch[0])
	} else {
		fmt.Fprintf(w, "  the ranks switched to cached batches at different steps: %v\n", nr.Switch)
	}
	fmt.Fprintf(w, "  %-5s %12s %12s %10s %6s %12s %14s  %s\n", "rank", "step before", "cached", "headspace", "AU", "wait a step", "a batch every", "its loader's longest stage")
	for r, rep := range nr.Ranks {
		fmt.Fprintf(w, "  %-5d %12s %12s %9.1f%% %6.2f %12s %14s  %s\n", r, report.Ms(rep.Before.Median, 1), report.Ms(rep.After.Median, 1), rep.HeadspacePercent(), nr.AU[r], report.Ms(rep.Stages.Wait, 1), report.Ms(nr.Pace[r], 1), longestStage(rep.Stages))
	}
	v := nr.Verdict()
	fmt.Fprintf(w, "\nslowest rank: %d — its loader gives a batch every %s, the fastest rank's every %s: spread %.0f%%\n",
		nr.Slowest, report.Ms(nr.Pace[nr.Slowest], 1), report.Ms(slices0Min(nr.Pace), 1), nr.Spread)
	fmt.Fprintf(w, "verdict: %s (the slowest rank's: the others wait for it in their collectives); the stage in the way: rank %d's %s\n  %s\n", v.Class, nr.Slowest, v.Stage, v.Reason)
	nr.whatIf().writeModel(w)
	for r, rep := range nr.Ranks {
		fmt.Fprintf(w, "\n--- rank %d ---\n", r)
		rep.Report.WriteText(w)
	}
}

// longestStage is the loader's stage that takes the longest a batch
// (wall time), "not timed" where the stages were not.
func longestStage(st Stages) string {
	name, most := "not timed", time.Duration(-1)
	for _, p := range st.parts(false) {
		if p.d > most {
			name, most = p.name, p.d
		}
	}
	return name
}

func slices0Min(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = min(m, d)
	}
	return m
}

func (nr NodeReport) launcher() string { return launcherName(nr.Command) }

// launcherName is what started a node's ranks: the command's launcher,
// else the script's own torch.multiprocessing.spawn.
func launcherName(c Command) string {
	if c.Launcher != "" {
		return c.Launcher
	}
	return "torch.multiprocessing.spawn"
}

// NeedCores is the cores the node's ranks need at AU minAU with the
// workers they need (the model's), 0 without a model.
func (nr NodeReport) NeedCores() float64 {
	if !nr.HasModel {
		return 0
	}
	n := float64(len(nr.Ranks))
	return minAU * n * nr.Model.Demand() * nr.Model.CPUPerSample.Seconds()
}

// Records are each rank's records (Report.Records) with /rank=R last in
// their names and the rank's AU, its loader's pace and its switch step
// among its estimates, then the node's: BenchmarkOwnLoopAnalyzeNode/
// script=…/ranks=N with the mean and smallest AU, the slowest rank, the
// spread, rank 0's switch step, what it would take and the node model's
// profile of a rank (model-…) and the workers the slowest rank needs
// (rank-need-workers).
func (nr NodeReport) Records() []*benchfmt.Result {
	var out []*benchfmt.Result
	for r, rep := range nr.Ranks {
		for _, rec := range rep.Records() {
			if strings.HasPrefix(string(rec.Name), "BenchmarkOwnLoopAnalyzeInput/") {
				rec.Values = append(rec.Values, benchfmt.Value{Value: nr.AU[r], Unit: "au"}, benchfmt.Value{Value: float64(nr.Pace[r]), Unit: "pace-ns"},
					benchfmt.Value{Value: float64(nr.Switch[r]), Unit: "switch-step"})
			}
			rec.Name = benchfmt.Name(string(rec.Name) + "/rank=" + strconv.Itoa(r))
			out = append(out, rec)
		}
	}
	mean, lo := 0.0, math.Inf(1)
	for _, au := range nr.AU {
		mean += au / float64(len(nr.AU))
		lo = min(lo, au)
	}
	vals := []benchfmt.Value{{Value: mean, Unit: "au"}, {Value: lo, Unit: "au-min"}, {Value: float64(nr.Slowest), Unit: "slowest-rank"},
		{Value: nr.Spread, Unit: "spread-%"}, {Value: float64(nr.Switch[0]), Unit: "switch-step"}}
	if p := nr.Model; nr.HasModel {
		vals = append(vals, benchfmt.Value{Value: float64(max(nr.NeedWorkers, nr.Model.Workers)), Unit: "need-workers"},
			benchfmt.Value{Value: nr.NeedCores(), Unit: "need-cores"}, benchfmt.Value{Value: nr.Model.PredictAU(len(nr.Ranks)), Unit: "predicted-au"},
			benchfmt.Value{Value: float64(nr.NeedWorkers), Unit: "rank-need-workers"}, benchfmt.Value{Value: p.Cores, Unit: "model-cores"},
			benchfmt.Value{Value: float64(p.Batch), Unit: "model-batch"}, benchfmt.Value{Value: float64(p.Workers), Unit: "model-workers"},
			benchfmt.Value{Value: float64(p.Step), Unit: "model-step-ns"}, benchfmt.Value{Value: p.AU, Unit: "model-au"},
			benchfmt.Value{Value: float64(p.CPUPerSample), Unit: "model-cpu-ns/sample"})
	}
	out = append(out, &benchfmt.Result{Name: benchfmt.Name(fmt.Sprintf("BenchmarkOwnLoopAnalyzeNode/script=%s/ranks=%d", benchKey(nr.Command.Name()), len(nr.Ranks))),
		Iters: 1, Values: vals})
	return out
}

// ConfigLines are the node's file's configuration: the command's (from
// rank 0's run), the launcher and the ranks, and the analysis's settings.
func (nr NodeReport) ConfigLines() []resultfile.Config {
	out := nr.Ranks[0].ConfigLines()
	return append(out, resultfile.Config{Key: "launcher", Value: nr.launcher()}, resultfile.Config{Key: "ranks", Value: strconv.Itoa(len(nr.Ranks))})
}
