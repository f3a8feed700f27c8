//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/ownloop"
)

// hostile copies testdata/hostile.py (a script with one habit an option:
// the docstring lists them) into the test's own directory.
func hostile(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/hostile.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "hostile.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runHostile runs hostile.py with args under the hook with s, and checks
// nothing of it is left.
func runHostile(t *testing.T, s ownloop.Settings, args ...string) (*ownloop.Run, string, error) {
	t.Helper()
	script := hostile(t)
	var out bytes.Buffer
	run, err := ownloop.Exec(context.Background(), command(t, script, args...), s, &out, nil)
	noneLeft(t, script)
	return run, out.String(), err
}

// TestTrainingLoopFound: the training loop is measured, to its last step
// and with exit 0, however the script reaches it — a loader made anew
// each epoch at the same line, a peek or a statistics pass on a loader
// of their own first (their steps train nothing; the training loop's
// do) — and nothing is measured on the wrong loader.
func TestTrainingLoopFound(t *testing.T) {
	needTorch(t)
	for _, tc := range []struct {
		name string
		args []string
		want int // the training loader's number
	}{
		{"rebuilt each epoch", []string{"--rebuild", "--samples", "24", "--epochs", "100"}, 1},
		{"peek first", []string{"--peek", "--samples", "400"}, 2},
		{"statistics pass first", []string{"--stats", "40", "--samples", "400"}, 2},
		{"short statistics pass first", []string{"--stats", "8", "--samples", "400"}, 2},
		{"train and validation made on one line", []string{"--split-dict", "--samples", "48", "--epochs", "100"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settings(20, 10)
			s.StallTimeout = time.Minute
			run, out, err := runHostile(t, s, tc.args...)
			if err != nil {
				t.Fatalf("Exec: %v\n%s", err, out)
			}
			ld, ok := run.Target()
			if !run.Done || len(run.Steps) != s.Total() || !ok || ld.Index != tc.want || ld.Workers != 2 || ld.Dataset != "Sleepy" {
				t.Fatalf("done %v, %d steps of %d, training loader %+v; want every step, from loader #%d (2 workers)\n%s", run.Done, len(run.Steps), s.Total(), ld, tc.want, out)
			}
			if tc.args[0] == "--split-dict" {
				epoch := 0
				for _, st := range run.Steps {
					if st.Phase == "epoch" {
						epoch++
					}
				}
				if len(run.Loaders) != 2 || run.Loaders[1].Target || epoch == 0 {
					t.Errorf("loaders %+v, %d steps of phase epoch: want the validation loader iterated as it is, the steps that span its passes left out", run.Loaders, epoch)
				}
			}
			for _, b := range run.Batches {
				if b.Loader != tc.want {
					t.Errorf("batch %+v of loader %d among the training loader's", b, b.Loader)
				}
			}
			rep, err := ownloop.Analyze(command(t, hostile(t)), s, run, 100)
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			rep.WriteText(&text)
			if gaveWay := strings.Contains(text.String(), "loader #1 DataLoader(Sleepy, batch_size=4, num_workers=0) at hostile.py:") &&
				strings.Contains(text.String(), "its steps trained nothing"); gaveWay != (tc.want == 2) {
				t.Errorf("the report says loader #1 gave way: %v, want %v:\n%s", gaveWay, tc.want == 2, text.String())
			}
		})
	}
}

// TestStallNamed: a loop that stops past --stall-timeout ends with one
// line that names it, and nothing is left running. The script sleeps 600
// s at its step 5: a bound of 2 minutes on Exec is about liveness (the
// stall timeout is 3 s).
func TestStallNamed(t *testing.T) {
	needTorch(t)
	s := settings(20, 10)
	s.StallTimeout = 3 * time.Second
	start := time.Now()
	_, out, err := runHostile(t, s, "--stall-at", "5")
	if !errors.Is(err, ownloop.ErrStalled) || !strings.Contains(err.Error(), "#1 DataLoader(Sleepy") || !strings.Contains(err.Error(), "no other loader") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Exec = %v, want one line: the training loop stalled, named\n%s", err, out)
	}
	if took := time.Since(start); took > 2*time.Minute {
		t.Errorf("Exec took %v after a stall bound of %v", took, s.StallTimeout)
	}
	// A loop that trains nothing, peeked at first: the peek stalls, the
	// loader that feeds the steps is named with --loader. Its 100000
	// steps of at least 1 ms outlast the stall bound on any machine.
	_, out, err = runHostile(t, s, "--peek", "--no-train", "--samples", "400000")
	if !errors.Is(err, ownloop.ErrStalled) || !strings.Contains(err.Error(), "#2 DataLoader(Sleepy, batch_size=4, num_workers=2)") || !strings.Contains(err.Error(), "--loader N") {
		t.Fatalf("Exec = %v, want the stall with the loader that delivered named\n%s", err, out)
	}
}

