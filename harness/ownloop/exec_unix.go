//go:build unix

package ownloop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	c, err := hookCommand(cmd, s, dir, !noNamespace)
	if err != nil {
		return nil, err
	}
	evR, evW, err := eventChannel(dir)
	if err != nil {
		return nil, fmt.Errorf("hook: %w", err)
	}
	e, err := start(c, cmd.Interpreter, out, evR, evW)
	if err != nil && namespaced(c.SysProcAttr) {
		// No user namespaces here: the process group (and its
		// descendants, found at the end) it is.
		if c, err = hookCommand(cmd, s, dir, false); err != nil {
			return nil, err
		}
		os.Remove(fifoPath(dir))
		if evR, evW, err = eventChannel(dir); err != nil {
			return nil, fmt.Errorf("hook: %w", err)
		}
		e, err = start(c, cmd.Interpreter, out, evR, evW)
	}
	if err != nil {
		return nil, err
	}
	e.dir, e.s, e.onStep, e.mark = dir, s, onStep, runMark(c)
	e.run.World = cmd.Procs
	return e.wait(ctx)
}

// hookCommand is cmd run under the hook, its module in dir, with
// settings s; contained, in namespaces of its own where the system has
// them (procgroup.Contained), else in a process group.
func hookCommand(cmd Command, s Settings, dir string, contained bool) (*exec.Cmd, error) {
	cfg, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	c := exec.Command(cmd.Interpreter, hookArgs(cmd)...)
	pythonPath := dir
	if p := os.Getenv("PYTHONPATH"); p != "" {
		pythonPath += string(os.PathListSeparator) + p
	}
	c.Env = append(os.Environ(), "HEADSPACE_HOOK="+string(cfg), "PYTHONPATH="+pythonPath, "HEADSPACE_HOOK_FIFO="+fifoPath(dir),
		fmt.Sprintf("%s=%d-%d", RunMark, os.Getpid(), runs.Add(1)))
	switch cmd.Launcher {
	case "":
		// The launcher's own process runs no hook; its ranks open the FIFO.
		c.Env = append(c.Env, "HEADSPACE_HOOK_FD=3")
	case "srun":
		// Each task is a rank by its SLURM_PROCID (the hook's
		// _launched_rank); srun passes the environment on.
		c.Env = append(c.Env, "HEADSPACE_HOOK_RANKS=srun")
	}
	// Its stdin is /dev/null (os/exec's default): a script that reads
	// stdin sees its end at once.
	c.SysProcAttr = procgroup.Group()
	if contained {
		c.SysProcAttr = procgroup.Contained()
	}
	if !namespaced(c.SysProcAttr) {
		// No PID namespace to end the run with headspace: the hook's
		// watchdog does, by the run's mark.
		c.Env = append(c.Env, fmt.Sprintf("HEADSPACE_PID=%d", os.Getpid()))
	}
	return c, nil
}

