package ownloop

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// LoaderSettings are the settings of a DataLoader that headspace tune
// searches, as the hook reads and applies them (its _loader_settings).
type LoaderSettings struct {
	Workers int `json:"num_workers"`
	// Prefetch is prefetch_factor, the batches each worker keeps ahead;
	// 0 is torch's default (2) and, without workers, none.
	Prefetch   int  `json:"prefetch_factor"`
	Pin        bool `json:"pin_memory"`
	Persistent bool `json:"persistent_workers"`
	// Start is the workers' start method (multiprocessing_context):
	// fork, spawn or forkserver; "" is the platform's default.
	Start string `json:"start_method"`
}

// Normal is s as a DataLoader runs it: without workers, no prefetch,
// persistent workers nor start method; with them, prefetch 0 is 2.
func (s LoaderSettings) Normal() LoaderSettings {
	if s.Workers <= 0 {
		return LoaderSettings{Pin: s.Pin}
	}
	if s.Prefetch <= 0 {
		s.Prefetch = 2
	}
	return s
}

// Args are the DataLoader arguments that set s: the line to paste,
// without the loader's other arguments.
func (s LoaderSettings) Args() string {
	s = s.Normal()
	args := []string{fmt.Sprintf("num_workers=%d", s.Workers)}
	if s.Workers > 0 {
		args = append(args, fmt.Sprintf("prefetch_factor=%d", s.Prefetch))
	}
	if s.Pin {
		args = append(args, "pin_memory=True")
	}
	if s.Persistent {
		args = append(args, "persistent_workers=True")
	}
	if s.Start != "" {
		args = append(args, fmt.Sprintf("multiprocessing_context=%q", s.Start))
	}
	return strings.Join(args, ", ")
}

// Timed is one short run of the script with its training loader at
// some settings: every step after the warm-up (one step and the batches
// the workers prefetched), epoch boundaries included, where
// persistent_workers saves the workers' restart.
//
// For a node's ranks (torchrun's, or a script's own
// torch.multiprocessing.spawn) it is the slowest rank's: the ranks step
// in lockstep, at its pace, so its steps/s are the node's.
type Timed struct {
	Steps   []time.Duration
	Workers int           // as the loader ran
	Wall    time.Duration // the command's, its start included
	Run     *Run
	// Ranks is the node's ranks (0: one process), Rank the slowest's.
	Ranks, Rank int
}

// StepsPerSec is the run's throughput over its timed steps.
func (t Timed) StepsPerSec() float64 {
	var sum time.Duration
	for _, d := range t.Steps {
		sum += d
	}
	if sum <= 0 {
		return 0
	}
	return float64(len(t.Steps)) * float64(time.Second) / float64(sum)
}

// RunAt runs cmd under the hook with its training loader (the loader-th)
// at ls, or as the script made it where ls is nil, for steps steps
// after the warm-up; the command's output goes to out. The script is
// not edited: the hook applies ls, in every rank of a node's (each rank's
// training loader at ls), and the node's timing is its slowest rank's.
func RunAt(ctx context.Context, cmd Command, loader int, ls *LoaderSettings, steps int, timeout time.Duration, out io.Writer) (Timed, error) {
	s := Settings{Mode: "ladder", Loader: loader, Level: "none", Steps: steps, Tune: ls, FirstBatchTimeout: timeout}
	run, err := Exec(ctx, cmd, s, out, nil)
	if err != nil {
		return Timed{Run: run, Ranks: len(run.ranksOf())}, err
	}
	if len(run.Ranks) == 0 {
		t, err := timed(run)
		t.Run = run
		return t, err
	}
	var slow Timed
	for r, rr := range run.Ranks {
		if rr == nil {
			return Timed{Run: run, Ranks: len(run.Ranks)}, fmt.Errorf("rank %d reported nothing", r)
		}
		t, err := timed(rr)
		if err != nil {
			return Timed{Run: run, Ranks: len(run.Ranks)}, fmt.Errorf("rank %d: %w", r, err)
		}
		if r == 0 || t.StepsPerSec() < slow.StepsPerSec() {
			slow, slow.Rank = t, r
		}
	}
	slow.Run, slow.Wall, slow.Ranks = run, run.Wall, len(run.Ranks)
	return slow, nil
}

// ranksOf is r's ranks, none where r is nil.
func (r *Run) ranksOf() []*Run {
	if r == nil {
		return nil
	}
	return r.Ranks
}

// timed is a process's run's steps after the warm-up.
func timed(run *Run) (Timed, error) {
	ld, ok := run.Target()
	if !ok {
		return Timed{}, fmt.Errorf("%w: the hook named no training loader", ErrNoLoader)
	}
	t := Timed{Workers: ld.Workers, Wall: run.Wall}
	warm := max(1, ld.Warmup)
	for _, st := range run.Steps {
		if st.Index >= warm {
			t.Steps = append(t.Steps, st.Time)
		}
	}
	if len(t.Steps) == 0 {
		return t, fmt.Errorf("no step timed after the warm-up of %d", warm)
	}
	return t, nil
}

// Key is the script's name as a record's script= key.
func (c Command) Key() string { return benchKey(c.Name()) }
