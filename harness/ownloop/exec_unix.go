//go:build unix

package ownloop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/headspace-bench/headspace/internal/procgroup"
)

// Exec runs cmd under the hook with settings s. The command's output
// (stdout and stderr, a traceback included) goes to out; each step is
// handed to onStep (nil: none) as it is measured. It returns when the
// hook has every step (the command and its workers are then killed),
// when the command ends, when the first batch does not come within
// s.FirstBatchTimeout, or when ctx ends: in every case the command's
// whole process group is killed and reaped before Exec returns, and the
// hook's temporary directory removed.
func Exec(ctx context.Context, cmd Command, s Settings, out io.Writer, onStep func(Step)) (*Run, error) {
	dir, err := os.MkdirTemp("", "headspace-hook-")
	if err != nil {
		return nil, fmt.Errorf("hook: %w", err)
	}
	defer os.RemoveAll(dir) // at the end of the run: spawned ranks load the hook from it
	if err := os.WriteFile(filepath.Join(dir, HookModule+".py"), Source, 0o600); err != nil {
		return nil, fmt.Errorf("hook: %w", err)
	}
	c, err := hookCommand(cmd, s, dir)
	if err != nil {
		return nil, err
	}
	evR, evW, err := eventChannel(dir)
	if err != nil {
		return nil, fmt.Errorf("hook: %w", err)
	}
	e, err := start(c, cmd.Interpreter, out, evR, evW)
	if err != nil {
		return nil, err
	}
	e.dir, e.s, e.onStep = dir, s, onStep
	e.run.World = cmd.Procs
	return e.wait(ctx)
}

// hookCommand is cmd run under the hook, its module in dir, with
// settings s.
func hookCommand(cmd Command, s Settings, dir string) (*exec.Cmd, error) {
	cfg, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	c := exec.Command(cmd.Interpreter, hookArgs(cmd)...)
	pythonPath := dir
	if p := os.Getenv("PYTHONPATH"); p != "" {
		pythonPath += string(os.PathListSeparator) + p
	}
	c.Env = append(os.Environ(), "HEADSPACE_HOOK="+string(cfg), "PYTHONPATH="+pythonPath, "HEADSPACE_HOOK_FIFO="+fifoPath(dir))
	if cmd.Launcher == "" {
		// The launcher's own process runs no hook; its ranks open the FIFO.
		c.Env = append(c.Env, "HEADSPACE_HOOK_FD=3")
	}
	c.SysProcAttr = procgroup.Group()
	return c, nil
}

// execution is a command under the hook, started: its events' lines
// as they are read, its output as it is copied, its leader's exit.
type execution struct {
	c      *exec.Cmd
	pid    int
	start  time.Time
	dir    string // the hook's module and its FIFO, removed at the end
	s      Settings
	onStep func(Step)
	rk     rankState // a node's ranks (ranks_unix.go)

	evR, outR *os.File
	outDone   chan struct{}  // the output's copy has ended
	lines     chan eventLine // the events' lines; nil once closed
	exited    chan error     // the leader's exit

	exitErr    error
	leaderDone bool
	run        *Run
	refused    string // the hook's refusal
	gotFirst   bool   // the first batch came
}

// eventLine is a line of the hook's events, or the error that ended them.
type eventLine struct {
	b   []byte
	err error
}

// start starts c, the command's interpreter, with the events' channel's
// write end evW as its fd 3 and its output copied to out.
func start(c *exec.Cmd, interpreter string, out io.Writer, evR, evW *os.File) (*execution, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		evR.Close()
		evW.Close()
		return nil, err
	}
	c.ExtraFiles = []*os.File{evW}
	c.Stdout, c.Stderr = outW, outW
	e := &execution{c: c, start: time.Now(), evR: evR, outR: outR, run: &Run{}}
	err = c.Start()
	evW.Close()
	outW.Close()
	if err != nil {
		evR.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %w", interpreter, err)
	}
	e.pid = c.Process.Pid
	// The command's output is copied as it comes; its end is the end of
	// every process of the group that holds it.
	e.outDone = make(chan struct{})
	go func() {
		defer close(e.outDone)
		io.Copy(out, outR)
	}()
	lines := make(chan eventLine, 256)
	e.lines = lines
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(evR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- eventLine{b: append([]byte(nil), sc.Bytes()...)}
		}
		if err := sc.Err(); err != nil {
			lines <- eventLine{err: err}
		}
	}()
	e.exited = make(chan error, 1)
	go func() { e.exited <- c.Wait() }()
	return e, nil
}

