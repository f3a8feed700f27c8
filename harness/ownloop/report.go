package ownloop

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Stages are the training loader's stages as the hook timed them over
// the steps fed by the loader: means per sample and per batch.
type Stages struct {
	Batches   int           // batches the workers reported
	Samples   int           // samples in them
	GetItem   time.Duration // per sample: the dataset's __getitem__
	Load      time.Duration // per sample: its .loader (Split only)
	Transform time.Duration // per sample: its .transform (Split only)
	Split     bool          // the dataset has .loader (torchvision-style)
	Iterable  bool          // an IterableDataset: GetItem is its __iter__'s time a sample
	Collate   time.Duration // per batch
	Pin       time.Duration // per batch, pin-memory in the main process (0: none)
	Wait      time.Duration // per step: the loop's wait for its batch
	// The same stages' CPU time (of the worker's thread): on a shared
	// machine their wall times above include waiting for a core.
	GetItemCPU, LoadCPU, TransformCPU, CollateCPU time.Duration
	WorkerCPU                                     time.Duration // the workers' CPU time, summed
	// WorkerRunQueue is the workers' time waiting for a core, summed
	// (Linux; negative where it could not be read).
	WorkerRunQueue time.Duration
	Workers        int
}

// PerBatch is the time one worker takes to make a batch: its samples'
// __getitem__ and its collate.
func (s Stages) PerBatch() time.Duration {
	if s.Batches == 0 {
		return 0
	}
	return s.GetItem*time.Duration(s.Samples)/time.Duration(s.Batches) + s.Collate
}

// Report is the headspace analysis of a user's training command.
type Report struct {
	analysis.Report
	Command  Command
	Settings Settings
	Run      *Run
	Loader   Loader // the training loop's
	Stages   Stages
	Partial  bool // the script ended before every step (--partial)
	// Beside are the loaders that fed every step beside the training
	// loader's (zip), with the loop's wait for their batches a step
	// before the switch.
	Beside []BesideLoader
	// Cores are the machine's cores, which the verdict's text names.
	Cores int
}

// BesideLoader is a loader that fed every step beside the training
// loader, and the loop's wait a step for its batches.
type BesideLoader struct {
	Loader
	Wait time.Duration
}

// besideShare is the share of the training loop's steps a loader must
// feed to be said to feed every step beside the training loader.
const besideShare = 0.9

// minRounds is the fewest rounds each phase needs for an estimate.
const minRounds = 3

// Analyze turns what the hook measured into the headspace analysis: step
// times before and after the switch over whole rounds of the loader's
// workers, the verdict from the loop's input wait and the stage that takes
// the longest per batch. totalSteps is the whole training run's, for the
// time saved. A run that ended early is analysed if each phase has
// enough rounds.
func Analyze(cmd Command, s Settings, run *Run, totalSteps int) (Report, error) {
	return analyze(cmd, s, run, totalSteps, nil, runtime.NumCPU())
}

// Measured is what a result file holds of a run beside its steps: the
// training loader's stages, the loaders that fed every step beside it
// and the machine's cores.
type Measured struct {
	Stages Stages
	Beside []BesideLoader
	Cores  int
}

// Rebuild is the analysis Analyze made of a run, from what its result
// file holds: run's start, loaders and steps (not its batches) and m.
func Rebuild(cmd Command, s Settings, run *Run, totalSteps int, m Measured) (Report, error) {
	return analyze(cmd, s, run, totalSteps, &m, m.Cores)
}

