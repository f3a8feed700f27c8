package ownloop

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"github.com/headspace-bench/headspace/harness/report"
)

// WhatIf is what it would take to make the script's model step the bound,
// from one analysis's measured stage times: a CPU-budget model of the
// loader (each worker makes a batch in FreePerBatch with a core to
// itself, of which CPUPerBatch on the CPU; the loop's step takes Step and
// MainCPUPerStep of CPU) on the machine's Cores. The predictions use the
// per-batch time as measured on this machine (PerBatch, its waits for a
// core included: the verification runs on the same machine); FreePerBatch
// says how much of it was the wait.
type WhatIf struct {
	Step           time.Duration // the step on cached batches: the model's bound
	PerBatch       time.Duration // one worker's wall time a batch, as measured
	FreePerBatch   time.Duration // PerBatch less its wait on the run queue
	CPUPerBatch    time.Duration // one batch's CPU time in a worker
	MainCPUPerStep time.Duration // the main process's CPU a cached step (0: not measured)
	Workers        int           // the script's
	Cores          int
	// Stage is the loader's stage that takes the longest a batch, and
	// StageTime its time.
	Stage     string
	StageTime time.Duration
}

// NewWhatIf reads the model from an analysis.
func NewWhatIf(r Report) (WhatIf, error) {
	st := r.Stages
	if st.Batches == 0 {
		return WhatIf{}, fmt.Errorf("the loader's stages were not timed (an iterable that is not a DataLoader, or a dataset whose class cannot be wrapped): nothing to model")
	}
	if m := r.Run.Members(); len(m) > 0 {
		return WhatIf{}, fmt.Errorf("the training loop takes a batch of %d loaders a step (a CombinedLoader): the model is of one loader, one batch a step: not modelled this round", len(m)+1)
	}
	w := WhatIf{Step: r.After.Median, PerBatch: st.PerBatch(), Workers: st.Workers, Cores: runtime.NumCPU()}
	per := time.Duration(st.Samples) / time.Duration(st.Batches)
	w.CPUPerBatch = st.GetItemCPU*per + st.CollateCPU
	w.FreePerBatch = w.PerBatch
	if st.WorkerRunQueue > 0 {
		w.FreePerBatch = max(w.CPUPerBatch, w.PerBatch-st.WorkerRunQueue/time.Duration(st.Batches))
	}
	if a, ok := r.Run.MainCPU[r.Settings.ReturnCachesAfter]; ok {
		if b, ok := r.Run.MainCPU[r.Settings.Total()]; ok && b > a && r.Settings.StepsAfter > 0 {
			w.MainCPUPerStep = (b - a) / time.Duration(r.Settings.StepsAfter)
		}
	}
	for _, p := range st.parts(false) {
		if p.d > w.StageTime {
			w.Stage, w.StageTime = p.name, p.d
		}
	}
	return w, nil
}

// StepsPerSec predicts the loop's steps/s with workers workers on cores
// cores: the least of the model's bound, the workers' rate, and the
// cores' CPU budget for a step and its batch.
func (w WhatIf) StepsPerSec(workers, cores int) float64 {
	rate := 1 / w.Step.Seconds()
	if workers > 0 && w.PerBatch > 0 {
		rate = min(rate, float64(workers)/w.PerBatch.Seconds())
	}
	if cpu := (w.CPUPerBatch + w.MainCPUPerStep).Seconds(); cpu > 0 && cores > 0 {
		rate = min(rate, float64(cores)/cpu)
	}
	return rate
}

// NeedWorkers is the fewest workers whose batches keep up with the step.
func (w WhatIf) NeedWorkers() int {
	if w.Step <= 0 {
		return w.Workers
	}
	return max(1, int(math.Ceil(float64(w.PerBatch)/float64(w.Step))))
}

// NeedCores is the cores the step and the workers' batches need at the
// model's bound.
func (w WhatIf) NeedCores() float64 {
	if w.Step <= 0 {
		return 0
	}
	return float64(w.CPUPerBatch+w.MainCPUPerStep) / float64(w.Step)
}