// TestBreakEndsEpoch: epochs ended by break or by itertools.islice start
// the workers again; the step that waits for that is left out (phase
// epoch), as at an epoch's natural end.
func TestBreakEndsEpoch(t *testing.T) {
	needTorch(t)
	for _, tc := range []struct {
		args []string
		pass int // batches a pass: break at i == 6 asks for the seventh
	}{{[]string{"--break-at", "6", "--epochs", "100"}, 7}, {[]string{"--islice", "6", "--epochs", "100"}, 6}} {
		args := tc.args
		s := settings(20, 10)
		run, out, err := runHostile(t, s, args...)
		if err != nil {
			t.Fatalf("%v: Exec: %v\n%s", args, err, out)
		}
		for _, st := range run.Steps {
			if st.Index > 0 && st.Index < s.ReturnCachesAfter && st.Index%tc.pass == 0 && st.Phase != "epoch" {
				t.Errorf("%v: step %d, the first of a new pass (its workers started again), is %q, want epoch", args, st.Index, st.Phase)
			}
		}
	}
}

// TestZipNamed: a second loader that feeds every step (zip) is counted
// step by step beside the training loader.
func TestZipNamed(t *testing.T) {
	needTorch(t)
	s := settings(20, 10)
	run, out, err := runHostile(t, s, "--zip", "8")
	if err != nil {
		t.Fatalf("Exec: %v\n%s", err, out)
	}
	o := run.Others[2]
	if o == nil || o.Steps < s.ReturnCachesAfter-2 || o.StepWait <= 0 {
		t.Fatalf("others %+v: want loader #2 to deliver a batch in each of the loader's steps", run.Others)
	}
	rep, err := ownloop.Analyze(command(t, hostile(t)), s, run, 100)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "#2 DataLoader(Sleepy, batch_size=4, num_workers=1) at hostile.py") || !strings.Contains(text.String(), "feeds every step") {
		t.Errorf("the report does not say loader #2 feeds every step:\n%s", text.String())
	}
	var recorded bool
	for _, c := range ownloop.CommandConfig(command(t, hostile(t)), run) {
		recorded = recorded || c.Key == "loader-2" && strings.HasSuffix(c.Value, "(feeds every step beside the training loader)")
	}
	if !recorded {
		t.Errorf("the result file's settings do not say loader #2 feeds every step: %+v", ownloop.CommandConfig(command(t, hostile(t)), run))
	}
	// The verdict, on the times the sleeps make on an idle machine: loader
	// #2's batches (4 samples of 8 ms, one worker) are waited for 31 ms a
	// step, the training loader's (4 of 1 ms, two workers) hardly at all.
	for i := range run.Steps {
		st := &run.Steps[i]
		st.Time, st.Wait, st.OtherWait = 33*time.Millisecond, 100*time.Microsecond, 31*time.Millisecond
		if st.Phase == "cached" {
			st.Time, st.OtherWait = 32*time.Millisecond, 31*time.Millisecond
		}
	}
	if rep, err = ownloop.Analyze(command(t, hostile(t)), s, run, 100); err != nil {
		t.Fatal(err)
	}
	if v := rep.Verdict; v.Stage != "loader #2 beside the training loader" || v.Class != analysis.HighlyInputBound || !strings.Contains(v.Reason, "--loader 2") {
		t.Errorf("verdict %s, %s (%s): want loader #2 named as the bound, highly input-bound", v.Class, v.Stage, v.Reason)
	}
}