// analyze is Analyze, its stages and the loaders beside the training
// loader from run, or m where it is set.
func analyze(cmd Command, s Settings, run *Run, totalSteps int, m *Measured, cores int) (Report, error) {
	ld, ok := run.Target()
	if !ok {
		return Report{}, fmt.Errorf("%w: the hook named no training loader", ErrNoLoader)
	}
	rep := Report{Command: cmd, Settings: s, Run: run, Loader: ld, Partial: !run.Done, Cores: cores}
	r := &rep.Report
	r.Config = analysis.Config{NumCaches: s.NumCaches, ReturnCachesAfter: s.ReturnCachesAfter, StepsAfter: s.StepsAfter, TotalSteps: totalSteps, Skip: 1}
	r.Round = max(1, ld.Workers)
	r.Switch = s.ReturnCachesAfter
	r.Device = deviceName(run.Start)
	before, after, t := rep.phases()
	if len(before) < minRounds*r.Round || len(after) < minRounds*r.Round {
		return rep, fmt.Errorf("too few steps to estimate: %d from the loader and %d cached, want %d each (%d rounds of %d steps, one per worker)",
			len(before), len(after), minRounds*r.Round, minRounds, r.Round)
	}
	r.Before = analysis.RoundEstimate(before, r.Round)
	r.After = analysis.RoundEstimate(after, r.Round)
	if m == nil {
		rep.Stages = stagesOf(run, ld, t.wait, len(before))
		rep.Beside = run.besideLoaders()
	} else {
		rep.Stages, rep.Beside = m.Stages, m.Beside
	}
	r.Verdict = judge(rep.Stages, t.wait, t.wall, r.Before, r.After, cores)
	rep.besideVerdict(t.other, len(before))
	return rep, nil
}

// waits are the loop's waits over the steps fed by the loader: for the
// training loader's batches, for the other loaders', and the steps' wall
// time.
type waits struct{ wait, other, wall time.Duration }

// phases are the step times in order: of the steps fed by the loader
// (after the first) and of those on cached batches (after the switch),
// with the loop's waits over the first; every step's time and wait go
// to the plot.
func (rep *Report) phases() (before, after []time.Duration, t waits) {
	r, s := &rep.Report, rep.Settings
	steps := slices.Clone(rep.Run.Steps)
	slices.SortFunc(steps, func(a, b Step) int { return a.Index - b.Index })
	for _, st := range steps {
		r.StepTimes = append(r.StepTimes, st.Time)
		r.Waits = append(r.Waits, st.Wait)
		switch {
		case st.Phase == "loader" && st.Index >= r.Config.Skip && st.Index < s.ReturnCachesAfter:
			before = append(before, st.Time)
			t.wait += st.Wait
			t.wall += st.Time
			t.other += st.OtherWait
		case st.Phase == "cached" && st.Index > s.ReturnCachesAfter:
			after = append(after, st.Time)
		}
	}
	return before, after, t
}

// feedsEveryStep says l is not the training loader but fed (nearly)
// every one of its steps.
func (r *Run) feedsEveryStep(l Loader) bool {
	o := r.Others[l.Index]
	return o != nil && !l.Target && len(r.Steps) > 0 && float64(o.Steps) >= besideShare*float64(len(r.Steps))
}

// besideLoaders are the loaders that fed every step beside the
// training loader (zip), with the loop's wait a step for their batches.
func (r *Run) besideLoaders() []BesideLoader {
	var out []BesideLoader
	for _, l := range r.Loaders {
		if r.feedsEveryStep(l) {
			o := r.Others[l.Index]
			out = append(out, BesideLoader{Loader: l, Wait: o.StepWait / time.Duration(max(1, o.Steps))})
		}
	}
	return out
}

// besideVerdict says, where the loop waited longer for the batches of
// the loaders beside the training loader than for its own, that they
// bound it: the verdict's input wait counts both, and its stage is that
// loader.
func (rep *Report) besideVerdict(otherWait time.Duration, steps int) {
	if len(rep.Beside) == 0 || steps == 0 || otherWait/time.Duration(steps) <= rep.Stages.Wait {
		return
	}
	slow := rep.Beside[0]
	for _, b := range rep.Beside[1:] {
		if b.Wait > slow.Wait {
			slow = b
		}
	}
	v := &rep.Verdict
	v.Wait += otherWait
	if v.Wall > 0 {
		v.Share = float64(v.Wait) / float64(v.Wall)
	}
	if c := analysis.Classify(v.Share); c == analysis.HighlyInputBound || v.Class == analysis.NotInputBound {
		v.Class = c
	}
	v.Stage = fmt.Sprintf("loader #%d beside the training loader", slow.Index)
	v.Reason = fmt.Sprintf("loader %s feeds every step beside the training loader (zip), and the loop waited %s a step for its batches against %s for the training loader's: it bounds the loop; caching the training loader leaves it as it is (measure it with --loader %d)",
		slow.Loader, report.Ms(otherWait/time.Duration(steps), 1), report.Ms(rep.Stages.Wait, 1), slow.Index)
}

