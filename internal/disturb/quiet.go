package disturb

import (
	"context"
	"fmt"
	"time"
)

// Quiet configures WaitQuiet.
type Quiet struct {
	// Max is how long to wait at most; 0 does not wait (skipped).
	Max time.Duration
	// Below is the busy share under which the machine is quiet;
	// DefaultQuietBelow when 0.
	Below float64
	// Every is the sampling window; 1 s when 0.
	Every time.Duration
	// Status, if set, is told each window's busy share and the time
	// left, for a progress line.
	Status func(string)
	// busy measures one window; the machine's (machineBusy) when nil.
	busy func(ctx context.Context, window time.Duration) (float64, bool)
}

// QuietResult is how a wait ended.
type QuietResult struct {
	// Waited is how long it took.
	Waited time.Duration
	// Known is false where the machine's load cannot be read (not
	// Linux) or the wait was skipped: nothing was waited for.
	Known bool
	// Busy is true when the wait ended at its bound with the machine
	// still busy: the runs that follow are taken on a busy machine.
	Busy bool
	// Share is the last window's busy share.
	Share float64
	// Source names what Share is: "cpu pressure" or "cpu busy".
	Source string
}

// String says how the wait ended, as a result file's machine-busy line
// or a progress line says it: "cpu pressure 37% after waiting 30s".
func (r QuietResult) String() string {
	return fmt.Sprintf("%s %.0f%% after waiting %s", r.Source, 100*r.Share, r.Waited.Round(time.Second))
}

// WaitQuiet waits until the machine's busy share over a window (see the
// package doc) is below q.Below, for at most q.Max; it returns at once
// when q.Max is 0 or the load cannot be read, and with ctx's error when
// ctx ends first.
func WaitQuiet(ctx context.Context, q Quiet) (QuietResult, error) {
	var r QuietResult
	if q.Max <= 0 {
		return r, nil
	}
	below, every := q.Below, q.Every
	if below == 0 {
		below = DefaultQuietBelow
	}
	if every <= 0 {
		every = time.Second
	}
	busy := q.busy
	if busy == nil {
		busy = machineBusy
		r.Source = source()
	}
	if r.Source == "" {
		r.Source = "cpu busy"
	}
	start := time.Now()
	for {
		share, ok := busy(ctx, every)
		if err := ctx.Err(); err != nil {
			r.Waited = time.Since(start)
			return r, err
		}
		r.Waited = time.Since(start)
		if !ok {
			return r, nil
		}
		r.Known, r.Share = true, share
		if share < below {
			r.Busy = false
			return r, nil
		}
		if r.Waited+every > q.Max {
			r.Busy = true
			return r, nil
		}
		if q.Status != nil {
			q.Status(fmt.Sprintf("waiting for a quiet machine: %s %.0f%% (below %.0f%% wanted; %s left, --quiet-wait 0 skips)",
				r.Source, 100*share, 100*below, (q.Max - r.Waited).Round(time.Second)))
		}
	}
}

// source names what machineBusy measures here.
func source() string {
	if _, ok := cpuPressure(); ok {
		return "cpu pressure"
	}
	return "cpu busy"
}

// machineBusy is the share of a window in which some task waited for a
// CPU (PSI), else the busy share of all CPUs (/proc/stat).
func machineBusy(ctx context.Context, window time.Duration) (float64, bool) {
	p0, okP := cpuPressure()
	b0, a0, okT := cpuTicks()
	t0 := time.Now()
	if !okP && !okT {
		return 0, false
	}
	select {
	case <-ctx.Done():
		return 0, false
	case <-time.After(window):
	}
	if okP {
		p1, ok := cpuPressure()
		if ok {
			return float64(p1-p0) / float64(time.Since(t0)), true
		}
	}
	b1, a1, ok := cpuTicks()
	if !ok || a1 <= a0 {
		return 0, false
	}
	return float64(b1-b0) / float64(a1-a0), true
}
