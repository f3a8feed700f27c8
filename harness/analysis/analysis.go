// Package analysis is SPDL's headspace analysis: run the training loop with
// its loader wrapped in a cache, and compare the step time while the real
// loader feeds it with the step time once cached batches do. The difference
// is the most that optimising data loading can gain ("the headspace"); the
// pipeline's stage statistics say which stage stands in the way.
//
// The estimate follows the SPDL chapter "Headspace Analysis": the median
// step time before and after the switch (with 95% confidence intervals from
// order statistics, as benchstat computes them), the headspace in ms and in
// %, and what it comes to over a whole training run. The verdict reads the
// queues' occupancy from source to sink, as SPDL's documentation does: the
// first queue whose occupancy falls sits right after the stage that bounds
// throughput. It classifies the run as TensorFlow's input-pipeline analyzer
// does, by the share of step time spent waiting for input: under 5% "not
// input-bound", 5–20% "moderately input-bound", over 20% "highly input-bound".
package analysis

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/cacheloader"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Config is one headspace analysis.
type Config struct {
	Pipeline          loader.Config
	NumCaches         int // batches cached from the start; SPDL's example: 10
	ReturnCachesAfter int // batches from the real loader before the switch; 100
	StepsAfter        int // steps on cached batches after the switch
	TotalSteps        int // steps of the whole training run, for the time saved
	// Skip is how many steps to leave out at the start of each phase
	// (pipeline fill, and the switch itself); 1 unless set.
	Skip int
	// OnStep, if set, is called after every step.
	OnStep func(i int, d time.Duration)
	// StatsEvery, with StatsLog, prints the loader's stage statistics
	// every interval while the analysis runs (SPDL's periodic report).
	StatsEvery time.Duration
	StatsLog   io.Writer
}

// DefaultConfig is SPDL's example: 10 caches returned after 100 batches,
// then 100 cached steps; the time saved is reckoned over 200,000 steps.
func DefaultConfig() Config {
	return Config{Pipeline: loader.DefaultConfig(), NumCaches: 10, ReturnCachesAfter: 100, StepsAfter: 100, TotalSteps: 200000, Skip: 1}
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	if err := c.Pipeline.Validate(); err != nil {
		return err
	}
	if _, err := cacheloader.Iterator(func(func(int) bool) {}, cacheloader.Config{NumCaches: c.NumCaches, ReturnCachesAfter: c.ReturnCachesAfter}); err != nil {
		return err
	}
	switch {
	case c.StepsAfter <= 0:
		return fmt.Errorf("steps after the switch %d must be positive", c.StepsAfter)
	case c.TotalSteps <= 0:
		return fmt.Errorf("total steps %d must be positive", c.TotalSteps)
	case c.Skip < 0 || c.Skip >= c.ReturnCachesAfter || c.Skip >= c.StepsAfter:
		return fmt.Errorf("skip %d must be in [0, min(return-caches-after, steps-after))", c.Skip)
	}
	return nil
}

// Estimate is a median with its confidence interval.
type Estimate struct {
	// Lo and Hi bound the median's 95% confidence interval; a side too
	// few values bound (benchmath's ±Inf) is the extreme duration of its
	// sign, math.MinInt64 or math.MaxInt64 (ciMs prints it as −∞, +∞).
	Median, Lo, Hi time.Duration
	N              int
}

func estimate(ts []time.Duration) Estimate {
	vals := make([]float64, len(ts))
	for i, t := range ts {
		vals[i] = float64(t)
	}
	s := summary.Of(vals)
	return Estimate{Median: time.Duration(s.Median), Lo: bound(s.Lo), Hi: bound(s.Hi), N: len(ts)}
}

// bound is a confidence bound in nanoseconds as a duration, an infinite
// one the extreme duration of its sign (a conversion of ±Inf to an
// integer is not defined: on amd64 both became math.MinInt64).
func bound(x float64) time.Duration {
	switch {
	case math.IsInf(x, -1):
		return math.MinInt64
	case math.IsInf(x, 1):
		return math.MaxInt64
	}
	return time.Duration(x)
}

// ciMs is a confidence bound in milliseconds, an unbounded side −∞ or
// +∞.
func ciMs(d time.Duration) string {
	switch d {
	case math.MinInt64:
		return "−∞"
	case math.MaxInt64:
		return "+∞"
	}
	return report.Ms(d, 1)
}

// RoundEstimate is the step time over whole rounds of a loader's
// workers: ts cut into consecutive runs of round steps (a last, shorter
// run left out), the mean of each run, then the median of those means
// with its 95% confidence interval; N counts the rounds. A loader with
// round workers delivers its batches in bursts, so single steps alternate
// short and long and their median can land on either; a round's mean is
// the loader's period. round 1 (or less) is the median of single steps.
func RoundEstimate(ts []time.Duration, round int) Estimate {
	if round <= 1 {
		return estimate(ts)
	}
	var means []time.Duration
	for i := 0; i+round <= len(ts); i += round {
		var sum time.Duration
		for _, t := range ts[i : i+round] {
			sum += t
		}
		means = append(means, sum/time.Duration(round))
	}
	return estimate(means)
}

// Report is the outcome of an analysis.
type Report struct {
	Config Config
	// Round is the steps of each estimate's unit (RoundEstimate): 0 or 1
	// for single steps.
	Round     int
	Device    string
	StepTimes []time.Duration // every step, both phases
	Waits     []time.Duration // every step's wait for input
	Switch    int             // index of the first cached step
	Before    Estimate        // step time fed by the real loader
	After     Estimate        // step time fed by cached batches
	// Stats is the pipeline's statistics at the switch: the real loader's.
	Stats   pipeline.Stats
	Verdict Verdict
}