// Device is the device the run's command trained on, as a result file
// names it: cuda or cpu.
func (r *Run) Device() string { return deviceName(r.Start) }

func deviceName(s Start) string {
	if s.CUDA {
		return "cuda"
	}
	return "cpu"
}

func stagesOf(run *Run, ld Loader, wait time.Duration, steps int) Stages {
	st := Stages{Workers: ld.Workers, Split: ld.Measured.Split, Iterable: ld.Measured.Iterable}
	var getitem, load, transform, collate, getitemCPU, loadCPU, transformCPU, collateCPU time.Duration
	cpu := map[int]time.Duration{}
	runq := map[int]time.Duration{}
	for _, b := range run.Batches {
		runq[b.Worker] = max(runq[b.Worker], b.RunQueue)
		st.Batches++
		st.Samples += b.Samples
		getitem += b.GetItem
		load += b.Load
		transform += b.Transform
		collate += b.Collate
		getitemCPU += b.GetItemCPU
		loadCPU += b.LoadCPU
		transformCPU += b.TransformCPU
		collateCPU += b.CollateCPU
		cpu[b.Worker] = max(cpu[b.Worker], b.CPU)
	}
	if st.Samples > 0 {
		n := time.Duration(st.Samples)
		st.GetItem, st.Load, st.Transform = getitem/n, load/n, transform/n
		st.GetItemCPU, st.LoadCPU, st.TransformCPU = getitemCPU/n, loadCPU/n, transformCPU/n
	}
	if st.Batches > 0 {
		st.Collate = collate / time.Duration(st.Batches)
		st.CollateCPU = collateCPU / time.Duration(st.Batches)
	}
	for w, c := range cpu {
		if w >= 0 { // the main process's CPU is the loop's, not a worker's
			st.WorkerCPU += c
			if runq[w] < 0 {
				st.WorkerRunQueue = -1
			} else if st.WorkerRunQueue >= 0 {
				st.WorkerRunQueue += runq[w]
			}
		}
	}
	var pin time.Duration
	for _, p := range run.Pins {
		pin += p
	}
	if len(run.Pins) > 0 {
		st.Pin = pin / time.Duration(len(run.Pins))
	}
	if steps > 0 {
		st.Wait = wait / time.Duration(steps)
	}
	return st
}

// Contention is how far the share of step time that caching saves must
// exceed the share the loop waits for its batches for the verdict to say
// the loader slows the step itself: its workers take the cores the step
// needs.
const Contention = 0.10

// judge is the verdict: how input-bound by the share of the loop's time
// spent waiting for batches (analysis.Classify), or by the headspace
// where the step itself runs slower beside the loader (its workers share
// the cores: Contention), and the stage in the way: the model step when
// neither, else the stage of the loader that takes the longest per batch.
func judge(st Stages, wait, wall time.Duration, before, after analysis.Estimate, cores int) analysis.Verdict {
	v := analysis.Verdict{Wait: wait, Wall: wall}
	if wall > 0 {
		v.Share = float64(wait) / float64(wall)
	}
	v.Class = analysis.Classify(v.Share)
	cachedStep := after.Median
	contended := false
	if before.Lo > after.Hi && before.Median > 0 {
		if saved := 1 - float64(after.Median)/float64(before.Median); saved-v.Share > Contention {
			contended = true
			v.Class = analysis.Classify(saved)
		}
	}
	parts := st.parts(contended)
	if st.Pin > 0 && len(parts) > 0 {
		parts = append(parts, part{"pin memory", st.Pin})
	}
	var sum time.Duration
	for _, p := range parts {
		sum += p.d
	}
	for _, p := range parts {
		if sum > 0 && float64(p.d)/float64(sum) > v.Busy {
			v.Busiest, v.Busy = p.name, float64(p.d)/float64(sum)
		}
	}
	if v.Class == analysis.NotInputBound && !contended {
		v.Stage = "model step"
		v.Reason = fmt.Sprintf("the training loop waited for its batches only %.1f%% of the time", 100*v.Share)
		return v
	}
	if len(parts) == 0 {
		v.Stage = "the loader"
		v.Reason = "its dataset's time was not measured (a dataset whose class cannot be wrapped, or an iterable that is not a DataLoader)"
		return v
	}
	workers := max(1, st.Workers)
	v.Stage = v.Busiest
	if contended {
		v.Reason = fmt.Sprintf("the loop waited for its batches only %.1f%% of the time, but its steps took %s beside the loader against %s on cached batches: the loader's %d workers (%.2f s of CPU%s) share the machine's %d cores with the step; of their CPU time per batch (%s), %s takes the most",
			100*v.Share, report.Ms(before.Median, 1), report.Ms(cachedStep, 1), st.Workers, st.WorkerCPU.Seconds(), waited(st), cores, breakdown(parts), v.Busiest)
		return v
	}
	who := fmt.Sprintf("each of %d workers takes", workers)
	if st.Workers == 0 {
		who = "the main process (num_workers=0) takes"
	}
	v.Reason = fmt.Sprintf("%s %s a batch (%s), one batch every %s from all of them, against a step of %s on cached batches",
		who, report.Ms(st.PerBatch(), 1), breakdown(parts), report.Ms(st.PerBatch()/time.Duration(workers), 1), report.Ms(cachedStep, 1))
	return v
}

