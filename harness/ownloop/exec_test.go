//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/ownloop"
)

// needTorch fails (never skips) a test without Debian's torch.
func needTorch(t testing.TB) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch (make test-deps installs python3-torch): %v\n%s", python, err, out)
	}
}

// sleepy copies testdata/sleepy.py into a directory of the test's own, so
// that its path names the test's processes (noneLeft).
func sleepy(t testing.TB) string {
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
// its DataLoader workers. It waits up to 30 s for them to go, a bound on
// liveness that a loaded machine's scheduler cannot reach (Exec has
// killed and reaped the group; an idle machine sees none at once).
func noneLeft(t testing.TB, script string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
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

func command(t testing.TB, script string, args ...string) ownloop.Command {
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
func truth(t testing.TB, script string, args ...string) float64 {
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

// TestAnalyzeAgainstTruth runs the analysis on hooked runs of scripts
// whose truth is known by construction: input-bound (2 workers, 4
// samples of 10 ms a batch, a 4 ms step: a batch every 20 ms against a
// 4 ms step, 80%) and not (1 ms samples, a 150 ms step: none). The
// hooked run gives the steps, their phases, the batches and the loaders
// as the hook reports them; what the wall clock measured in it is checked
// only where the script's sleeps bound it from below (a step takes no
// less than its sleep, a sample's __getitem__ no less than its own),
// which a busy machine cannot break. The figures are checked on the same
// run with the times the scripts' sleeps make injected in place of the
// measured ones (idle): the headspace within 2 points of their truth,
// the verdict and the stage right. How close the measured headspace
// comes to the script's own timing is a timing, so a benchmark's:
// BenchmarkAnalyzeAgainstTruth.
func TestAnalyzeAgainstTruth(t *testing.T) {
	needTorch(t)
	for _, tc := range []struct {
		name          string
		getitem, step time.Duration
		s             ownloop.Settings
		class         analysis.Class
		stage         string
	}{
		{"input-bound", 10 * time.Millisecond, 4 * time.Millisecond, settings(40, 30), analysis.HighlyInputBound, "dataset __getitem__"},
		{"model-bound", time.Millisecond, 150 * time.Millisecond, settings(20, 14), analysis.NotInputBound, "model step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := sleepy(t)
			cmd := command(t, script, sleepyArgs(tc.getitem, tc.step)...)
			s := tc.s
			var out bytes.Buffer
			run, err := ownloop.Exec(context.Background(), cmd, s, &out, nil)
			noneLeft(t, script)
			if err != nil {
				t.Fatalf("Exec: %v\n%s", err, out.String())
			}
			measured, err := ownloop.Analyze(cmd, s, run, 1000)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("measured: headspace %.1f%%, before %v after %v, verdict %s, stage %s", measured.HeadspacePercent(), measured.Before.Median, measured.After.Median, measured.Verdict.Class, measured.Verdict.Stage)
			checkHooked(t, run, measured, tc.getitem, tc.step)

			want := idle(run, tc.getitem, tc.step)
			rep, err := ownloop.Analyze(cmd, s, run, 1000)
			if err != nil {
				t.Fatal(err)
			}
			got := rep.HeadspacePercent()
			if math.Abs(got-want) > 2 {
				t.Errorf("headspace %.1f%% (before %v, after %v), truth %.1f%%: more than 2 points apart", got, rep.Before.Median, rep.After.Median, want)
			}
			if rep.Verdict.Class != tc.class || rep.Verdict.Stage != tc.stage {
				t.Errorf("verdict %s, stage %s (%s); want %s, %s", rep.Verdict.Class, rep.Verdict.Stage, rep.Verdict.Reason, tc.class, tc.stage)
			}
			if rep.Stages.GetItem != tc.getitem || rep.Stages.Workers != 2 {
				t.Errorf("stages %+v: want __getitem__ at %v a sample, 2 workers", rep.Stages, tc.getitem)
			}
		})
	}
}

// sleepyArgs are sleepy.py's arguments for a run of 2 workers, batches
// of 4, each sample's __getitem__ sleeping getitem and each step step.
func sleepyArgs(getitem, step time.Duration) []string {
	return []string{"--getitem-ms", msArg(getitem), "--step-ms", msArg(step), "--batch", "4", "--workers", "2"}
}

// checkHooked checks what holds of a hooked run of sleepy.py (sleepyArgs)
// however busy the machine: the training loader as made, every step
// once, from the loader before the switch and from the caches after it,
// no step or sample shorter than its sleep, and the analysis of those
// measured times over rounds of the 2 workers, each estimate within its
// interval and no less than the step's sleep.
func checkHooked(t *testing.T, run *ownloop.Run, rep ownloop.Report, getitem, step time.Duration) {
	t.Helper()
	s := rep.Settings
	if ld := rep.Loader; !ld.Target || ld.BatchSize != 4 || ld.Workers != 2 || !ld.Measured.GetItem || len(run.Loaders) != 1 {
		t.Errorf("loaders %+v: want one, the training loader of batches of 4 and 2 workers, __getitem__ timed", run.Loaders)
	}
	if !run.Done || len(run.Steps) != s.Total() {
		t.Fatalf("%d steps (done %v), want every one of %d", len(run.Steps), run.Done, s.Total())
	}
	for i, st := range run.Steps {
		phase := "loader"
		if i >= s.ReturnCachesAfter {
			phase = "cached"
		}
		if st.Index != i || st.Phase != phase || st.Time < step || st.Wait < 0 || st.Wait > st.Time {
			t.Errorf("step %d: %+v, want step %d from the %s, no shorter than its %v sleep, its wait within it", i, st, i, phase, step)
		}
	}
	if len(run.Batches) == 0 {
		t.Fatal("no batch timed in the workers")
	}
	for _, b := range run.Batches {
		if b.Samples != 4 || b.Worker < 0 || b.Worker > 1 || b.GetItem < 4*getitem {
			t.Errorf("batch %+v: want 4 samples from worker 0 or 1, __getitem__ no shorter than their sleeps (%v)", b, 4*getitem)
		}
	}
	if rep.Round != 2 {
		t.Errorf("estimates over rounds of %d steps, want 2 (the workers)", rep.Round)
	}
	for _, e := range []analysis.Estimate{rep.Before, rep.After} {
		if e.Lo > e.Median || e.Median > e.Hi || e.Median < step {
			t.Errorf("estimate %v (%v – %v): want the median within its interval, no shorter than the step's %v sleep", e.Median, e.Lo, e.Hi, step)
		}
	}
	if v := rep.Verdict; v.Share < 0 || v.Share > 1 || v.Stage == "" {
		t.Errorf("verdict %+v: want a share of the loop's time and a stage", v)
	}
	if n := len(rep.Records()); n < s.Total() {
		t.Errorf("%d records, want every one of %d steps", n, s.Total())
	}
}

// idle replaces the times measured in a hooked run of sleepy.py
// (sleepyArgs) with those its sleeps make on an idle machine (idleSteps),
// and a jitter of up to 1 ms a step from a seeded source: each worker makes a
// batch in 4 getitem, the two of them one every 2 getitem; a step sleeps
// step, and the first of each round of the workers' two steps waits for
// the rest of the loader's round, the second finds its batch ready.
// Batches are timed at getitem a sample (CPU 20 µs) and 100 µs of
// collate. It returns their truth, as sleepy.py --truth measures it: the
// headspace in % by the mean step time with the loader and cached.
func idle(run *ownloop.Run, getitem, step time.Duration) float64 {
	idleSteps(run, step, 4*getitem, 2)
	var loader, cached time.Duration
	var nl, nc int
	for _, st := range run.Steps {
		switch st.Phase {
		case "loader":
			loader += st.Time
			nl++
		case "cached":
			cached += st.Time
			nc++
		}
	}
	for i := range run.Batches {
		b := &run.Batches[i]
		n := time.Duration(b.Samples)
		b.GetItem, b.GetItemCPU = n*getitem, n*20*time.Microsecond
		b.Collate, b.CollateCPU = 100*time.Microsecond, 100*time.Microsecond
	}
	return 100 * max(0, 1-(float64(cached)/float64(nc))/(float64(loader)/float64(nl)))
}

// idleSteps replaces the step times of a hooked run with those a loop
// of step-long steps makes on an idle machine, fed by a loader whose
// workers each take batch to make a batch, and a jitter of up to 1 ms a
// step from a seeded source. With W workers a round of W steps gets W
// batches, one from each worker: the first step of the round waits for
// what the round's steps do not cover (batch - W·step), the others find
// their batch ready. Without workers (0) the main process makes each
// batch inside its step's request: every step waits batch. Steps fed
// from the caches, or that span an epoch's start, wait for nothing.
func idleSteps(run *ownloop.Run, step, batch time.Duration, workers int) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := max(1, workers)
	wait := max(0, batch-time.Duration(w)*step)
	if workers == 0 {
		wait = batch
	}
	for i := range run.Steps {
		st := &run.Steps[i]
		st.Time, st.Wait = step+time.Duration(rng.Int64N(int64(time.Millisecond))), 0
		if st.Phase == "loader" && st.Index%w == 0 {
			st.Time += wait
			st.Wait = wait
		}
	}
}

// BenchmarkAnalyzeAgainstTruth is how close the hooked run's headspace
// comes to the one sleepy.py measures of itself without the hook
// (--truth), on this machine: headspace-% and truth-% for the scripts of
// TestAnalyzeAgainstTruth, and error-points, how far apart they are.
func BenchmarkAnalyzeAgainstTruth(b *testing.B) {
	needTorch(b)
	for _, tc := range []struct {
		name          string
		getitem, step time.Duration
		s             ownloop.Settings
	}{
		{"input-bound", 10 * time.Millisecond, 4 * time.Millisecond, settings(40, 30)},
		{"model-bound", time.Millisecond, 150 * time.Millisecond, settings(20, 14)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			script := sleepy(b)
			args := sleepyArgs(tc.getitem, tc.step)
			cmd := command(b, script, args...)
			var got, want, off float64
			n := 0
			for b.Loop() {
				truth := truth(b, script, args...)
				var out bytes.Buffer
				run, err := ownloop.Exec(context.Background(), cmd, tc.s, &out, nil)
				noneLeft(b, script)
				if err != nil {
					b.Fatalf("Exec: %v\n%s", err, out.String())
				}
				rep, err := ownloop.Analyze(cmd, tc.s, run, 1000)
				if err != nil {
					b.Fatal(err)
				}
				got += rep.HeadspacePercent()
				want += truth
				off += math.Abs(rep.HeadspacePercent() - truth)
				n++
			}
			b.ReportMetric(got/float64(n), "headspace-%")
			b.ReportMetric(want/float64(n), "truth-%")
			b.ReportMetric(off/float64(n), "error-points")
		})
	}
}

// TestHookKeepsBatches checks the hook changes no batch and not their order
// before the switch (a shuffled loader, seeded), and replays the first
// num-caches batches in order after it, as SPDL's cache iterator does.
// sleepy.py's steps run no backward pass, so the hook serves as many
// batches again after the last step before it takes the loop as the
// training loop (no other loop trains): those are not checked.
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
	if len(p) != 100 || len(h) < s.Total() || len(h) > 2*s.Total() {
		t.Fatalf("plain run recorded %d batches (want 100), hooked %d (want %d, and no more than as many again)", len(p), len(h), s.Total())
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
// middle: Exec returns the context's error and the script and its two
// workers are gone. The run asks for 3010 steps of a 20 ms sleep each:
// had Exec not acted on the cancel (at step 3) it would have returned,
// at the hook's "done", no sooner than 60 s after it, however idle the
// machine. So a bound of 30 s from the cancel to Exec's return is about
// liveness, not speed: it fails a cancel that is ignored or acted on
// only at the run's end, and leaves a loaded machine (2 cores, load 10)
// 30 s to kill and reap the process group, where an idle one takes well
// under a second.
func TestCancelStopsEverything(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const step, steps, at, bound = 20 * time.Millisecond, 3000 + 10, 3, 30 * time.Second
	if uncancelled := (steps - at - 1) * step; uncancelled < 2*bound {
		t.Fatalf("the run left after the cancel sleeps %v, want at least twice the bound %v", uncancelled, bound)
	}
	var cancelled time.Time
	_, err := ownloop.Exec(ctx, command(t, script, "--getitem-ms", "5", "--step-ms", "20"), settings(3000, 10), &bytes.Buffer{}, func(st ownloop.Step) {
		if st.Index == at {
			cancelled = time.Now()
			cancel()
		}
	})
	took := time.Since(cancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec = %v, want context.Canceled", err)
	}
	if took > bound {
		t.Errorf("Exec returned %v after the cancel, want within %v (the run's own end is %v of sleeps away)", took, bound, (steps-at-1)*step)
	}
	noneLeft(t, script)
}

// BenchmarkCancel is how long Exec takes to return once its context is
// cancelled in the middle of a run (TestCancelStopsEverything's), the
// script's process group killed and reaped: cancel-ns.
func BenchmarkCancel(b *testing.B) {
	needTorch(b)
	script := sleepy(b)
	cmd := command(b, script, "--getitem-ms", "5", "--step-ms", "20")
	var sum time.Duration
	n := 0
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		var cancelled time.Time
		_, err := ownloop.Exec(ctx, cmd, settings(3000, 10), &bytes.Buffer{}, func(st ownloop.Step) {
			if st.Index == 3 {
				cancelled = time.Now()
				cancel()
			}
		})
		took := time.Since(cancelled)
		cancel()
		if !errors.Is(err, context.Canceled) {
			b.Fatalf("Exec = %v, want context.Canceled", err)
		}
		noneLeft(b, script)
		sum += took
		n++
	}
	b.ReportMetric(float64(sum)/float64(n), "cancel-ns")
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
	if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), "WORLD_SIZE 2 is set but no launcher started the ranks") {
		t.Fatalf("Exec = %v, want refused: WORLD_SIZE without a launcher", err)
	}
	noneLeft(t, script)
}
