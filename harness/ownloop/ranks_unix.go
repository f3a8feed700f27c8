//go:build unix

package ownloop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// fifoPath is the events' FIFO in the hook's directory: the ranks that a
// launcher starts (which closes every descriptor it does not know) and
// spawned ranks open it by its path (HEADSPACE_HOOK_FIFO).
func fifoPath(dir string) string { return filepath.Join(dir, "events") }

// eventChannel makes the events' FIFO in dir and opens its read end
// (headspace's) and a write end for the command's fd 3: the command's
// process holds it for the run, so the read end sees its end only when
// the command and every rank that opened the FIFO are gone, as a pipe's.
func eventChannel(dir string) (r, w *os.File, err error) {
	p := fifoPath(dir)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		return nil, nil, fmt.Errorf("events FIFO %s: %w", p, err)
	}
	// Non-blocking: a FIFO's read end opens without a writer at once.
	rfd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("events FIFO %s: %w", p, err)
	}
	wfd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		syscall.Close(rfd)
		return nil, nil, fmt.Errorf("events FIFO %s: %w", p, err)
	}
	return os.NewFile(uintptr(rfd), p), os.NewFile(uintptr(wfd), p), nil
}

// rankState is what Exec keeps of a node's ranks as their events come.
type rankState struct {
	lastStep time.Time // the last step of any rank
	ticked   int       // rank 0's steps handed to onStep
}

// killRanks kills each rank that said its pid, the process group it
// leads (torch 2's launcher starts each rank in a session of its own, out
// of the command's group) and the one it is in (srun's tasks, children of
// slurmstepd, not of the command).
func (e *execution) killRanks() {
	own := syscall.Getpgrp()
	for _, rr := range e.run.Ranks {
		if rr != nil && rr.PID > 0 {
			// The group it is in where it leads none (srun's tasks share
			// one, out of the command's: slurmstepd starts them), its
			// workers' too.
			if g, err := syscall.Getpgid(rr.PID); err == nil && g > 1 && g != own {
				syscall.Kill(-g, syscall.SIGKILL)
			}
			syscall.Kill(-rr.PID, syscall.SIGKILL)
			syscall.Kill(rr.PID, syscall.SIGKILL)
		}
	}
}

// rankEvent acts on an event of a node's rank: done says the run is
// over (every rank has its steps, a rank refused or raised).
func (e *execution) rankEvent(kind, msg string) (bool, error) {
	run := e.run
	switch kind {
	case "first":
		e.gotFirst = true
		e.rk.lastStep = time.Now()
	case "step":
		e.rk.lastStep = time.Now()
		// Progress counts the steps of rank 0: the ranks step together.
		if r0 := run.Ranks[0]; r0 != nil && len(r0.Steps) > e.rk.ticked && e.onStep != nil {
			e.rk.ticked = len(r0.Steps)
			e.onStep(r0.Steps[len(r0.Steps)-1])
		}
	case "refuse":
		e.refused = msg
		e.finish()
		return true, refusef("%s", msg)
	case "raised":
		e.settle()
		e.finish()
		run.Wall = time.Since(e.start)
		return true, e.rankFailed()
	case "done":
		if run.Done {
			e.finish()
			run.Wall = time.Since(e.start)
			return true, nil
		}
	}
	return false, nil
}

// rankFailed is the failure of the first rank that raised, or of the
// node whose command exited with an error.
func (e *execution) rankFailed() error {
	status := ""
	if e.exitErr != nil {
		status = "the command: " + e.exitErr.Error()
	}
	for _, rr := range e.run.Ranks {
		if rr != nil && rr.Raised != "" {
			return &RanksFailed{Rank: rr.Rank, Msg: rr.Raised, Steps: len(rr.Steps), Status: status}
		}
	}
	return nil
}

// ranksEnded is the error of a node's run whose command ended before
// every rank had its steps.
func (e *execution) ranksEnded() error {
	run := e.run
	if err := e.rankFailed(); err != nil {
		return err
	}
	if e.exitErr != nil {
		return &ScriptFailed{Status: e.exitErr.Error(), Steps: run.fewestSteps()}
	}
	if !e.gotFirst {
		return fmt.Errorf("%w: the script's ranks ended without iterating a torch.utils.data.DataLoader", ErrNoLoader)
	}
	want := e.s.Total()
	if r0 := run.Ranks[0]; r0 != nil {
		want = r0.want(e.s)
	}
	return &EndedEarly{Got: run.fewestSteps(), Want: want, Run: run}
}

// stalled stops a node whose ranks made no step for
// Settings.FirstBatchTimeout after their first batch, naming the rank
// that holds the others (RanksHung) from the ranks' steps and their
// Python stacks (SIGUSR1: faulthandler in each rank).
func (e *execution) stalled() error {
	if len(e.run.Ranks) == 0 || !e.gotFirst || e.s.FirstBatchTimeout <= 0 || time.Since(e.rk.lastStep) < e.s.FirstBatchTimeout {
		return nil
	}
	h := &RanksHung{Bound: e.s.FirstBatchTimeout}
	n := max(len(e.run.Ranks), e.run.World)
	for r := range n {
		// A rank that never reported counts as at step 0.
		steps := 0
		if r < len(e.run.Ranks) && e.run.Ranks[r] != nil {
			steps = len(e.run.Ranks[r].Steps)
		}
		h.Steps = append(h.Steps, steps)
	}
	offsets := make([]int, n)
	h.Where = e.snapshot(offsets)
	if slices.Min(h.Steps) == slices.Max(h.Steps) && slices.ContainsFunc(h.Where, func(w string) bool { return w != "" && !inCollective(w) }) {
		// A rank caught between its collectives (waiting for its loader,
		// in its step) on the way to the next: a second snapshot a
		// moment later finds it in the collective where it was only
		// passing by; one that hangs stands where it stood.
		time.Sleep(time.Second)
		again := e.snapshot(offsets)
		for r, w := range again {
			if w != "" && (h.Where[r] == "" || !inCollective(h.Where[r])) {
				h.Where[r] = w
			}
		}
	}
	h.Stuck = hungRanks(h.Steps, h.Where)
	e.finish()
	e.run.Wall = time.Since(e.start)
	return h
}

// snapshot is the innermost frame of each rank's main thread (""
// where a rank never reported, or its stacks did not come whole within
// 5 s): SIGUSR1 makes each rank's faulthandler append its stacks to its
// file (stacksPath), read from offsets[r] on, which then moves past
// what was read.
func (e *execution) snapshot(offsets []int) []string {
	where := make([]string, len(offsets))
	for r := range offsets {
		if r < len(e.run.Ranks) && e.run.Ranks[r] != nil && e.run.Ranks[r].PID > 0 {
			syscall.Kill(e.run.Ranks[r].PID, syscall.SIGUSR1)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for r := range offsets {
		if r >= len(e.run.Ranks) || e.run.Ranks[r] == nil || e.run.Ranks[r].PID <= 0 {
			continue
		}
		for {
			// Whole once the main thread's block is there: faulthandler
			// writes thread by thread.
			if b, err := os.ReadFile(e.stacksPath(r)); err == nil && len(b) > offsets[r] {
				if w := innermostFrame(string(b[offsets[r]:])); w != "" {
					where[r] = w
					offsets[r] = len(b)
					break
				}
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return where
}

// stacksPath is where rank r writes its stacks on SIGUSR1 (the hook's
// _as_rank).
func (e *execution) stacksPath(r int) string {
	return filepath.Join(e.dir, fmt.Sprintf("stacks-r%d.txt", r))
}