func waited(st Stages) string {
	if st.WorkerRunQueue < 0 {
		return ""
	}
	return fmt.Sprintf(", %.2f s on the run queue", st.WorkerRunQueue.Seconds())
}

// parts are the loader's stages' times a batch: wall time, or with cpu
// the CPU time of the worker's thread (which a shared machine does not
// stretch).
func (st Stages) parts(cpu bool) []part {
	var parts []part
	if st.Batches == 0 || st.Samples == 0 {
		return nil // the dataset's time was not measured: collate alone would mislead
	}
	per := time.Duration(st.Samples) / time.Duration(st.Batches) // samples a batch
	getitem, load, transform, collate := st.GetItem, st.Load, st.Transform, st.Collate
	if cpu {
		getitem, load, transform, collate = st.GetItemCPU, st.LoadCPU, st.TransformCPU, st.CollateCPU
	}
	if st.Split {
		parts = append(parts, part{"dataset .loader (reading and decoding)", load * per}, part{"dataset .transform", transform * per},
			part{"__getitem__ outside .loader and .transform", max(0, getitem-load-transform) * per})
	} else if st.Iterable {
		parts = append(parts, part{"dataset __iter__", getitem * per})
	} else {
		parts = append(parts, part{"dataset __getitem__", getitem * per})
	}
	return append(parts, part{"collate", collate})
}

// part is one stage's time a batch.
type part struct {
	name string
	d    time.Duration
}

func breakdown(parts []part) string {
	var out []string
	for _, p := range parts {
		out = append(out, p.name+" "+report.Ms(p.d, 1))
	}
	return strings.Join(out, ", ")
}

// WriteText prints the report: the command and its interpreter, every
// loader the script iterated with its role, the analysis, the verdict
// and the training loader's stages.
func (r Report) WriteText(w io.Writer) {
	r.writeInterpreter(w)
	for _, l := range r.Run.Loaders {
		fmt.Fprintf(w, "loader %s: %s\n", l, r.loaderRole(l))
	}
	if r.Partial {
		fmt.Fprintf(w, "partial: the script ended after %d of %d steps\n", len(r.Run.Steps), r.Settings.Total())
	}
	fmt.Fprintln(w)
	r.Report.WriteText(w)
	r.Stages.writeText(w)
}

// writeInterpreter prints the command, then its Python (the executable)
// and its torch and torchvision versions.
func (r Report) writeInterpreter(w io.Writer) {
	fmt.Fprintf(w, "command: %s\n", r.Command)
	fmt.Fprintf(w, "python %s (%s), torch %s", r.Run.Start.Python, r.Run.Start.Executable, r.Run.Start.Torch)
	if r.Run.Start.Torchvision != "" {
		fmt.Fprintf(w, ", torchvision %s", r.Run.Start.Torchvision)
	}
	fmt.Fprintln(w)
}