// Headspace is the step time that free data loading would save.
func (r Report) Headspace() time.Duration { return r.Before.Median - r.After.Median }

// HeadspacePercent is Headspace as a share of the step time before.
func (r Report) HeadspacePercent() float64 {
	if r.Before.Median <= 0 {
		return 0
	}
	return 100 * float64(r.Headspace()) / float64(r.Before.Median)
}

// TrainingTime is the time TotalSteps take at step time d.
func (r Report) TrainingTime(d time.Duration) time.Duration {
	return d * time.Duration(r.Config.TotalSteps)
}

// Run performs the analysis on dev.
func Run(ctx context.Context, cfg Config, dev device.Device) (Report, error) {
	if cfg.Skip == 0 && cfg.ReturnCachesAfter > 1 {
		cfg.Skip = 1
	}
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	src, err := loader.New(ctx, level.None, cfg.Pipeline, cfg.ReturnCachesAfter)
	if err != nil {
		return Report{}, err
	}
	total := cfg.ReturnCachesAfter + cfg.StepsAfter
	ld, err := cacheloader.NewLoader(src, cacheloader.Config{NumCaches: cfg.NumCaches, ReturnCachesAfter: cfg.ReturnCachesAfter, StopAfter: total})
	if err != nil {
		src.Close()
		return Report{}, err
	}
	rep := Report{Config: cfg, Device: dev.Name(), Switch: cfg.ReturnCachesAfter}
	if cfg.StatsEvery > 0 && cfg.StatsLog != nil {
		defer logStats(cfg.StatsLog, cfg.StatsEvery, src)()
	}
	res, err := train.Run(ctx, ld, dev, cfg.Pipeline.Batch, train.Config{Steps: total, OnStep: func(i int, d time.Duration) {
		if i == cfg.ReturnCachesAfter-1 {
			rep.Stats = src.Stats() // the real loader's statistics, at the switch
		}
		if cfg.OnStep != nil {
			cfg.OnStep(i, d)
		}
	}})
	if cerr := ld.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return rep, err
	}
	rep.StepTimes, rep.Waits = res.StepTimes, res.Waits
	rep.Before = estimate(res.StepTimes[cfg.Skip:cfg.ReturnCachesAfter])
	rep.After = estimate(res.StepTimes[cfg.ReturnCachesAfter+cfg.Skip:])
	var wait, wall time.Duration
	for i := cfg.Skip; i < cfg.ReturnCachesAfter; i++ {
		wait += res.Waits[i]
		wall += res.StepTimes[i]
	}
	rep.Verdict = Judge(rep.Stats, wait, wall)
	return rep, nil
}

// logStats writes src's statistics to w every period until the
// function it returns is called, which waits for the last write.
func logStats(w io.Writer, period time.Duration, src *loader.Loader) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				WriteStats(w, src.Stats())
			case <-quit:
				return
			}
		}
	}()
	return func() { close(quit); <-done }
}

// WriteText prints the report as the SPDL chapter states its estimate,
// followed by the verdict and the numbers it rests on.
func (r Report) WriteText(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "headspace analysis on %s: %d steps from the loader, then %d on %d cached batches\n",
		r.Device, c.ReturnCachesAfter, c.StepsAfter, c.NumCaches)
	if r.Round > 1 {
		fmt.Fprintf(w, "  (step times are means over rounds of %d steps, one per loader worker: n counts rounds)\n", r.Round)
	}
	fmt.Fprintf(w, "  step time before caching: %s  (95%% CI %s – %s, n=%d)\n", report.Ms(r.Before.Median, 1), ciMs(r.Before.Lo), ciMs(r.Before.Hi), r.Before.N)
	fmt.Fprintf(w, "  step time after caching:  %s  (95%% CI %s – %s, n=%d)\n", report.Ms(r.After.Median, 1), ciMs(r.After.Lo), ciMs(r.After.Hi), r.After.N)
	fmt.Fprintf(w, "  headspace: %s per step, %.1f%% of the step time\n", report.Ms(r.Headspace(), 1), r.HeadspacePercent())
	before, after := r.TrainingTime(r.Before.Median), r.TrainingTime(r.After.Median)
	fmt.Fprintf(w, "  over %d steps: %.2f h → %.2f h, %.2f h saved if data loading were free\n",
		c.TotalSteps, before.Hours(), after.Hours(), (before - after).Hours())
	if r.Before.Hi < r.After.Lo || r.After.Hi < r.Before.Lo {
		fmt.Fprintln(w, "  the two confidence intervals do not overlap: the difference is real")
	} else {
		fmt.Fprintln(w, "  the two confidence intervals overlap: no headspace can be claimed from this run")
	}
	fmt.Fprintln(w)
	r.Verdict.WriteText(w)
}

// Benchmarks are the benchmarks an analysis's result file holds, of the
// synthetic pipeline (workloads.HeadspaceRecords) as of a user's own
// script (ownloop.Records): the steps (Headspace), the input wait
// (HeadspaceInput) and the stages (HeadspaceStage). A whole-file writer
// replaces only a file of these.
var Benchmarks = []string{"Headspace", "HeadspaceInput", "HeadspaceStage"}
