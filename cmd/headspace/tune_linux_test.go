//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/workloads"
)

// tunableScript copies the ownloop tests' tunable.py (a loader of
// num_workers=0 whose samples are reads) into a directory of the test's
// own and fails (never skips) without Debian's torch.
func tunableScript(t *testing.T) string {
	t.Helper()
	ownScript(t) // checks torch
	b, err := os.ReadFile("../../harness/ownloop/testdata/tunable.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tunable.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTuneFaults: a budget under 10 s, no command, and a budget too
// small for one candidate once the profile has run are each one line
// and exit 2, with no file and no process left.
func TestTuneFaults(t *testing.T) {
	script := tunableScript(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"tiny budget", []string{"--budget", "5s", "--", ownPython, script}, "--budget 5s is too small for one candidate: a run of a training script takes seconds; give 10s or more"},
		{"no command", []string{"--budget", "1m"}, "give the training command after --"},
		{"a launcher's ranks", []string{"--budget", "1m", "--", "torchrun", "--nproc-per-node", "2", script}, "tune: torchrun starts ranks, and tune measures one process this round"},
		// 400 timed steps of 20 ms: a run takes 8 s or more, and the
		// profile's 70 steps more than 3 s, so 12 s holds no candidate.
		{"budget after the profile", []string{"--budget", "12s", "--steps", "400", "--", ownPython, script, "--getitem-ms", "1", "--step-ms", "20"}, "--budget 12s is too small: budget too small: one candidate and its paired check need about"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".txt")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"tune", "--out", out}, tc.args...), &stdout, &stderr)
			ownLeft(t, script)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if last := lines[len(lines)-1]; code != 2 || !strings.Contains(last, tc.want) {
				t.Errorf("exit %d, last line %q; want 2 and %q\n%s", code, last, tc.want, stderr.String())
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// TestTuneFailedCandidate tunes a script whose workers numbered 4 or
// more fail (out of memory): 6 workers is recorded as failed with its
// reason, the search goes on, and a setting of fewer is recommended
// after the final check; the result file records every run and decodes.
func TestTuneFailedCandidate(t *testing.T) {
	script := tunableScript(t)
	out := filepath.Join(t.TempDir(), "tune.txt")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"tune", "--budget", "10m", "--rounds", "1", "--pairs", "1", "--steps", "8", "--out", out,
		"--", ownPython, script, "--getitem-ms", "4", "--step-ms", "8", "--max-workers", "4"}, &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"the what-if model's pick: ", "num_workers=6, prefetch_factor=2", "failed: the script failed", "final check, paired runs alternated:\n    before (the script's own): ", "set: DataLoader(..., num_workers="} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "out of memory (--max-workers 4)") {
		t.Errorf("the script's error is not shown:\n%s", stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tune-failed-1: num_workers=6, prefetch_factor=2: the script failed", "BenchmarkTune/script=tunable.py/stage=profile/workers=0/",
		"BenchmarkTune/script=tunable.py/stage=search/workers=6/prefetch=2/pin=false/persistent=false/start=default 1 1 failed", "stage=check/workers=0/"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	res, err := workloads.TuneCodec.Decode(recs)
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Answer(); !a.Recommend || a.Best.Workers == 0 || a.Best.Workers >= 6 {
		t.Errorf("answer from the file %+v", a)
	}
}

// TestTuneSIGINT interrupts a real headspace tune in its search: exit
// 130, the best so far printed, the result file written (marked partial)
// with every run so far, the script and its workers gone.
func TestTuneSIGINT(t *testing.T) {
	script := tunableScript(t)
	bin := buildHeadspace(t)
	out := filepath.Join(t.TempDir(), "tune.txt")
	cmd := exec.Command(bin, "tune", "--budget", "10m", "--steps", "200", "--out", out, "--", ownPython, script, "--getitem-ms", "4", "--step-ms", "8")
	var stdout bytes.Buffer
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(stderr.String(), "tune: search") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no search run ended in 3 minutes:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // into the next run
	code, _ := interrupt(t, cmd, "tune -- "+script)
	ownLeft(t, script)
	if code != 130 {
		t.Errorf("exit %d, want 130\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "in the search (interrupted)") {
		t.Errorf("no best so far:\n%s", stdout.String())
	}
	if want := "headspace tune: interrupted: the best so far is above\n"; !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("stderr does not end with %q:\n%s", want, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), "partial: true") {
		t.Fatalf("%s: %v, not marked partial:\n%s", out, err, b)
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	res, err := workloads.TuneCodec.Decode(recs)
	if err != nil || res.Stopped != "interrupted" || len(res.Runs) == 0 {
		t.Errorf("the file decodes to %d runs, stopped %q: %v", len(res.Runs), res.Stopped, err)
	}
}

// lockedBuffer is a buffer a running command writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