// loaderRole is what loader l was to the analysis: the training loop's
// (with the loaders cached beside it), one cached with it, one that fed
// every step beside it (zip), one whose steps trained nothing, or one
// iterated as it is.
func (r Report) loaderRole(l Loader) string {
	role := "iterated as it is"
	if l.Target {
		role = "the training loop's: cached and timed"
		var with []string
		for _, m := range r.Run.Members() {
			with = append(with, fmt.Sprintf("#%d", m.Index))
		}
		if len(with) > 0 {
			role += fmt.Sprintf(", with %s cached from the same step", strings.Join(with, ", "))
		}
	}
	if l.Group != 0 && !l.Target {
		role = fmt.Sprintf("the training loop's, beside #%d: cached from the same step, its waits in the step's and its stages with #%d's", l.Group, l.Group)
	}
	for _, b := range r.Beside {
		if b.Index == l.Index {
			role = fmt.Sprintf("iterated as it is; it feeds every step beside the training loader (zip): the loop waits %s a step for it", us(b.Wait))
		}
	}
	if l.Index == r.Run.Retarget.From {
		role = "iterated as it is: its steps trained nothing (no backward pass) while the training loop's do (a statistics pass, a peek)"
	}
	return role
}

// writeText prints the training loader's stages over the steps it fed:
// their wall and CPU times, the workers', pin-memory's and the loop's
// wait.
func (st Stages) writeText(w io.Writer) {
	fmt.Fprintln(w, "stages of the training loader, over the steps it fed:")
	if st.Batches == 0 {
		fmt.Fprintln(w, "  not timed (an iterable that is not a DataLoader, or a dataset whose class cannot be wrapped)")
	} else {
		st.writeTimes(w)
	}
	if st.Pin > 0 {
		fmt.Fprintf(w, "  pin memory %s a batch\n", us(st.Pin))
	}
	fmt.Fprintf(w, "  the loop's wait for a batch: %s a step\n", us(st.Wait))
}

// writeTimes prints the timed stages' lines: __getitem__ (or __iter__)
// a sample and collate a batch, wall time then CPU time, and the
// workers' CPU time and time on the run queue.
func (st Stages) writeTimes(w io.Writer) {
	get := "__getitem__"
	if st.Iterable {
		get = "__iter__"
	}
	fmt.Fprintf(w, "  %s %s a sample", get, us(st.GetItem))
	if st.Split {
		fmt.Fprintf(w, " (.loader %s, .transform %s)", us(st.Load), us(st.Transform))
	}
	fmt.Fprintf(w, "; collate %s a batch; %d batches, %d samples\n", us(st.Collate), st.Batches, st.Samples)
	fmt.Fprintf(w, "  of which CPU: %s %s a sample", get, us(st.GetItemCPU))
	if st.Split {
		fmt.Fprintf(w, " (.loader %s, .transform %s)", us(st.LoadCPU), us(st.TransformCPU))
	}
	fmt.Fprintf(w, "; collate %s a batch\n", us(st.CollateCPU))
	fmt.Fprintf(w, "  workers: %d, CPU time %.2f s in all", st.Workers, st.WorkerCPU.Seconds())
	if st.WorkerRunQueue >= 0 {
		fmt.Fprintf(w, ", %.2f s on the run queue", st.WorkerRunQueue.Seconds())
	}
	fmt.Fprintln(w)
}

func us(d time.Duration) string {
	if d >= time.Millisecond {
		return report.Ms(d, 1)
	}
	return fmt.Sprintf("%.0f µs", float64(d)/1e3)
}