// TestScriptTouchesFD3: a script that closes descriptor 3, opens a file
// there and writes to it breaks neither the hook's events nor its own.
func TestScriptTouchesFD3(t *testing.T) {
	needTorch(t)
	s := settings(20, 10)
	run, out, err := runHostile(t, s, "--touch-fd3")
	if err != nil || !run.Done {
		t.Fatalf("Exec = %v (done %v), want the run whole\n%s", err, run != nil && run.Done, out)
	}
	if !strings.Contains(out, "fd 3 is the script's: True") {
		t.Errorf("the script did not get descriptor 3 for itself:\n%s", out)
	}
}

// TestScriptClosesTheHooksDescriptor: a script that closes every
// descriptor, the hook's too, fails with a line that says so, not as a
// script whose traceback is above.
func TestScriptClosesTheHooksDescriptor(t *testing.T) {
	needTorch(t)
	_, out, err := runHostile(t, settings(20, 10), "--close-fds")
	var sf *ownloop.ScriptFailed
	if err == nil || errors.As(err, &sf) || !strings.Contains(err.Error(), "the script closed or replaced the hook's file descriptor") {
		t.Fatalf("Exec = %v, want the hook's descriptor named as closed\n%s", err, out)
	}
	if !strings.Contains(out, "headspace_hook: writing its events to file descriptor") {
		t.Errorf("the hook's line is not in the output:\n%s", out)
	}
}

// TestOneProcessGroup: init_process_group with world_size 1, and
// WORLD_SIZE=1 as torchrun --nproc-per-node 1 sets it, are one process.
func TestOneProcessGroup(t *testing.T) {
	needTorch(t)
	t.Setenv("WORLD_SIZE", "1")
	t.Setenv("LOCAL_RANK", "0")
	run, out, err := runHostile(t, settings(20, 10), "--dist")
	if err != nil || !run.Done {
		t.Fatalf("Exec = %v, want a one-process group measured\n%s", err, out)
	}
}

