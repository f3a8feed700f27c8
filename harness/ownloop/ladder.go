package ownloop

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Levels are the ladder's levels on a user's script, from the one level
// table: device (the batch cached on the GPU), host (the collated batch
// cached: the loader runs once), sample (the dataset returns one cached
// processed sample: collate and the workers' transfer still run), raw
// (a torchvision-style dataset's .loader returns one cached loaded item,
// or a map-style dataset's __getitem__ hands its .transform one cached
// input, fetching nothing: the transform still runs) and none (the
// script as it is).
var Levels = []level.Level{level.Device, level.Host, level.Sample, level.Raw, level.None}

// LadderConfig is a ladder on a user's script.
type LadderConfig struct {
	Levels []level.Level // from Levels, in any order: they run from the top down
	// Steps are timed at each level after a warm-up of one step and the
	// batches the workers prefetched (Warmup 0), or Warmup steps.
	Steps, Warmup int
	Count         int // runs of each level, alternating levels
	Loader        int // which DataLoader is the training loop's (Settings.Loader)
	// FirstBatchTimeout and StallTimeout as in Settings.
	FirstBatchTimeout, StallTimeout time.Duration
	// RawIfTorchvision skips level raw, with a line on the command's
	// output, where the dataset turns out to have neither a .loader nor
	// (map-style) a .transform (the default levels); without it raw is
	// refused there.
	RawIfTorchvision bool
}

// Validate refuses levels the hook cannot apply to a script.
func (c LadderConfig) Validate() error {
	if len(c.Levels) == 0 {
		return refusef("no levels")
	}
	for _, l := range c.Levels {
		if !slices.Contains(Levels, l) {
			return refusef("level %s needs headspace's own pipeline (a dataset on disk or in a bucket), not a training command: want %s", l, levelNames(Levels))
		}
	}
	switch {
	case c.Steps < 1:
		return refusef("steps %d must be positive", c.Steps)
	case c.Count < 1:
		return refusef("count %d must be positive", c.Count)
	case c.Warmup < 0:
		return refusef("warmup %d must not be negative", c.Warmup)
	}
	return nil
}

func levelNames(ls []level.Level) string {
	var names []string
	for _, l := range ls {
		names = append(names, l.String())
	}
	return strings.Join(names, ", ")
}

// LadderPoint is one run of the script at one level.
type LadderPoint struct {
	Level     level.Level
	Run       int // 0-based, per level
	Steps     int
	StepTime  time.Duration // mean over the timed steps
	BatchSize int
	Workers   int
	// From is the run the point came from: its command config.
	From *Run
}

// StepsPerSec is the point's throughput.
func (p LadderPoint) StepsPerSec() float64 {
	if p.StepTime <= 0 {
		return 0
	}
	return float64(time.Second) / float64(p.StepTime)
}