// Records are the analysis's result-file records (workloads'
// OwnLoopAnalyzeCodec reads them back): each loader the script iterated
// (OwnLoopAnalyzeLoader/script=…/loader=N: its batch size, workers and
// group, whether it is the training loop's, the loop's wait a step for
// it where it fed every step beside the training loader), every step in
// order (OwnLoopAnalyze/script=…/phase=fill|loader|switch|cached|epoch,
// ns/op and the wait, wait-ns, and other-wait-ns where the loop waited
// for other loaders' batches), the estimates (OwnLoopAnalyzeInput/
// script=…: the input wait and wall time of the loader's steps, the step
// time before and after, the headspace in %, the machine's cores and the
// loader first measured where another took its place), and each stage
// (OwnLoopAnalyzeStage/script=…/stage=…; the workers' with the batches
// and samples timed and whether the dataset is iterable).
func (r Report) Records() []*benchfmt.Result {
	name := "script=" + benchKey(r.Command.Name())
	out := r.loaderRecords(name)
	out = append(out, r.stepRecords(name)...)
	v := r.Verdict
	vals := []benchfmt.Value{{Value: float64(v.Wait), Unit: "input-wait-ns"}, {Value: float64(v.Wall), Unit: "wall-ns"},
		{Value: float64(r.Before.Median), Unit: "step-ns"}, {Value: float64(r.After.Median), Unit: "cached-step-ns"},
		{Value: r.HeadspacePercent(), Unit: "headspace-%"}, {Value: float64(r.Cores), Unit: "cores"}}
	if from := r.Run.Retarget.From; from != 0 {
		vals = append(vals, benchfmt.Value{Value: float64(from), Unit: "retarget-from"})
	}
	out = append(out, &benchfmt.Result{Name: benchfmt.Name("BenchmarkOwnLoopAnalyzeInput/" + name), Iters: 1, Values: vals})
	return append(out, r.Stages.records(name)...)
}

// loaderRecords are the records of the loaders the script iterated.
func (r Report) loaderRecords(name string) []*benchfmt.Result {
	var out []*benchfmt.Result
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, l := range r.Run.Loaders {
		vals := []benchfmt.Value{{Value: float64(l.BatchSize), Unit: "batch-size"}, {Value: float64(l.Workers), Unit: "workers"},
			{Value: float64(l.Group), Unit: "group"}, {Value: flag(l.Target), Unit: "training"}}
		for _, b := range r.Beside {
			if b.Index == l.Index {
				vals = append(vals, benchfmt.Value{Value: float64(b.Wait), Unit: "beside-wait-ns"})
			}
		}
		out = append(out, &benchfmt.Result{Name: benchfmt.Name(fmt.Sprintf("BenchmarkOwnLoopAnalyzeLoader/%s/loader=%d", name, l.Index)), Iters: 1, Values: vals})
	}
	return out
}

// stepRecords are the records of the run's steps, in order.
func (r Report) stepRecords(name string) []*benchfmt.Result {
	prefix := "BenchmarkOwnLoopAnalyze/" + name + "/phase="
	var out []*benchfmt.Result
	steps := slices.Clone(r.Run.Steps)
	slices.SortFunc(steps, func(a, b Step) int { return a.Index - b.Index })
	for _, st := range steps {
		phase := st.Phase
		switch {
		case st.Index == 0:
			phase = "fill"
		case st.Index == r.Switch && phase == "cached":
			phase = "switch"
		}
		vals := []benchfmt.Value{{Value: float64(st.Time), Unit: "ns/op"}, {Value: float64(st.Wait), Unit: "wait-ns"}}
		if st.OtherWait > 0 {
			vals = append(vals, benchfmt.Value{Value: float64(st.OtherWait), Unit: "other-wait-ns"})
		}
		out = append(out, &benchfmt.Result{Name: benchfmt.Name(prefix + phase), Iters: 1, Values: vals})
	}
	return out
}