// TestMessages: the lines that say why no first batch came name what
// the hook saw.
func TestMessages(t *testing.T) {
	needTorch(t)
	s := settings(20, 10)
	// 20 s leave a loaded machine the time to import torch (torch 2
	// takes seconds) and iterate the loader before the script ends.
	s.FirstBatchTimeout = 20 * time.Second
	for _, tc := range []struct {
		name string
		s    func(*ownloop.Settings)
		args []string
		want []string
	}{
		{"thread", nil, []string{"--thread", "--samples", "40"}, []string{"in its thread", "main thread", "hostile.py:"}},
		{"loader 99", func(s *ownloop.Settings) { s.Loader = 99 }, []string{"--samples", "40"}, []string{"--loader 99", "iterated 1 DataLoader", "#1 DataLoader(Sleepy, batch_size=4, num_workers=2) at hostile.py:"}},
		// Its first sample sleeps 300 s.
		{"slow first batch", nil, []string{"--slow-first", "300"}, []string{"the training loader #1 DataLoader(Sleepy", "first batch did not come within --first-batch-timeout 20s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := s
			if tc.s != nil {
				tc.s(&s)
			}
			_, out, err := runHostile(t, s, tc.args...)
			if !errors.Is(err, ownloop.ErrNoLoader) {
				t.Fatalf("Exec = %v, want ErrNoLoader\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// TestChildrenGo: a child the script starts in a session of its own, and
// one that outlived its parent, are gone when Exec returns: in the
// command's PID namespace, and where there is none (user namespaces
// refused) by the descendants and the run's mark in their environment.
func TestChildrenGo(t *testing.T) {
	needTorch(t)
	for _, fallback := range []bool{false, true} {
		for _, habit := range []string{"--child", "--orphan"} {
			t.Run(fmt.Sprintf("%s without namespace %v", habit, fallback), func(t *testing.T) {
				if fallback {
					ownloop.NoNamespace(t)
				}
				run, out, err := runHostile(t, settings(20, 10), habit)
				if err != nil || !run.Done {
					t.Fatalf("Exec = %v\n%s", err, out)
				}
			})
		}
	}
}

// helperEnv makes the test binary run Exec on a script (runHelper) and
// wait, as headspace would, for TestChildrenGoWithHeadspace to kill.
const helperEnv = "HEADSPACE_OWNLOOP_TEST_HELPER"

func init() { helper = runHelper }

// runHelper is the test binary as headspace: Exec on the script the
// environment names, with its options.
func runHelper(script string) {
	if os.Getenv(helperEnv+"_FALLBACK") != "" {
		ownloop.SetNoNamespace()
	}
	c, err := ownloop.ParseCommand([]string{python, script, "--child", "--step-ms", "50"})
	if err != nil {
		panic(err)
	}
	s := settings(3000, 10)
	ownloop.Exec(context.Background(), c, s, os.Stderr, nil)
}

// TestChildrenGoWithHeadspace: after a SIGKILL of headspace (here the
// test binary as runHelper) nothing the script started is left: not the
// script, not its workers, not its child in a session of its own; in the
// command's PID namespace, and without one (the hook's watchdog).
func TestChildrenGoWithHeadspace(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("without namespace %v", fallback), func(t *testing.T) { childrenGoWithHeadspace(t, fallback) })
	}
}

func childrenGoWithHeadspace(t *testing.T, fallback bool) {
	needTorch(t)
	script := hostile(t)
	h := exec.Command(os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), helperEnv+"="+script)
	if fallback {
		h.Env = append(h.Env, helperEnv+"_FALLBACK=1")
	}
	h.Stderr = os.Stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	defer h.Process.Kill()
	// Wait (a liveness bound) for the script's child to run.
	deadline := time.Now().Add(2 * time.Minute)
	for !running(script, "--sleep-child") {
		if time.Now().After(deadline) {
			t.Fatal("the script's child never ran")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := h.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	noneLeft(t, script)
}

// running says a live process's command line holds every one of words.
func running(words ...string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		all := true
		for _, w := range words {
			all = all && bytes.Contains(b, []byte(w))
		}
		if all {
			return true
		}
	}
	return false
}

// TestLadderSpawnedWorkers: on a loader whose workers are spawned, the
// default levels leave sample and raw out with a line, and keep the
// runs of the others; asked for by name, sample is refused.
func TestLadderSpawnedWorkers(t *testing.T) {
	needTorch(t)
	script := hostile(t)
	cmd := command(t, script, "--spawn")
	c := ownloop.LadderConfig{Levels: []level.Level{level.Host, level.Sample, level.Raw, level.None}, Steps: 4, Count: 1, Loader: 1, FirstBatchTimeout: 2 * time.Minute, RawIfTorchvision: true}
	var out bytes.Buffer
	var got []string
	err := ownloop.Ladder(context.Background(), cmd, c, &out, func(p ownloop.LadderPoint) error {
		got = append(got, p.Level.String())
		return nil
	})
	if err != nil || strings.Join(got, ",") != "host,none" || !strings.Contains(out.String(), "level sample left out: the training loader's workers are not forked") {
		t.Errorf("Ladder = %v, points %v; want host and none, sample left out with a line\n%s", err, got, out.String())
	}
	c.Levels, c.RawIfTorchvision = []level.Level{level.Host, level.Sample}, false
	err = ownloop.Ladder(context.Background(), cmd, c, &bytes.Buffer{}, func(ownloop.LadderPoint) error { return nil })
	if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), "level sample needs forked DataLoader workers") {
		t.Errorf("Ladder(host, sample) = %v, want sample refused", err)
	}
	noneLeft(t, script)
}

// TestVerifyMoreWorkersThanCores: where whatif --verify runs more workers
// than the machine has cores, a line under the check says why the model
// may miss.
func TestVerifyMoreWorkersThanCores(t *testing.T) {
	needTorch(t)
	script := hostile(t)
	w := ownloop.WhatIf{Step: 2 * time.Millisecond, PerBatch: 8 * time.Millisecond, CPUPerBatch: time.Millisecond, Workers: 3, Cores: 2}
	checks, err := w.VerifyAll(context.Background(), command(t, script), 1, 6, time.Minute, time.Minute, &bytes.Buffer{}, nil)
	noneLeft(t, script)
	if err != nil || len(checks) != 2 {
		t.Fatalf("VerifyAll = %v, %v; want checks at 3 and 4 workers", checks, err)
	}
	var out bytes.Buffer
	ownloop.WhatIfReport{Model: w, Checks: checks, VerifySteps: 6}.WriteText(&out)
	if !strings.Contains(out.String(), "more workers than cores (3 on 2)") || !strings.Contains(out.String(), "more workers than cores (4 on 2)") {
		t.Errorf("no line says the workers outnumber the cores:\n%s", out.String())
	}
}