// WriteText prints what it would take.
func (w WhatIf) WriteText(out io.Writer) {
	fmt.Fprintf(out, "what it would take (from the measured stages):\n")
	fmt.Fprintf(out, "  the model's bound: %s a step (%.2f steps/s) on cached batches\n", report.Ms(w.Step, 1), 1/w.Step.Seconds())
	fmt.Fprintf(out, "  a worker makes a batch in %s (%s with a core of its own), %s of it on the CPU\n", report.Ms(w.PerBatch, 1), report.Ms(w.FreePerBatch, 1), report.Ms(w.CPUPerBatch, 1))
	if w.MainCPUPerStep > 0 {
		fmt.Fprintf(out, "  the loop's own CPU: %s a step\n", report.Ms(w.MainCPUPerStep, 1))
	}
	fmt.Fprintf(out, "  now: %d workers on %d cores, predicted %.2f steps/s\n", w.Workers, w.Cores, w.StepsPerSec(w.Workers, w.Cores))
	need, cores := w.NeedWorkers(), w.NeedCores()
	fmt.Fprintf(out, "  to make the model the bound: %d workers and %.1f cores", need, cores)
	if need <= w.Workers && cores <= float64(w.Cores) {
		fmt.Fprintf(out, ": this machine has them already\n")
		return
	}
	fmt.Fprintf(out, "; with %d workers on these %d cores: %.2f steps/s\n", need, w.Cores, w.StepsPerSec(need, w.Cores))
	if need, over := w.StageNeed(); need > 0 {
		fmt.Fprintf(out, "  or, keeping %d workers: %s must take %s a batch instead of %s (%.1f× faster)\n",
			w.Workers, w.Stage, report.Ms(need, 1), report.Ms(w.StageTime, 1), float64(w.StageTime)/float64(need))
	} else if over > 0 {
		fmt.Fprintf(out, "  keeping %d workers, no one stage can make up the %s a batch: more workers or cores it is\n", w.Workers, report.Ms(over, 1))
	}
}

// StageNeed is what Stage must take a batch, keeping the script's
// workers, for the model step to be the bound (0 where nothing needs
// making up, or no one stage can make it up), and the time a batch over
// (0: none).
func (w WhatIf) StageNeed() (need, over time.Duration) {
	if w.Workers <= 0 || w.StageTime <= 0 {
		return 0, 0
	}
	over = w.PerBatch - time.Duration(w.Workers)*w.Step
	if over <= 0 {
		return 0, 0
	}
	if over < w.StageTime {
		return w.StageTime - over, over
	}
	return 0, over
}

// Verify runs the script with workers workers as it is (ladder level
// none) and returns the measured steps/s: for a node's ranks, every
// rank's loader at workers workers, the node's pace the slowest rank's.
func Verify(ctx context.Context, cmd Command, loader, workers, steps int, first, stall time.Duration, out io.Writer) (float64, error) {
	s := Settings{Mode: "ladder", Loader: loader, Level: "none", Steps: steps, Workers: workers, FirstBatchTimeout: first, StallTimeout: stall}
	run, err := Exec(ctx, cmd, s, out, nil)
	if err != nil {
		return 0, fmt.Errorf("verifying at %d workers: %w", workers, err)
	}
	p, err := nodePoint(run, s, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("verifying at %d workers: %w", workers, err)
	}
	if p.Workers != workers {
		return 0, fmt.Errorf("verifying at %d workers: the loader ran %d", workers, p.Workers)
	}
	for r, rr := range run.Ranks {
		if ld, ok := rr.Target(); !ok || ld.Workers != workers {
			return 0, fmt.Errorf("verifying at %d workers: rank %d's loader ran %d", workers, r, ld.Workers)
		}
	}
	return p.StepsPerSec(), nil
}

// VerifyAll runs the script as it is (Verify, its output to log) with
// its own worker count and, where it differs, the count NeedWorkers
// says, for steps steps each, calling start (if not nil) before each. It
// returns the checks, those before an error included.
func (w WhatIf) VerifyAll(ctx context.Context, cmd Command, loader, steps int, first, stall time.Duration, log io.Writer, start func(workers int)) ([]Check, error) {
	var checks []Check
	counts := []int{w.Workers}
	if n := w.NeedWorkers(); n != w.Workers {
		counts = append(counts, n)
	}
	for _, n := range counts {
		if start != nil {
			start(n)
		}
		got, err := Verify(ctx, cmd, loader, n, steps, first, stall, log)
		if err != nil {
			return checks, err
		}
		checks = append(checks, Check{Workers: n, Measured: got, Predicted: w.StepsPerSec(n, w.Cores)})
	}
	return checks, nil
}