// records are the stages' records.
func (st Stages) records(name string) []*benchfmt.Result {
	var out []*benchfmt.Result
	stage := func(s string, vals ...benchfmt.Value) {
		out = append(out, &benchfmt.Result{Name: benchfmt.Name("BenchmarkOwnLoopAnalyzeStage/" + name + "/stage=" + s), Iters: 1, Values: vals})
	}
	if st.Batches > 0 {
		stage("getitem", benchfmt.Value{Value: float64(st.GetItem), Unit: "getitem-ns/sample"}, benchfmt.Value{Value: float64(st.GetItemCPU), Unit: "getitem-cpu-ns/sample"})
		if st.Split {
			stage("load", benchfmt.Value{Value: float64(st.Load), Unit: "load-ns/sample"}, benchfmt.Value{Value: float64(st.LoadCPU), Unit: "load-cpu-ns/sample"})
			stage("transform", benchfmt.Value{Value: float64(st.Transform), Unit: "transform-ns/sample"}, benchfmt.Value{Value: float64(st.TransformCPU), Unit: "transform-cpu-ns/sample"})
		}
		stage("collate", benchfmt.Value{Value: float64(st.Collate), Unit: "collate-ns/batch"}, benchfmt.Value{Value: float64(st.CollateCPU), Unit: "collate-cpu-ns/batch"})
		iterable := 0.0
		if st.Iterable {
			iterable = 1
		}
		stage("workers", benchfmt.Value{Value: float64(st.WorkerCPU), Unit: "worker-cpu-ns"}, benchfmt.Value{Value: float64(st.Workers), Unit: "workers"},
			benchfmt.Value{Value: float64(st.WorkerRunQueue), Unit: "worker-runqueue-ns"}, benchfmt.Value{Value: float64(st.Batches), Unit: "batches"},
			benchfmt.Value{Value: float64(st.Samples), Unit: "samples"}, benchfmt.Value{Value: iterable, Unit: "iterable"})
	}
	if st.Pin > 0 {
		stage("pin", benchfmt.Value{Value: float64(st.Pin), Unit: "pin-ns/batch"})
	}
	stage("wait", benchfmt.Value{Value: float64(st.Wait), Unit: "wait-ns/step"})
	return out
}

// benchKey makes s safe in a benchmark name's key=value part.
func benchKey(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\t' || r == '=' {
			return '_'
		}
		return r
	}, s)
}

// ConfigLines is the configuration block of the result file: the command,
// the interpreter and torch, the executable, every loader, the analysis's settings.
func (r Report) ConfigLines() []resultfile.Config {
	out := CommandConfig(r.Command, r.Run)
	return append(out,
		resultfile.Config{Key: "executable", Value: r.Run.Start.Executable},
		resultfile.Config{Key: "num-caches", Value: strconv.Itoa(r.Settings.NumCaches)},
		resultfile.Config{Key: "return-caches-after", Value: strconv.Itoa(r.Settings.ReturnCachesAfter)},
		resultfile.Config{Key: "steps-after", Value: strconv.Itoa(r.Settings.StepsAfter)},
		resultfile.Config{Key: "total-steps", Value: strconv.Itoa(r.Config.TotalSteps)},
		resultfile.Config{Key: "round-steps", Value: strconv.Itoa(r.Round)},
	)
}

// CommandConfig is what every result of a command records: the command
// line, the interpreter and its versions, the script's commit where it is
// in a git tree, every loader it iterated and, for a node's run, what
// started its ranks and how many.
func CommandConfig(c Command, run *Run) []resultfile.Config {
	out := []resultfile.Config{
		{Key: "command", Value: oneLine(c.String())},
		{Key: "interpreter", Value: c.Interpreter},
		{Key: "python", Value: run.Start.Python},
		{Key: "torch", Value: run.Start.Torch},
	}
	if run.Start.Torchvision != "" {
		out = append(out, resultfile.Config{Key: "torchvision", Value: run.Start.Torchvision})
	}
	if commit := scriptCommit(c); commit != "" {
		out = append(out, resultfile.Config{Key: "script-commit", Value: commit})
	}
	for _, l := range run.lead().Loaders {
		v := l.String()
		switch {
		case l.Target:
			v += " (training)"
		case run.feedsEveryStep(l):
			v += " (feeds every step beside the training loader)"
		case l.Index == run.Retarget.From:
			v += " (its steps trained nothing: not the training loop)"
		}
		out = append(out, resultfile.Config{Key: "loader-" + strconv.Itoa(l.Index), Value: oneLine(v)})
	}
	if len(run.Ranks) > 0 {
		// A node's run (whatif's, ladder's): what started its ranks, and
		// how many.
		out = append(out, resultfile.Config{Key: "launcher", Value: launcherName(c)}, resultfile.Config{Key: "ranks", Value: strconv.Itoa(len(run.Ranks))})
	}
	return out
}

func oneLine(s string) string { return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s) }

// scriptCommit is the commit of the git tree the script is in ("" if
// none), with "-dirty" when the tree has changes: so that compare and
// history tell the user's revisions apart.
func scriptCommit(c Command) string {
	if c.Module {
		return ""
	}
	dir := filepath.Dir(c.Script)
	head, err := exec.Command("git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(head))
	if st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		commit += "-dirty"
	}
	return commit
}