// Ladder runs the script at every level of c, Count rounds, each round
// every level once from the top down, and hands each point to each as it
// is measured. A level the script's dataset cannot take is refused
// (ErrRefused) by the first run that meets it.
func Ladder(ctx context.Context, cmd Command, c LadderConfig, out io.Writer, each func(LadderPoint) error) error {
	if err := c.Validate(); err != nil {
		return err
	}
	levels := level.Descending(c.Levels)
	split := -1   // whether level raw applies to the dataset (a .loader, or a .transform): unknown yet
	forked := -1  // whether the loader's workers are forked: unknown yet
	wrapped := -1 // whether the training loop is an iterable given to wrap(): unknown yet
	for r := range c.Count {
		for _, l := range levels {
			if l == level.Raw && c.RawIfTorchvision && split == 0 && wrapped != 1 {
				if r == 0 {
					fmt.Fprintln(out, "headspace: level raw left out: the training dataset has neither a .loader (torchvision-style) nor a .transform")
				}
				continue
			}
			if (l == level.Sample || l == level.Raw) && wrapped == 1 {
				if c.RawIfTorchvision {
					if r == 0 {
						fmt.Fprintf(out, "headspace: level %s left out: the training loop is an iterable given to headspace_hook.wrap(), not a DataLoader: there is no dataset to cache in\n", l)
					}
					continue
				}
				return refusef("level %s needs a DataLoader's dataset; the training loop is an iterable given to headspace_hook.wrap(): its levels are host and none", l)
			}
			if (l == level.Sample || l == level.Raw) && forked == 0 {
				if c.RawIfTorchvision {
					if r == 0 {
						fmt.Fprintf(out, "headspace: level %s left out: the training loader's workers are not forked (multiprocessing start method spawn or forkserver)\n", l)
					}
					continue
				}
				return refusef("level %s needs forked DataLoader workers (multiprocessing start method fork) or num_workers=0; the training loader's are not: leave the level out of --levels", l)
			}
			s := Settings{Mode: "ladder", Loader: c.Loader, Level: l.String(), Steps: c.Steps, Warmup: c.Warmup, FirstBatchTimeout: c.FirstBatchTimeout, StallTimeout: c.StallTimeout}
			run, err := Exec(ctx, cmd, s, out, nil)
			if err != nil {
				return fmt.Errorf("level %s, run %d: %w", l, r+1, err)
			}
			if ld, ok := run.lead().Target(); ok && split < 0 {
				split, forked, wrapped = 0, 0, 0
				if ld.Wrapped {
					wrapped = 1
				}
				if ld.Measured.Split || ld.Measured.Raw {
					split = 1
				}
				if ld.Forked {
					forked = 1
				}
			}
			p, err := nodePoint(run, s, l, r)
			if err != nil {
				return fmt.Errorf("level %s, run %d: %w", l, r+1, err)
			}
			if err := each(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func point(run *Run, s Settings, l level.Level, r int) (LadderPoint, error) {
	ld, ok := run.Target()
	if !ok {
		return LadderPoint{}, fmt.Errorf("%w: the hook named no training loader", ErrNoLoader)
	}
	warm := s.Warmup
	if warm <= 0 {
		warm = max(1, ld.Warmup)
	}
	p := LadderPoint{Level: l, Run: r, BatchSize: ld.BatchSize, Workers: ld.Workers, From: run}
	var sum time.Duration
	for _, st := range run.Steps {
		if st.Index >= warm && st.Phase != "epoch" {
			sum += st.Time
			p.Steps++
		}
	}
	if p.Steps == 0 {
		return p, fmt.Errorf("no step timed after the warm-up of %d", warm)
	}
	p.StepTime = sum / time.Duration(p.Steps)
	return p, nil
}

// LadderConfigLines are the settings a ladder's result file records
// beside the command's.
func LadderConfigLines(c LadderConfig) []resultfile.Config {
	warm := "auto (1 + the batches the workers prefetch)"
	if c.Warmup > 0 {
		warm = strconv.Itoa(c.Warmup)
	}
	return []resultfile.Config{{Key: "steps", Value: strconv.Itoa(c.Steps)}, {Key: "warmup", Value: warm}, {Key: "levels", Value: levelNames(level.Descending(c.Levels))}}
}

// WriteLadder prints the ladder's table: each level's median steps/s
// over its runs, its ratio to the top level measured, the step time it
// adds to the level above, and the stage that is attributed to
// (level.Between).
func WriteLadder(w io.Writer, points []LadderPoint) {
	by := map[level.Level][]float64{}
	var levels []level.Level
	for _, p := range points {
		if _, ok := by[p.Level]; !ok {
			levels = append(levels, p.Level)
		}
		by[p.Level] = append(by[p.Level], p.StepsPerSec())
	}
	levels = level.Descending(levels)
	fmt.Fprintf(w, "%-8s %10s %20s %7s %10s  %s\n", "level", "steps/s", "95% CI", "ratio", "+ms/step", "the stage it adds to the level above")
	var top, prev float64
	for i, l := range levels {
		s := summary.Of(by[l])
		if i == 0 {
			top = s.Median
		}
		attr, added := "", ""
		if i > 0 {
			attr = level.Between(l, levels[i-1])
			added = fmt.Sprintf("%+.1f", 1e3/s.Median-1e3/prev)
		}
		prev = s.Median
		ci := "n/a (< 6 runs)"
		if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) && !math.IsNaN(s.Lo) {
			ci = fmt.Sprintf("%.2f – %.2f", s.Lo, s.Hi)
		}
		fmt.Fprintf(w, "%-8s %10.2f %20s %6.2f× %10s  %s\n", l, s.Median, ci, s.Median/top, added, attr)
	}
}
