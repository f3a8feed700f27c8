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
type Timed struct {
	Steps   []time.Duration
	Workers int           // as the loader ran
	Wall    time.Duration // the command's, its start included
	Run     *Run
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
// not edited: the hook applies ls.
func RunAt(ctx context.Context, cmd Command, loader int, ls *LoaderSettings, steps int, timeout time.Duration, out io.Writer) (Timed, error) {
	s := Settings{Mode: "ladder", Loader: loader, Level: "none", Steps: steps, Tune: ls, FirstBatchTimeout: timeout}
	run, err := Exec(ctx, cmd, s, out, nil)
	if err != nil {
		return Timed{Run: run}, err
	}
	ld, ok := run.Target()
	if !ok {
		return Timed{Run: run}, fmt.Errorf("%w: the hook named no training loader", ErrNoLoader)
	}
	t := Timed{Workers: ld.Workers, Wall: run.Wall, Run: run}
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
