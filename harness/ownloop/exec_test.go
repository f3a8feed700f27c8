//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/ownloop"
)

// python is Debian's interpreter with python3-torch (make test-deps).
const python = "/usr/bin/python3"

// needTorch fails (never skips) a test without Debian's torch.
func needTorch(t testing.TB) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch (make test-deps installs python3-torch): %v\n%s", python, err, out)
	}
}

// sleepy copies testdata/sleepy.py into a directory of the test's own, so
// that its path names the test's processes (noneLeft).
func sleepy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/sleepy.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "sleepy.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// noneLeft fails if any process still runs script: the command or one of
// its DataLoader workers.
func noneLeft(t *testing.T, script string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var left []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && bytes.Contains(b, []byte(script)) {
				st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
				if !bytes.Contains(st, []byte(") Z ")) { // a zombie is already dead
					left = append(left, e.Name())
				}
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

func command(t *testing.T, script string, args ...string) ownloop.Command {
	t.Helper()
	c, err := ownloop.ParseCommand(append([]string{python, script}, args...))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func settings(after, stepsAfter int) ownloop.Settings {
	return ownloop.Settings{Mode: "analyze", Loader: 1, NumCaches: 4, ReturnCachesAfter: after, StepsAfter: stepsAfter, FirstBatchTimeout: time.Minute}
}

// truth is the headspace in % that the script measures of itself, without
// the hook: its own loop's step time with the loader and with one batch
// reused.
func truth(t *testing.T, script string, args ...string) float64 {
	t.Helper()
	out, err := exec.Command(python, append([]string{script, "--truth", "40"}, args...)...).Output()
	if err != nil {
		t.Fatalf("truth run: %v", err)
	}
	var m struct{ Loader_s, Cached_s float64 }
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("truth run printed %q: %v", out, err)
	}
	return 100 * max(0, 1-m.Cached_s/m.Loader_s)
}

// TestAnalyzeAgainstTruth runs the analysis on scripts whose truth is
// known and measured without the hook: input-bound (2 workers, a batch
// every 20 ms, a 4 ms step: the loader's batches come in bursts) and
// not (a batch every 2 ms, a 150 ms step: the batches' transfer to the
// main process costs a few milliseconds of its own on a busy machine). The headspace must be within 10
// points of the truth and the verdict right.
func TestAnalyzeAgainstTruth(t *testing.T) {
	needTorch(t)
	for _, tc := range []struct {
		name    string
		args    []string
		getitem time.Duration
		s       ownloop.Settings
		class   analysis.Class
		stage   string
	}{
		{"input-bound", []string{"--getitem-ms", "10", "--step-ms", "4", "--batch", "4", "--workers", "2"}, 10 * time.Millisecond, settings(40, 30), analysis.HighlyInputBound, "dataset __getitem__"},
		{"model-bound", []string{"--getitem-ms", "1", "--step-ms", "150", "--batch", "4", "--workers", "2"}, time.Millisecond, settings(20, 14), analysis.NotInputBound, "model step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := sleepy(t)
			want := truth(t, script, tc.args...)
			cmd := command(t, script, tc.args...)
			s := tc.s
			var out bytes.Buffer
			run, err := ownloop.Exec(context.Background(), cmd, s, &out, nil)
			noneLeft(t, script)
			if err != nil {
				t.Fatalf("Exec: %v\n%s", err, out.String())
			}
			rep, err := ownloop.Analyze(cmd, s, run, 1000)
			if err != nil {
				t.Fatal(err)
			}
			got := rep.HeadspacePercent()
			t.Logf("headspace %.1f%% (truth %.1f%%), before %v after %v, verdict %s, stage %s", got, want, rep.Before.Median, rep.After.Median, rep.Verdict.Class, rep.Verdict.Stage)
			if math.Abs(got-want) > 10 {
				t.Errorf("headspace %.1f%%, truth %.1f%%: more than 10 points apart", got, want)
			}
			if rep.Verdict.Class != tc.class || rep.Verdict.Stage != tc.stage {
				t.Errorf("verdict %s, stage %s; want %s, %s", rep.Verdict.Class, rep.Verdict.Stage, tc.class, tc.stage)
			}
			if rep.Round != 2 {
				t.Errorf("estimates over rounds of %d steps, want 2 (the workers)", rep.Round)
			}
			if rep.Stages.Samples == 0 || rep.Stages.GetItem < tc.getitem || rep.Stages.Workers != 2 {
				t.Errorf("stages %+v: want __getitem__ timed at no less than the script's sleep", rep.Stages)
			}
			if len(rep.Records()) < s.Total() {
				t.Errorf("%d records, want every one of %d steps", len(rep.Records()), s.Total())
			}
		})
	}
}

// TestHookKeepsBatches checks the hook changes no batch and not their order
// before the switch (a shuffled loader, seeded), and replays the first
// num-caches batches in order after it, as SPDL's cache iterator does.
func TestHookKeepsBatches(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	dir := t.TempDir()
	plain, hooked := filepath.Join(dir, "plain.txt"), filepath.Join(dir, "hooked.txt")
	args := []string{"--getitem-ms", "0", "--step-ms", "0", "--samples", "400", "--shuffle", "--workers", "2"}
	if out, err := exec.Command(python, append([]string{script, "--record", plain}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("plain run: %v\n%s", err, out)
	}
	s := settings(20, 10)
	cmd := command(t, script, append([]string{"--record", hooked}, args...)...)
	var out bytes.Buffer
	if _, err := ownloop.Exec(context.Background(), cmd, s, &out, nil); err != nil {
		t.Fatalf("Exec: %v\n%s", err, out.String())
	}
	noneLeft(t, script)
	read := func(p string) []string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	p, h := read(plain), read(hooked)
	if len(p) != 100 || len(h) != s.Total() {
		t.Fatalf("plain run recorded %d batches (want 100), hooked %d (want %d)", len(p), len(h), s.Total())
	}
	for i := range s.ReturnCachesAfter {
		if p[i] != h[i] {
			t.Fatalf("batch %d: %s under the hook, %s without", i, h[i], p[i])
		}
	}
	for i := s.ReturnCachesAfter; i < s.Total(); i++ {
		if want := p[(i-s.ReturnCachesAfter)%s.NumCaches]; h[i] != want {
			t.Errorf("cached batch %d is %s, want cache %d: %s", i, h[i], (i-s.ReturnCachesAfter)%s.NumCaches, want)
		}
	}
	if p[0] == strings.Join(strings.Fields("0,1,2,3"), ",") {
		t.Error("the loader did not shuffle: the order test is weak")
	}
}

func TestScriptRaises(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	var out bytes.Buffer
	_, err := ownloop.Exec(context.Background(), command(t, script, "--getitem-ms", "0", "--step-ms", "0", "--fail-at", "5"), settings(20, 10), &out, nil)
	noneLeft(t, script)
	var sf *ownloop.ScriptFailed
	if !errors.As(err, &sf) || sf.Steps < 4 {
		t.Fatalf("Exec = %v, want ScriptFailed after 5 steps", err)
	}
	if !strings.Contains(out.String(), "Traceback") || !strings.Contains(out.String(), "the script's own failure at step 5") {
		t.Errorf("the script's traceback is not in its output:\n%s", out.String())
	}
}

func TestScriptEndsEarly(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	var out bytes.Buffer
	_, err := ownloop.Exec(context.Background(), command(t, script, "--getitem-ms", "0", "--step-ms", "0", "--samples", "40"), settings(20, 10), &out, nil)
	noneLeft(t, script)
	var ee *ownloop.EndedEarly
	if !errors.As(err, &ee) || ee.Got != 10 || ee.Want != 30 {
		t.Fatalf("Exec = %v, want EndedEarly with 10 of 30 steps\n%s", err, out.String())
	}
}

func TestNoLoader(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	s := settings(20, 10)
	s.FirstBatchTimeout = 3 * time.Second
	start := time.Now()
	_, err := ownloop.Exec(context.Background(), command(t, script, "--no-loader", "60"), s, &bytes.Buffer{}, nil)
	took := time.Since(start)
	noneLeft(t, script)
	if !errors.Is(err, ownloop.ErrNoLoader) || !strings.Contains(err.Error(), "--first-batch-timeout") {
		t.Fatalf("Exec = %v, want ErrNoLoader for the timeout", err)
	}
	if took > s.FirstBatchTimeout+10*time.Second {
		t.Errorf("Exec took %v, want the timeout %v and at most 10 s", took, s.FirstBatchTimeout)
	}
	_, err = ownloop.Exec(context.Background(), command(t, script, "--no-loader", "0.1"), settings(20, 10), &bytes.Buffer{}, nil)
	if !errors.Is(err, ownloop.ErrNoLoader) || !strings.Contains(err.Error(), "ended without") {
		t.Fatalf("Exec = %v, want ErrNoLoader for a script that ends", err)
	}
}

// TestCancelStopsEverything cancels the run (SIGINT's context) in the
// middle: the script and its two workers are gone within a second.
func TestCancelStopsEverything(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	_, err := ownloop.Exec(ctx, command(t, script, "--getitem-ms", "5", "--step-ms", "20"), settings(1000, 10), &bytes.Buffer{}, func(st ownloop.Step) {
		if st.Index == 3 {
			cancelled = time.Now()
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec = %v, want context.Canceled", err)
	}
	if took := time.Since(cancelled); took > time.Second {
		t.Errorf("Exec returned %v after the cancel, want under 1 s", took)
	}
	noneLeft(t, script)
}

// TestSecondLoader: a validation loader iterated inside the training loop
// is named but not cached, and the steps that span it are left out.
func TestSecondLoader(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	s := settings(20, 10)
	run, err := ownloop.Exec(context.Background(), command(t, script, "--getitem-ms", "1", "--step-ms", "1", "--val-every", "5"), s, &bytes.Buffer{}, nil)
	noneLeft(t, script)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Loaders) != 2 || !run.Loaders[0].Target || run.Loaders[1].Target || run.Loaders[1].BatchSize != 4 || run.Loaders[1].Len != 2 {
		t.Fatalf("loaders %+v: want the training one (target) and the validation one", run.Loaders)
	}
	epoch := 0
	for _, st := range run.Steps {
		if st.Phase == "epoch" {
			epoch++
		}
	}
	if epoch < 3 {
		t.Errorf("%d steps marked epoch, want those that span the validation passes (every 5 steps)", epoch)
	}
	rep, err := ownloop.Analyze(command(t, script), s, run, 100)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "#2 DataLoader(Sleepy, batch_size=4, num_workers=0)") {
		t.Errorf("the report does not name the validation loader:\n%s", text.String())
	}
}

func TestMultiProcessRefused(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	t.Setenv("WORLD_SIZE", "2")
	_, err := ownloop.Exec(context.Background(), command(t, script), settings(20, 10), &bytes.Buffer{}, nil)
	if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), "multi-process training") {
		t.Fatalf("Exec = %v, want refused multi-process training", err)
	}
	noneLeft(t, script)
}
