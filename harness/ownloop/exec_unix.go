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
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, HookModule+".py"), Source, 0o600); err != nil {
		return nil, fmt.Errorf("hook: %w", err)
	}
	cfg, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	args := append(append(append([]string{}, cmd.Options...), "-m", HookModule), cmd.Script)
	if cmd.Module {
		args = append(args[:len(args)-1], "-m", cmd.Script)
	}
	args = append(args, cmd.Args...)
	c := exec.Command(cmd.Interpreter, args...)
	pythonPath := dir
	if p := os.Getenv("PYTHONPATH"); p != "" {
		pythonPath += string(os.PathListSeparator) + p
	}
	c.Env = append(os.Environ(), "HEADSPACE_HOOK="+string(cfg), "HEADSPACE_HOOK_FD=3", "PYTHONPATH="+pythonPath)
	c.SysProcAttr = groupAttr()

	evR, evW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		evR.Close()
		evW.Close()
		return nil, err
	}
	c.ExtraFiles = []*os.File{evW}
	c.Stdout, c.Stderr = outW, outW
	start := time.Now()
	err = c.Start()
	evW.Close()
	outW.Close()
	if err != nil {
		evR.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %w", cmd.Interpreter, err)
	}
	pid := c.Process.Pid

	// The command's output is copied as it comes; its end is the end of
	// every process of the group that holds it.
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		io.Copy(out, outR)
	}()
	type line struct {
		b   []byte
		err error
	}
	lines := make(chan line, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(evR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- line{b: append([]byte(nil), sc.Bytes()...)}
		}
		if err := sc.Err(); err != nil {
			lines <- line{err: err}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()

	// finish kills the group, waits for the leader and for both pipes to
	// close (every member gone), and returns.
	var exitErr error
	leaderDone := false
	finish := func() {
		killGroup(pid)
		if !leaderDone {
			exitErr = <-exited
			leaderDone = true
		}
		killGroup(pid) // members that outlived their leader
		stuck := time.After(5 * time.Second)
		for lines != nil {
			select {
			case _, ok := <-lines:
				if !ok {
					lines = nil
				}
			case <-stuck:
				evR.Close() // something outside the group holds the pipe
			}
		}
		select {
		case <-outDone:
		case <-time.After(5 * time.Second):
			outR.Close()
			<-outDone
		}
		evR.Close()
		outR.Close()
	}

	run := &Run{}
	var refused string
	first := time.NewTimer(s.FirstBatchTimeout)
	if s.FirstBatchTimeout <= 0 {
		first.Stop()
	}
	defer first.Stop()
	gotFirst := false
	for {
		select {
		case <-ctx.Done():
			finish()
			return run, ctx.Err()
		case <-first.C:
			if !gotFirst {
				finish()
				return run, fmt.Errorf("%w within --first-batch-timeout %v: the script must iterate a torch.utils.data.DataLoader (or headspace_hook.wrap) in its main process", ErrNoLoader, s.FirstBatchTimeout)
			}
		case l, ok := <-lines:
			if !ok {
				lines = nil // every writer gone: the leader's exit follows
				continue
			}
			if l.err != nil {
				finish()
				return run, fmt.Errorf("reading the hook's events: %w", l.err)
			}
			kind, msg, err := run.apply(l.b)
			if err != nil {
				finish()
				return run, err
			}
			switch kind {
			case "start":
				// The interpreter has the hook loaded: its file can go now,
				// so that not even a SIGKILL of headspace leaves it behind.
				os.RemoveAll(dir)
			case "first":
				gotFirst = true
			case "step":
				if onStep != nil {
					onStep(run.Steps[len(run.Steps)-1])
				}
			case "refuse":
				refused = msg
			case "done":
				finish()
				run.Wall = time.Since(start)
				return run, nil
			}
		case exitErr = <-exited:
			leaderDone = true
			// Read what the hook wrote before it went.
			drain := time.NewTimer(2 * time.Second)
			for lines != nil {
				select {
				case l, ok := <-lines:
					if !ok {
						lines = nil
						continue
					}
					if kind, msg, err := run.apply(l.b); err == nil && kind == "refuse" {
						refused = msg
					}
				case <-drain.C:
					killGroup(pid) // workers that hold the pipe
					drain.Reset(2 * time.Second)
				}
			}
			drain.Stop()
			finish()
			run.Wall = time.Since(start)
			switch {
			case refused != "":
				return run, refusef("%s", refused)
			case run.Done:
				return run, nil
			case exitErr != nil:
				return run, &ScriptFailed{Status: exitErr.Error(), Steps: len(run.Steps)}
			case len(run.Loaders) == 0 || !gotFirst:
				return run, fmt.Errorf("%w: the script ended without iterating a torch.utils.data.DataLoader in its main process", ErrNoLoader)
			default:
				return run, &EndedEarly{Got: len(run.Steps), Want: run.want(s), Run: run}
			}
		}
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
