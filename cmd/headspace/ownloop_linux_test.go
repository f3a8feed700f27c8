//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// ownPython is the interpreter the own-loop tests run scripts with
// (ownloop.TestPython: $HEADSPACE_OWNLOOP_PYTHON, else Debian's).
var ownPython = ownloop.TestPython()

// ownScript copies the ownloop tests' sleepy.py into a directory of the
// test's own and fails (never skips) without Debian's torch.
func ownScript(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command(ownPython, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch (make test-deps installs python3-torch): %v\n%s", ownPython, err, out)
	}
	b, err := os.ReadFile("../../harness/ownloop/testdata/sleepy.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "sleepy.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ownLeft fails if a process of script is still running.
func ownLeft(t *testing.T, script string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var left []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err == nil && bytes.Contains(b, []byte(script)) && !bytes.Contains(st, []byte(") Z ")) {
				left = append(left, e.Name())
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of %s left running: %v", script, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAnalyzeOwnLoop runs analyze on a training command end to end: the
// report, a result file that compare accepts, and analyze --from of it
// printing the run's report and drawing its plot again, byte for byte.
func TestAnalyzeOwnLoop(t *testing.T) {
	script := ownScript(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "own.txt")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"analyze", "--num-caches", "3", "--return-caches-after", "16", "--steps-after", "12", "--out", out,
		"--plot", filepath.Join(dir, "run"), "--", ownPython, script, "--getitem-ms", "8", "--step-ms", "2"}, &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"headspace:", "verdict: highly input-bound", "bounding stage: dataset __getitem__", "loader #1 DataLoader(Sleepy", "__getitem__"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"command: " + ownPython + " " + script, "interpreter: " + ownPython, "torch: ", "BenchmarkOwnLoopAnalyze/script=sleepy.py/phase=loader", "BenchmarkOwnLoopAnalyzeStage/script=sleepy.py/stage=getitem"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q", want)
		}
	}
	want := strings.ReplaceAll(stdout.String(), filepath.Join(dir, "run"), filepath.Join(dir, "from"))
	analyzeFromIsRun(t, out, want, "--plot", filepath.Join(dir, "from"))
	for _, ext := range []string{".png", ".svg"} {
		ran, err := os.ReadFile(filepath.Join(dir, "run"+ext))
		if err != nil {
			t.Fatal(err)
		}
		if from, err := os.ReadFile(filepath.Join(dir, "from"+ext)); err != nil || !bytes.Equal(from, ran) {
			t.Errorf("analyze --from --plot: %s differs from the run's (%v)", ext, err)
		}
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"compare", out, out}, &stdout, &stderr); code != 0 {
		t.Errorf("compare of the file with itself: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// analyzeFromIsRun checks that analyze --from the file out (with flags)
// prints what its run printed, ran, but for the run's results line; and
// that a flag of a run is refused with --from, exit 2.
func analyzeFromIsRun(t *testing.T, out, ran string, flags ...string) {
	t.Helper()
	code, from, stderr := runCLI(append([]string{"analyze", "--from", out}, flags...)...)
	if want := strings.TrimSuffix(ran, "results: "+out+" (go tool benchstat -col /phase "+out+")\n"); code != 0 || from != want {
		t.Errorf("analyze --from: exit %d, stderr %q, stdout:\n%s\nwant the run's:\n%s", code, stderr, from, want)
	}
	if code, _, stderr := runCLI("analyze", "--from", out, "--loader", "2"); code != 2 || !strings.Contains(stderr, "--loader only apply to a run that measures") {
		t.Errorf("analyze --from --loader 2: exit %d, stderr %q; want 2 and --loader refused", code, stderr)
	}
}

// TestAnalyzeOwnLoopFaults: each fault is one line and its exit status;
// none leaves a result file or a process.
func TestAnalyzeOwnLoopFaults(t *testing.T) {
	script := ownScript(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing", []string{"--", "no-such-python-h43", script}, 2, "not found"},
		{"not python", []string{"--", "ls", script}, 2, "is not a Python interpreter"},
		{"isolated", []string{"--", ownPython, "-I", script}, 2, "-I makes the interpreter ignore PYTHONPATH"},
		{"unsupported launcher", []string{"--", "deepspeed", "--num_gpus", "2", script}, 2, "deepspeed is not supported yet"},
		{"more than one node", []string{"--", "torchrun", "--nnodes", "2", script}, 2, "ranks on more than one node are not supported"},
		{"synthetic flag", []string{"--workers", "2", "--", ownPython, script}, 2, "--workers only apply to headspace's own pipeline"},
		{"no loader", []string{"--first-batch-timeout", "2s", "--", ownPython, script, "--no-loader", "60"}, 2, "no DataLoader iterated within --first-batch-timeout"},
		{"raises", []string{"--", ownPython, script, "--getitem-ms", "0", "--step-ms", "0", "--fail-at", "3"}, 1, "the script failed"},
		{"ends early", []string{"--return-caches-after", "20", "--steps-after", "10", "--", ownPython, script, "--getitem-ms", "0", "--step-ms", "0", "--samples", "40"}, 2, "the script ended after 10 of the 30 steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".txt")
			args := append([]string{"analyze", "--out", out}, tc.args...)
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(context.Background(), args, &stdout, &stderr)
			ownLeft(t, script)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if code != tc.code || !strings.Contains(last, tc.want) {
				t.Errorf("exit %d, last line %q; want %d and %q\n%s", code, last, tc.code, tc.want, stderr.String())
			}
			if tc.name == "raises" && !strings.Contains(stderr.String(), "Traceback") {
				t.Errorf("the script's traceback is not shown:\n%s", stderr.String())
			}
			if tc.name == "no loader" && time.Since(start) > 12*time.Second {
				t.Errorf("took %v, want the 2 s timeout and at most 10 s more", time.Since(start))
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// TestAnalyzeOwnLoopPartial: a script whose one epoch of 30 batches ends
// 10 steps after the switch (the epoch keeps its length, as
// CacheDataLoader's does) is refused with exit 2 and no file; with
// --partial it is reported and kept, marked partial, and analyze --from
// of it reports it again, partial.
func TestAnalyzeOwnLoopPartial(t *testing.T) {
	script := ownScript(t)
	out := filepath.Join(t.TempDir(), "partial.txt")
	args := []string{"analyze", "--return-caches-after", "20", "--steps-after", "30", "--out", out,
		"--", ownPython, script, "--getitem-ms", "4", "--step-ms", "1", "--samples", "120"}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	ownLeft(t, script)
	if code != 2 || !strings.Contains(stderr.String(), "the script ended after 30 of the 50 steps") {
		t.Errorf("exit %d: %s; want 2, 30 of 50 steps", code, stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatalf("%s written without --partial", out)
	}
	stdout.Reset()
	stderr.Reset()
	code = run(context.Background(), append([]string{"analyze", "--partial"}, args[1:]...), &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 || !strings.Contains(stdout.String(), "partial: the script ended after 30 of 50 steps") {
		t.Fatalf("--partial: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), "partial: true") || !strings.Contains(string(b), "phase=cached") {
		t.Errorf("--partial kept %s (%v) without partial: true or cached steps:\n%s", out, err, b)
	}
	analyzeFromIsRun(t, out, stdout.String())
}

// TestAnalyzeOwnLoopSIGINT interrupts a real headspace in the middle of a
// script's run, analyze's and ladder's: exit 130 within a second, the
// script and its workers gone.
func TestAnalyzeOwnLoopSIGINT(t *testing.T) {
	script := ownScript(t)
	bin := buildHeadspace(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"analyze", "--return-caches-after", "100000"},
		{"ladder", "--levels", "none", "--steps", "100000", "--out", filepath.Join(dir, "ladder.txt")},
	} {
		cmd := exec.Command(bin, append(args, "--", ownPython, script, "--getitem-ms", "5", "--step-ms", "20")...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for the workers: the script's processes beyond the first.
		deadline := time.Now().Add(60 * time.Second)
		for {
			n := 0
			ents, _ := os.ReadDir("/proc")
			for _, e := range ents {
				if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(b, []byte(script)) && !bytes.Contains(b, []byte(bin)) {
					n++
				}
			}
			if n >= 3 {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("%s: the script and its 2 workers never ran: %d processes\n%s", args[0], n, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		code, took := interrupt(t, cmd, args[0]+" -- "+script)
		if code != 130 || took > time.Second {
			t.Errorf("%s: exit %d after %v; want 130 within 1 s\n%s", args[0], code, took, stderr.String())
		}
		ownLeft(t, script)
	}
}

// TestLadderOwnLoop runs the ladder on a training command: the table, a
// result file of BenchmarkOwnLoopLadder/level=…/script=… records, ladder
// --from of it printing the run's table, and level device refused in one
// line without a GPU.
func TestLadderOwnLoop(t *testing.T) {
	script := ownScript(t)
	out := filepath.Join(t.TempDir(), "ladder.txt")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"ladder", "--steps", "6", "--count", "1", "--out", out,
		"--", ownPython, script, "--getitem-ms", "6", "--step-ms", "2"}, &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "level raw left out") {
		t.Errorf("the default levels did not leave raw out on a dataset without .loader:\n%s", stderr.String())
	}
	for _, want := range []string{"host ", "sample ", "none ", "raw data loading + transforms", "batching (collate)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"BenchmarkOwnLoopLadder/level=host/script=sleepy.py/workers=2", "BenchmarkOwnLoopLadder/level=none/script=sleepy.py/workers=2", "torch: ", "steps/s"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
	code, from, stderrFrom := runCLI("ladder", "--from", out)
	if want := strings.TrimSuffix(stdout.String(), "results: "+out+" (go tool benchstat -col /level "+out+")\n"); code != 0 || from != want {
		t.Errorf("ladder --from: exit %d, stderr %q, stdout:\n%s\nwant the run's:\n%s", code, stderrFrom, from, want)
	}
	if code, _, stderrFrom := runCLI("ladder", "--from", out, "--count", "2"); code != 2 || !strings.Contains(stderrFrom, "--count only apply to a run that measures") {
		t.Errorf("ladder --from --count 2: exit %d, stderr %q; want 2 and --count refused", code, stderrFrom)
	}
	stderr.Reset()
	code = run(context.Background(), []string{"ladder", "--levels", "device", "--", ownPython, script}, &stdout, &stderr)
	ownLeft(t, script)
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); code != 2 || !strings.Contains(lines[len(lines)-1], "level device needs a CUDA GPU") {
		t.Errorf("--levels device: exit %d, %q; want 2 and one line", code, stderr.String())
	}
}

// TestWhatIfOwnLoop: whatif on a training command prints what it would
// take from the measured stages, and whatif --from its --out file prints
// the same bytes before the run's results line.
func TestWhatIfOwnLoop(t *testing.T) {
	script := ownScript(t)
	out := filepath.Join(t.TempDir(), "whatif.txt")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"whatif", "--out", out, "--", ownPython, script, "--getitem-ms", "8", "--step-ms", "2"}, &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"what it would take", "to make the model the bound:", "dataset __getitem__ must take"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	code, from, stderrFrom := runCLI("whatif", "--from", out)
	if want := strings.TrimSuffix(stdout.String(), "results: "+out+"\n"); code != 0 || from != want {
		t.Errorf("whatif --from: exit %d, stderr %q, stdout:\n%s\nwant the run's:\n%s", code, stderrFrom, from, want)
	}
}

// TestAnalyzeOwnLoopStalls: a loop that stops past --stall-timeout exits
// 2 with one line that names it, no result file and no process left. The
// script sleeps 600 s at its step 5: the bound of 2 minutes on the run is
// about liveness.
func TestAnalyzeOwnLoopStalls(t *testing.T) {
	script := hostileScript(t)
	out := filepath.Join(t.TempDir(), "stall.txt")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), []string{"analyze", "--stall-timeout", "3s", "--out", out, "--", ownPython, script, "--stall-at", "5"}, &stdout, &stderr)
	ownLeft(t, script)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if last := lines[len(lines)-1]; code != 2 || !strings.Contains(last, "the training loop stalled: loader #1 DataLoader(Sleepy") {
		t.Errorf("exit %d, last line %q; want 2 and the stall named\n%s", code, last, stderr.String())
	}
	if took := time.Since(start); took > 2*time.Minute {
		t.Errorf("took %v with --stall-timeout 3s", took)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}

// hostileScript copies the ownloop tests' hostile.py (a script with one
// habit an option) into a directory of the test's own.
func hostileScript(t *testing.T) string {
	t.Helper()
	ownScript(t) // torch is there
	b, err := os.ReadFile("../../harness/ownloop/testdata/hostile.py")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "hostile.py")
	if err := os.WriteFile(script, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestWhatIfOwnLoopPeek: on a script that peeks at a loader of its own
// before training, whatif --verify verifies on the loader the analysis
// measured (the one whose steps train), not the one --loader names.
func TestWhatIfOwnLoopPeek(t *testing.T) {
	script := hostileScript(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"whatif", "--verify", "--steps", "6", "--", ownPython, script, "--peek", "--samples", "4000", "--getitem-ms", "4"}, &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 || !strings.Contains(stdout.String(), "verify (6 steps") || !strings.Contains(stdout.String(), "workers: measured") {
		t.Fatalf("exit %d; want the checks of the loader that trains\n%s\n%s", code, stdout.String(), stderr.String())
	}
}
