//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/tune"
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
		{"a launcher not supported", []string{"--budget", "1m", "--", "deepspeed", "--num_gpus", "2", script}, "deepspeed is not supported yet"},
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
	tuneFromRebuilds(t, out, stdout.String()) // the failed candidate's reason too
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

// TestTuneRanks tunes a node's 2 ranks under torchrun (ddp.py with
// num_workers=0, whose workers numbered 2 or more fail) at a small
// budget, end to end: the profile is the slowest rank's, the model's pick
// is on a rank's cores, a candidate that fails in the ranks is recorded
// failed with its rank's reason and the search goes on, the answer's line
// goes in every rank's DataLoader, and the file records every run with
// ranks=2, decodes, and names the launcher; no rank is left. Its
// structure is checked, not its figures (the busy machine's).
func TestTuneRanks(t *testing.T) {
	script := ddpScript(t)
	out := filepath.Join(t.TempDir(), "tune.txt")
	var stdout, stderr bytes.Buffer
	args := append([]string{"tune", "--budget", "4m", "--rounds", "1", "--pairs", "1", "--steps", "6", "--out", out, "--"},
		torchrunArgs(t, script, "--workers", "0", "--getitem-ms", "4", "--step-ms", "4", "--max-workers", "2")...)
	code := run(context.Background(), args, &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	text := stdout.String()
	for _, want := range []string{"profile (the script as it is, 2 ranks, each rank's loader num_workers=0; the slowest rank's, which the others wait for): ",
		"each candidate runs in every rank's training loader", "workers a rank (predicted ", "on a rank's 1 cores: the machine's shared by 2 ranks)",
		"failed: rank "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(stderr.String(), "out of memory (--max-workers 2)") {
		t.Errorf("the rank's error is not shown:\n%s", stderr.String())
	}
	if !strings.Contains(text, "set, in every rank (the DataLoader each of the 2 ranks makes): DataLoader(..., num_workers=") && !strings.Contains(text, "keep the script's own settings (DataLoader(..., num_workers=0)): ") {
		t.Errorf("no answer:\n%s", text)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"launcher: " + ownLauncher(), "ranks: 2", "tune-failed-1: num_workers=", ": rank ",
		"BenchmarkTune/script=ddp.py/stage=profile/workers=0/prefetch=0/pin=false/persistent=false/start=default/ranks=2",
		"/stage=check/workers=0/prefetch=0/pin=false/persistent=false/start=default/ranks=2 ", "/stage=best/"} {
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
	if res.Profile.Ranks != 2 || res.Profile.Model == nil || res.Profile.Model.Cores != 1 || !slices.ContainsFunc(res.Runs, func(r tune.Run) bool { return r.Failed }) {
		t.Errorf("the file decodes to %d ranks, model %+v, runs %+v", res.Profile.Ranks, res.Profile.Model, res.Runs)
	}
}

// TestTuneRanksSIGINT interrupts a tune of a node's 2 ranks in its
// search: exit 130, the best so far printed, the result file written
// (marked partial) with every run so far, no rank nor worker left.
func TestTuneRanksSIGINT(t *testing.T) {
	script := ddpScript(t)
	bin := buildHeadspace(t)
	out := filepath.Join(t.TempDir(), "tune.txt")
	cmd := exec.Command(bin, append([]string{"tune", "--budget", "10m", "--steps", "300", "--out", out, "--"},
		torchrunArgs(t, script, "--workers", "0", "--getitem-ms", "4", "--step-ms", "8")...)...)
	var stdout bytes.Buffer
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(4 * time.Minute)
	for !strings.Contains(stderr.String(), "tune: search") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no search run ended in 4 minutes:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // into the next run
	code, _ := interrupt(t, cmd, "tune -- torchrun "+script)
	ownLeft(t, script)
	if code != 130 {
		t.Errorf("exit %d, want 130\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "in the search (interrupted)") || !strings.Contains(stdout.String(), "2 ranks") {
		t.Errorf("no best so far:\n%s", stdout.String())
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
	if err != nil || res.Stopped != "interrupted" || len(res.Runs) == 0 || res.Profile.Ranks != 2 {
		t.Errorf("the file decodes to %d runs of %d ranks, stopped %q: %v", len(res.Runs), res.Profile.Ranks, res.Stopped, err)
	}
}