// finish kills the group, waits for the leader and for both pipes to
// close (every member gone), and returns.
func (e *execution) finish() {
	e.killRanks()
	killGroup(e.pid)
	if !e.leaderDone {
		e.exitErr = <-e.exited
		e.leaderDone = true
	}
	killGroup(e.pid) // members that outlived their leader
	e.killRanks()
	stuck := time.After(5 * time.Second)
	for e.lines != nil {
		select {
		case _, ok := <-e.lines:
			if !ok {
				e.lines = nil
			}
		case <-stuck:
			e.evR.Close() // something outside the group holds the pipe
		}
	}
	select {
	case <-e.outDone:
	case <-time.After(5 * time.Second):
		e.outR.Close()
		<-e.outDone
	}
	e.evR.Close()
	e.outR.Close()
}

// wait reads the hook's events until the run is over, and returns it.
func (e *execution) wait(ctx context.Context) (*Run, error) {
	first := time.NewTimer(e.s.FirstBatchTimeout)
	if e.s.FirstBatchTimeout <= 0 {
		first.Stop()
	}
	defer first.Stop()
	stall := time.NewTicker(time.Second)
	defer stall.Stop()
	for {
		select {
		case <-stall.C:
			if err := e.stalled(); err != nil {
				return e.run, err
			}
		case <-ctx.Done():
			e.finish()
			return e.run, ctx.Err()
		case <-first.C:
			if !e.gotFirst {
				e.finish()
				return e.run, fmt.Errorf("%w within --first-batch-timeout %v: the script must iterate a torch.utils.data.DataLoader (or headspace_hook.wrap) in its main process", ErrNoLoader, e.s.FirstBatchTimeout)
			}
		case l, ok := <-e.lines:
			if !ok {
				e.lines = nil // every writer gone: the leader's exit follows
				continue
			}
			if done, err := e.event(l); done || err != nil {
				return e.run, err
			}
		case e.exitErr = <-e.exited:
			e.leaderDone = true
			return e.ended()
		}
	}
}

// event applies a line of the hook's events; done says the run is over
// (every step measured, or an error).
func (e *execution) event(l eventLine) (done bool, err error) {
	if l.err != nil {
		e.finish()
		return true, fmt.Errorf("reading the hook's events: %w", l.err)
	}
	kind, msg, err := e.run.apply(l.b)
	if err != nil {
		e.finish()
		return true, err
	}
	if len(e.run.Ranks) > 0 {
		return e.rankEvent(kind, msg)
	}
	switch kind {
	case "first":
		e.gotFirst = true
	case "step":
		if e.onStep != nil {
			e.onStep(e.run.Steps[len(e.run.Steps)-1])
		}
	case "refuse":
		e.refused = msg
	case "done":
		e.finish()
		e.run.Wall = time.Since(e.start)
		return true, nil
	}
	return false, nil
}

// ended is the run of a command whose leader has exited: what the hook
// wrote before it went is read first.
func (e *execution) ended() (*Run, error) {
	run := e.run
	drain := time.NewTimer(2 * time.Second)
	for e.lines != nil {
		select {
		case l, ok := <-e.lines:
			if !ok {
				e.lines = nil
				continue
			}
			if kind, msg, err := run.apply(l.b); err == nil && kind == "refuse" {
				e.refused = msg
			}
		case <-drain.C:
			killGroup(e.pid) // workers that hold the pipe
			drain.Reset(2 * time.Second)
		}
	}
	drain.Stop()
	e.finish()
	run.Wall = time.Since(e.start)
	switch {
	case e.refused != "":
		return run, refusef("%s", e.refused)
	case run.Done:
		return run, nil
	case len(run.Ranks) > 0:
		return run, e.ranksEnded()
	case e.exitErr != nil:
		return run, &ScriptFailed{Status: e.exitErr.Error(), Steps: len(run.Steps)}
	case len(run.Loaders) == 0 || !e.gotFirst:
		return run, fmt.Errorf("%w: the script ended without iterating a torch.utils.data.DataLoader in its main process", ErrNoLoader)
	default:
		return run, &EndedEarly{Got: len(run.Steps), Want: run.want(e.s), Run: run}
	}
}

var errNoGroup = errors.New("no process group")

// killGroup kills the command's process group: the script and its
// DataLoader workers.
func killGroup(pid int) error {
	if pid <= 0 {
		return errNoGroup
	}
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