// execution is a command under the hook, started: its events' lines
// as they are read, its output as it is copied, its leader's exit.
type execution struct {
	c      *exec.Cmd
	pid    int
	start  time.Time
	dir    string // the hook's module and its FIFO, removed at the end
	mark   string // RunMark=… in the environment of every process of the run
	s      Settings
	onStep func(Step)
	rk     rankState // a node's ranks (ranks_unix.go)

	evR, outR *os.File
	outDone   chan struct{}  // the output's copy has ended
	lines     chan eventLine // the events' lines; nil once closed
	exited    chan error     // the leader's exit

	lastOut atomic.Int64 // when the output last came, in Unix nanoseconds
	tbEnds  atomic.Int32 // how many rank tracebacks' ends (tracebackEnd) the output has shown

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
		io.Copy(&stampWriter{w: out, last: &e.lastOut, ends: &e.tbEnds}, outR)
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

// tracebackEnd is the line the hook writes after a rank's traceback (and
// when a rank exits with a failing status): its arrival in the output
// says the traceback has come through the launcher (srun forwards its
// tasks' output through slurmstepd, later than the rank's event).
const tracebackEnd = "headspace: the rank's traceback ends here"

// stampWriter is the command's output copied to w, the time of each
// write kept in last and the tracebackEnd lines counted in ends (one
// writer: io.Copy's goroutine).
type stampWriter struct {
	w    io.Writer
	last *atomic.Int64
	ends *atomic.Int32
	tail []byte // the end of the last write, for a line split across two
}

func (s *stampWriter) Write(p []byte) (int, error) {
	s.last.Store(time.Now().UnixNano())
	buf := append(s.tail, p...)
	if n := strings.Count(string(buf), tracebackEnd); n > 0 {
		s.ends.Add(int32(n))
		buf = buf[strings.LastIndex(string(buf), tracebackEnd)+len(tracebackEnd):]
	}
	keep := min(len(buf), len(tracebackEnd)-1)
	s.tail = append(s.tail[:0], buf[len(buf)-keep:]...)
	return s.w.Write(p)
}

// settle waits for a raised rank's traceback to come through the output:
// its tracebackEnd line, then no byte for 200 ms (another rank's may
// follow); 30 s at most, a liveness bound, past which the run ends
// without it.
func (e *execution) settle() {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && e.tbEnds.Load() == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	for time.Now().Before(deadline) && time.Since(time.Unix(0, e.lastOut.Load())) < 200*time.Millisecond {
		time.Sleep(20 * time.Millisecond)
	}
}

// finish kills the group and every descendant of the leader (those in
// sessions of their own too), waits for the leader and for both pipes to
// close (every member gone), and returns.
func (e *execution) finish() {
	e.killRanks()
	killTree(e.pid, e.mark)
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
	// The stall bound runs from the first batch, again from each step.
	stall := time.NewTimer(time.Hour)
	stall.Stop()
	defer stall.Stop()
	// A node's ranks are watched for a hang once a second (ranks_unix.go).
	ranksTick := time.NewTicker(time.Second)
	defer ranksTick.Stop()
	for {
		select {
		case <-ranksTick.C:
			if err := e.stalled(); err != nil {
				return e.run, err
			}
		case <-ctx.Done():
			e.finish()
			return e.run, ctx.Err()
		case <-first.C:
			if !e.gotFirst {
				e.finish()
				return e.run, noLoader(e.run, e.s, true)
			}
		case <-stall.C:
			e.finish()
			return e.run, stalled(e.run, e.s)
		case l, ok := <-e.lines:
			if !ok {
				e.lines = nil // every writer gone: the leader's exit follows
				continue
			}
			done, err := e.event(l)
			if done || err != nil {
				return e.run, err
			}
			if e.gotFirst && e.s.StallTimeout > 0 && progress(l.b) {
				stall.Reset(e.s.StallTimeout)
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
	var exit *exec.ExitError
	switch {
	case e.refused != "":
		return run, refusef("%s", e.refused)
	case run.Done:
		return run, nil
	case len(run.Ranks) > 0:
		return run, e.ranksEnded()
	case run.Unsure && e.exitErr == nil:
		// Its steps trained nothing, and no other loop's did before the
		// script ended: the loop measured stands.
		run.Done = true
		return run, nil
	case errors.As(e.exitErr, &exit) && exit.ExitCode() == exitChannel:
		return run, fmt.Errorf("the hook could not write its events after %d steps: the script closed or replaced the hook's file descriptor (the hook's line above names it)", len(run.Steps))
	case e.exitErr != nil:
		return run, &ScriptFailed{Status: e.exitErr.Error(), Steps: len(run.Steps)}
	case len(run.Loaders) == 0 || !e.gotFirst:
		return run, noLoader(run, e.s, false)
	default:
		return run, &EndedEarly{Got: len(run.Steps), Want: run.want(e.s), Run: run}
	}
}

// RunMark is the environment variable that marks every process of one
// run (the script passes its environment on): where the command has no
// PID namespace of its own, the processes that outlived their parent are
// found by it.
const RunMark = "HEADSPACE_OWNLOOP_RUN"

// runs numbers the runs of this process, for RunMark.
var runs atomic.Int64

// noNamespace starts commands without a PID namespace (the tests of the
// fallback).
var noNamespace bool

// runMark is RunMark's line in c's environment.
func runMark(c *exec.Cmd) string {
	for _, kv := range c.Env {
		if strings.HasPrefix(kv, RunMark+"=") {
			return kv
		}
	}
	return ""
}

// exitChannel is the hook's exit status when it cannot write its events
// (EXIT_CHANNEL).
const exitChannel = 4

// progress says an event line is the training loop's progress: a step,
// or a batch served after its last step (the stall bound restarts).
func progress(b []byte) bool {
	return bytes.HasPrefix(b, []byte(`{"ev":"step"`)) || bytes.HasPrefix(b, []byte(`{"ev":"first"`)) || bytes.HasPrefix(b, []byte(`{"ev":"extra"`)) || bytes.HasPrefix(b, []byte(`{"ev":"retarget"`))
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
