//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/internal/slurmtest"
)

// ddp copies testdata/ddp.py into a directory of the test's own, so that
// its path names the test's processes (noneLeft): the launcher, its ranks
// and their workers.
func ddp(t testing.TB) string {
	t.Helper()
	needTorch(t)
	b, err := os.ReadFile("testdata/ddp.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ddp.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// freePort is a TCP port free on 127.0.0.1 now: the ranks' rendezvous.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// torchrun is ddp.py under python's torchrun (TestLauncher: Debian's by default) with 2 ranks on the CPU
// (gloo). -r 1 -t 1: Debian's torch 1.13 launcher fails on its Python
// 3.11 without a redirect of its ranks' stdout (its Std.from_str("0") is
// None there); the ranks' stdout then goes to its log (in the test's
// directory: --log_dir) and the console.
func torchrun(t testing.TB, script string, args ...string) ownloop.Command {
	t.Helper()
	argv := append(append(append([]string{}, launcher...), "--nproc_per_node", "2", "-r", "1", "-t", "1", "--log_dir", t.TempDir(), "--master_port", freePort(t), script), args...)
	c, err := ownloop.ParseCommand(argv)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// spawned is ddp.py starting its 2 ranks itself with
// torch.multiprocessing.spawn.
func spawned(t testing.TB, script string, args ...string) ownloop.Command {
	t.Helper()
	return command(t, script, append([]string{"--spawn", "2", "--port", freePort(t)}, args...)...)
}

// ddpArgs are ddp.py's arguments: 2 workers a rank, batches of 4, each
// sample's __getitem__ sleeping getitem (slow in rank 1, where
// positive), each step step.
func ddpArgs(getitem, slow, step time.Duration) []string {
	args := []string{"--getitem-ms", msArg(getitem), "--step-ms", msArg(step), "--batch", "4", "--workers", "2"}
	if slow > 0 {
		args = append(args, "--slow-rank", "1", "--slow-getitem-ms", msArg(slow))
	}
	return args
}

// TestRanksAgainstTruth runs the analysis on a node of 2 ranks under
// torchrun, ddp.py, whose truth is known by construction: input-bound
// (rank 0's samples 5 ms, rank 1's 20 ms, a 4 ms step: rank 1's loader
// gives a batch every 40 ms, and DDP's all-reduce makes rank 0 wait for
// it) and not (1 ms samples, a 120 ms step). The hooked run gives each
// rank's steps, phases and batches: checked where the scripts' sleeps
// bound them from below, which a busy machine cannot break (rank 1's
// batches no shorter than its own 4 × 20 ms: its workers' events reach
// rank 1's run, not rank 0's), and every rank switched to cached batches
// at the same step. The figures are checked on the same run with the
// times the sleeps make injected (idle): each rank's headspace within 2
// points of its truth, rank 1 named as the slowest, the verdict and the
// stage right. How close the measured figures come is a benchmark's:
// BenchmarkRanksAgainstTruth.
func TestRanksAgainstTruth(t *testing.T) {
	for _, tc := range []struct {
		name                string
		getitem, slow, step time.Duration
		s                   ownloop.Settings
		class               analysis.Class
		stage               string
	}{
		{"input-bound", 5 * time.Millisecond, 20 * time.Millisecond, 4 * time.Millisecond, settings(24, 16), analysis.HighlyInputBound, "dataset __getitem__"},
		{"model-bound", time.Millisecond, 0, 120 * time.Millisecond, settings(12, 10), analysis.NotInputBound, "model step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := ddp(t)
			cmd := torchrun(t, script, ddpArgs(tc.getitem, tc.slow, tc.step)...)
			var out bytes.Buffer
			run, err := ownloop.Exec(context.Background(), cmd, tc.s, &out, nil)
			noneLeft(t, script)
			if err != nil {
				t.Fatalf("Exec: %v\n%s", err, out.String())
			}
			getitem := []time.Duration{tc.getitem, tc.getitem}
			if tc.slow > 0 {
				getitem[1] = tc.slow
			}
			checkRanks(t, run, tc.s, getitem, tc.step)
			measured, err := ownloop.AnalyzeRanks(cmd, tc.s, run, 1000)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("measured: slowest rank %d, spread %.0f%%, AU %v, verdict %s, stage %s", measured.Slowest, measured.Spread, measured.AU, measured.Verdict().Class, measured.Verdict().Stage)
			if !measured.Lockstep() || measured.Switch[0] != tc.s.ReturnCachesAfter {
				t.Errorf("switch steps %v, want every rank at %d", measured.Switch, tc.s.ReturnCachesAfter)
			}

			// The node's pace is the slowest loader's: a batch every
			// 4·getitem/2 workers.
			pace := 4 * slices.Max(getitem)
			var want []float64
			for r, rr := range run.Ranks {
				idleSteps(rr, tc.step, pace, 2)
				for i := range rr.Batches {
					b := &rr.Batches[i]
					n := time.Duration(b.Samples)
					b.GetItem, b.GetItemCPU = n*getitem[r], n*20*time.Microsecond
					b.Collate, b.CollateCPU = 100*time.Microsecond, 100*time.Microsecond
				}
				want = append(want, idleTruth(rr))
			}
			nr, err := ownloop.AnalyzeRanks(cmd, tc.s, run, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for r, rep := range nr.Ranks {
				if got := rep.HeadspacePercent(); math.Abs(got-want[r]) > 2 {
					t.Errorf("rank %d: headspace %.1f%%, truth %.1f%%: more than 2 points apart", r, got, want[r])
				}
			}
			if v := nr.Verdict(); v.Class != tc.class || v.Stage != tc.stage {
				t.Errorf("verdict %s, stage %s (%s); want %s, %s", v.Class, v.Stage, v.Reason, tc.class, tc.stage)
			}
			if tc.slow > 0 && (nr.Slowest != 1 || nr.Spread < 100) {
				t.Errorf("slowest rank %d, spread %.0f%%: want rank 1, its loader %v a sample against %v", nr.Slowest, nr.Spread, tc.slow, tc.getitem)
			}
			var text bytes.Buffer
			nr.WriteText(&text)
			for _, w := range []string{"node: 2 ranks (" + launcherName + ")", "every rank switched to cached batches at step " + strconv.Itoa(tc.s.ReturnCachesAfter), "slowest rank: ", "what it would take", "--- rank 1 ---"} {
				if !strings.Contains(text.String(), w) {
					t.Errorf("the report lacks %q:\n%s", w, text.String())
				}
			}
			names := map[string]bool{}
			for _, rec := range nr.Records() {
				names[string(rec.Name)] = true
			}
			for _, w := range []string{"BenchmarkOwnLoopAnalyze/script=ddp.py/phase=cached/rank=1", "BenchmarkOwnLoopAnalyzeInput/script=ddp.py/rank=0",
				"BenchmarkOwnLoopAnalyzeStage/script=ddp.py/stage=getitem/rank=1", "BenchmarkOwnLoopAnalyzeNode/script=ddp.py/ranks=2"} {
				if !names[w] {
					t.Errorf("no record %s", w)
				}
			}
		})
	}
}

// idleTruth is the headspace in % by a run's mean step time with the
// loader and cached, as ddp.py --truth measures it.
func idleTruth(run *ownloop.Run) float64 {
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
	return 100 * max(0, 1-(float64(cached)/float64(nc))/(float64(loader)/float64(nl)))
}

// checkRanks checks what holds of a hooked run of ddp.py (ddpArgs) on 2
// ranks however busy the machine: both ranks, each with its training
// loader, every step once, from the loader before the switch and from the
// caches after it, no step shorter than its sleep, and its batches from
// its own workers, no shorter than its own samples' sleeps.
func checkRanks(t *testing.T, run *ownloop.Run, s ownloop.Settings, getitem []time.Duration, step time.Duration) {
	t.Helper()
	if run.World != 2 || len(run.Ranks) != 2 || !run.Done {
		t.Fatalf("world %d, %d ranks, done %v: want 2 ranks, done", run.World, len(run.Ranks), run.Done)
	}
	for r, rr := range run.Ranks {
		if rr == nil || rr.Rank != r || rr.PID <= 0 || !rr.Done {
			t.Fatalf("rank %d: %+v", r, rr)
		}
		if ld, ok := rr.Target(); !ok || ld.BatchSize != 4 || ld.Workers != 2 || !ld.Measured.GetItem || len(rr.Loaders) != 1 {
			t.Errorf("rank %d: loaders %+v: want its training loader of batches of 4, 2 workers", r, rr.Loaders)
		}
		if len(rr.Steps) != s.Total() {
			t.Fatalf("rank %d: %d steps, want %d", r, len(rr.Steps), s.Total())
		}
		for i, st := range rr.Steps {
			phase := "loader"
			if i >= s.ReturnCachesAfter {
				phase = "cached"
			}
			if st.Index != i || st.Phase != phase || st.Time < step || st.Wait < 0 || st.Wait > st.Time {
				t.Errorf("rank %d step %d: %+v, want step %d from the %s, no shorter than its %v sleep", r, i, st, i, phase, step)
			}
		}
		if len(rr.Batches) == 0 {
			t.Fatalf("rank %d: no batch timed in its workers", r)
		}
		for _, b := range rr.Batches {
			if b.Samples != 4 || b.Worker < 0 || b.Worker > 1 || b.GetItem < 4*getitem[r] {
				t.Errorf("rank %d: batch %+v: want 4 samples from worker 0 or 1, __getitem__ no shorter than %v", r, b, 4*getitem[r])
			}
		}
	}
}

// BenchmarkRanksAgainstTruth is how close each rank's headspace comes to
// the one ddp.py measures of itself without the hook (--truth, under the
// same torchrun), on this machine: headspace-% and truth-% of each rank,
// error-points, and slowest-right (1 where rank 1, the slow one, is
// named).
func BenchmarkRanksAgainstTruth(b *testing.B) {
	script := ddp(b)
	args := ddpArgs(5*time.Millisecond, 20*time.Millisecond, 4*time.Millisecond)
	s := settings(24, 16)
	var got, want, off, right float64
	n := 0
	for b.Loop() {
		truth := ranksTruth(b, script, args)
		cmd := torchrun(b, script, args...)
		var out bytes.Buffer
		run, err := ownloop.Exec(context.Background(), cmd, s, &out, nil)
		noneLeft(b, script)
		if err != nil {
			b.Fatalf("Exec: %v\n%s", err, out.String())
		}
		nr, err := ownloop.AnalyzeRanks(cmd, s, run, 1000)
		if err != nil {
			b.Fatal(err)
		}
		for r, rep := range nr.Ranks {
			got += rep.HeadspacePercent() / 2
			want += truth[r] / 2
			off += math.Abs(rep.HeadspacePercent()-truth[r]) / 2
		}
		if nr.Slowest == 1 {
			right++
		}
		n++
	}
	b.ReportMetric(got/float64(n), "headspace-%")
	b.ReportMetric(want/float64(n), "truth-%")
	b.ReportMetric(off/float64(n), "error-points")
	b.ReportMetric(right/float64(n), "slowest-right")
}

// ranksTruth is each rank's headspace in %, as ddp.py --truth measures
// it under torchrun without the hook.
func ranksTruth(b *testing.B, script string, args []string) []float64 {
	b.Helper()
	argv := append([]string{"--nproc_per_node", "2", "-r", "1", "-t", "1", "--log_dir", b.TempDir(), "--master_port", freePort(b), script, "--truth", "40"}, args...)
	out, err := exec.Command(launcher[0], append(launcher[1:], argv...)...).Output()
	if err != nil {
		b.Fatalf("truth run: %v", err)
	}
	truth := make([]float64, 2)
	for _, line := range strings.Split(string(out), "\n") {
		_, js, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		var m struct {
			Rank               int
			Loader_s, Cached_s float64
		}
		if json.Unmarshal([]byte("{"+js), &m) == nil && m.Rank >= 0 && m.Rank < 2 && m.Loader_s > 0 {
			truth[m.Rank] = 100 * max(0, 1-m.Cached_s/m.Loader_s)
		}
	}
	return truth
}

// TestRanksSpawned: a script that starts its ranks with
// torch.multiprocessing.spawn has each rank measured, without a
// change: both ranks' steps, switched at the same step, and the batches
// of each rank's workers (spawned, as a spawned rank's are) timed.
func TestRanksSpawned(t *testing.T) {
	script := ddp(t)
	s := settings(12, 8)
	var out bytes.Buffer
	run, err := ownloop.Exec(context.Background(), spawned(t, script, ddpArgs(2*time.Millisecond, 0, 2*time.Millisecond)...), s, &out, nil)
	noneLeft(t, script)
	if err != nil {
		t.Fatalf("Exec: %v\n%s", err, out.String())
	}
	if run.World != 2 || len(run.Ranks) != 2 || !run.Done {
		t.Fatalf("world %d, %d ranks, done %v: want 2 ranks, done", run.World, len(run.Ranks), run.Done)
	}
	for r, rr := range run.Ranks {
		if rr == nil || len(rr.Steps) != s.Total() || ownloop.SwitchStep(rr) != s.ReturnCachesAfter {
			t.Fatalf("rank %d: %+v: want %d steps, the switch at %d", r, rr, s.Total(), s.ReturnCachesAfter)
		}
		if ld, ok := rr.Target(); !ok || !ld.Measured.GetItem || !ld.Measured.Collate {
			t.Errorf("rank %d: training loader %+v: want one, its __getitem__ and collate timed", r, ld)
		}
		// A spawned rank's workers are spawned too: timed all the same.
		if len(rr.Batches) == 0 {
			t.Errorf("rank %d: no batch timed in its (spawned) workers", r)
		}
		for _, b := range rr.Batches {
			if b.Samples != 4 || b.Worker < 0 || b.Worker > 1 || b.GetItem < 4*2*time.Millisecond {
				t.Errorf("rank %d: batch %+v: want 4 samples from worker 0 or 1, __getitem__ no shorter than their sleeps", r, b)
			}
		}
	}
}

// TestRankRaises: a rank that raises shows its traceback; Exec names
// the rank, and nothing is left running.
func TestRankRaises(t *testing.T) {
	script := ddp(t)
	var out bytes.Buffer
	_, err := ownloop.Exec(context.Background(), torchrun(t, script, "--getitem-ms", "0", "--step-ms", "0", "--fail-rank", "1", "--fail-at", "5"), settings(20, 10), &out, nil)
	noneLeft(t, script)
	var rf *ownloop.RanksFailed
	if !errors.As(err, &rf) || rf.Rank != 1 || !strings.Contains(err.Error(), "rank 1 failed") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Exec = %v, want rank 1 failed, one line", err)
	}
	if !strings.Contains(out.String(), "Traceback") || !strings.Contains(out.String(), "rank 1's own failure at step 5") {
		t.Errorf("rank 1's traceback is not in the output:\n%s", out.String())
	}
}

// TestRankHangs: rank 1 sleeps for an hour in its step 4, before its
// all-reduce, and rank 0 waits in it. After --first-batch-timeout with
// no step, Exec names rank 1 from the ranks' stacks and stops every
// process. The bound on Exec's return is liveness (the hang is an
// hour), not speed.
func TestRankHangs(t *testing.T) {
	script := ddp(t)
	s := settings(20, 10)
	s.FirstBatchTimeout = 60 * time.Second // the ranks' start (torch's import, gloo) on a loaded machine
	start := time.Now()
	var out bytes.Buffer
	_, err := ownloop.Exec(context.Background(), torchrun(t, script, "--getitem-ms", "0", "--step-ms", "1", "--hang-rank", "1", "--hang-at", "4"), s, &out, nil)
	took := time.Since(start)
	noneLeft(t, script)
	var h *ownloop.RanksHung
	if !errors.As(err, &h) || !slices.Equal(h.Stuck, []int{1}) || !strings.Contains(err.Error(), "rank 1 hangs") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Exec = %v, want rank 1 named as hanging, one line\n%s", err, out.String())
	}
	if !strings.Contains(h.Where[0], "all_reduce") {
		t.Errorf("rank 0 stood at %q, want in all_reduce", h.Where[0])
	}
	if took > 10*time.Minute {
		t.Errorf("Exec took %v: the hang was not acted on", took)
	}
}

// TestRanksCancel cancels a node's run (SIGINT's context) in the middle:
// Exec returns the context's error and the launcher, both ranks and
// their workers are gone.
func TestRanksCancel(t *testing.T) {
	script := ddp(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := ownloop.Exec(ctx, torchrun(t, script, "--getitem-ms", "5", "--step-ms", "20"), settings(3000, 10), &bytes.Buffer{}, func(st ownloop.Step) {
		if st.Index == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec = %v, want context.Canceled", err)
	}
	noneLeft(t, script)
}

// TestRanksOnMoreThanOneNode: ranks that join a world larger than the
// ranks started on this node are refused, in one line, before they wait
// for the others.
func TestRanksOnMoreThanOneNode(t *testing.T) {
	script := ddp(t)
	_, err := ownloop.Exec(context.Background(), spawned(t, script, "--multi-node"), settings(20, 10), &bytes.Buffer{}, nil)
	noneLeft(t, script)
	if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), "ranks on more than one node") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Exec = %v, want refused: more than one node", err)
	}
}

// BenchmarkRanksCancel is how long Exec takes to return once its context
// is cancelled in the middle of a node's run (TestRanksCancel's: the
// launcher, 2 ranks and their 4 workers killed and reaped): cancel-ns.
func BenchmarkRanksCancel(b *testing.B) {
	script := ddp(b)
	var sum time.Duration
	n := 0
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		var cancelled time.Time
		_, err := ownloop.Exec(ctx, torchrun(b, script, "--getitem-ms", "5", "--step-ms", "20"), settings(3000, 10), &bytes.Buffer{}, func(st ownloop.Step) {
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

// TestRanksSwitchOnAnEpochStart: where the switch falls on the first
// step of an epoch (8 batches an epoch a rank, the switch at 16), that
// step is marked epoch, not cached; the switch each rank reports is still
// step 16 in both.
func TestRanksSwitchOnAnEpochStart(t *testing.T) {
	script := ddp(t)
	s := settings(16, 8)
	var out bytes.Buffer
	run, err := ownloop.Exec(context.Background(), torchrun(t, script, "--getitem-ms", "0", "--step-ms", "1", "--samples", "64", "--epochs", "5"), s, &out, nil)
	noneLeft(t, script)
	if err != nil {
		t.Fatalf("Exec: %v\n%s", err, out.String())
	}
	if len(run.Ranks) != 2 {
		t.Fatalf("%d ranks, want 2", len(run.Ranks))
	}
	for r, rr := range run.Ranks {
		if got := ownloop.SwitchStep(rr); got != 16 {
			t.Errorf("rank %d switched at step %d, want 16 (steps around it: %+v)", r, got, rr.Steps[14:18])
		}
		if rr.Steps[16].Phase != "epoch" {
			t.Errorf("rank %d: step 16 %+v: want it marked epoch (the test's premise)", r, rr.Steps[16])
		}
	}
}

// srun is ddp.py --slurm in each of 2 tasks of srun, on a single-node
// Slurm of the test's own (slurmtest: Debian's slurm-wlm and munge, make
// test-deps), which it stops at the test's end.
func srun(t *testing.T, script string, args ...string) ownloop.Command {
	t.Helper()
	c, err := slurmtest.Start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Setenv("SLURM_CONF", c.Conf)
	cmd, err := ownloop.ParseCommand(append([]string{"srun", "--ntasks", "2", python, script, "--slurm", "--port", freePort(t)}, args...))
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestSrunRanks: each task of `srun --ntasks 2` is a rank, measured as
// torchrun's are (checkRanks: every step once, the switch at the same
// step, each rank's batches from its own workers), the script reading
// its rank from SLURM_PROCID, and nothing left running: the tasks are
// slurmstepd's children, not the command's.
func TestSrunRanks(t *testing.T) {
	script := ddp(t)
	s := settings(12, 8)
	cmd := srun(t, script, ddpArgs(2*time.Millisecond, 6*time.Millisecond, 2*time.Millisecond)...)
	var out bytes.Buffer
	run, err := ownloop.Exec(context.Background(), cmd, s, &out, nil)
	noneLeft(t, script)
	if err != nil {
		t.Fatalf("Exec: %v\n%s", err, out.String())
	}
	checkRanks(t, run, s, []time.Duration{2 * time.Millisecond, 6 * time.Millisecond}, 2*time.Millisecond)
	nr, err := ownloop.AnalyzeRanks(cmd, s, run, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !nr.Lockstep() {
		t.Errorf("switch steps %v, want every rank at %d", nr.Switch, s.ReturnCachesAfter)
	}
	var text bytes.Buffer
	nr.WriteText(&text)
	if !strings.Contains(text.String(), "node: 2 ranks (srun)") {
		t.Errorf("the report does not name srun:\n%s", text.String())
	}
}

// TestSrunFaults: under srun as under torchrun, a rank that raises is
// named after its traceback, a rank that hangs before its collective is
// named from the ranks' stacks, a cancelled run (SIGINT's context)
// returns, and ranks that join a world larger than the step's tasks are
// refused in one line; in each, srun, its tasks and their workers are
// gone. The hang's bound on Exec's return is liveness, not speed.
func TestSrunFaults(t *testing.T) {
	t.Run("raises", func(t *testing.T) {
		script := ddp(t)
		var out bytes.Buffer
		_, err := ownloop.Exec(context.Background(), srun(t, script, "--getitem-ms", "0", "--step-ms", "0", "--fail-rank", "1", "--fail-at", "5"), settings(20, 10), &out, nil)
		noneLeft(t, script)
		var rf *ownloop.RanksFailed
		if !errors.As(err, &rf) || rf.Rank != 1 || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Exec = %v, want rank 1 failed, one line\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), "rank 1's own failure at step 5") {
			t.Errorf("rank 1's traceback is not in the output:\n%s", out.String())
		}
	})
	t.Run("hangs", func(t *testing.T) {
		script := ddp(t)
		s := settings(20, 10)
		s.FirstBatchTimeout = 60 * time.Second
		start := time.Now()
		var out bytes.Buffer
		_, err := ownloop.Exec(context.Background(), srun(t, script, "--getitem-ms", "0", "--step-ms", "1", "--hang-rank", "1", "--hang-at", "4"), s, &out, nil)
		took := time.Since(start)
		noneLeft(t, script)
		var h *ownloop.RanksHung
		if !errors.As(err, &h) || !slices.Equal(h.Stuck, []int{1}) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Exec = %v, want rank 1 named as hanging, one line\n%s", err, out.String())
		}
		if took > 10*time.Minute {
			t.Errorf("Exec took %v: the hang was not acted on", took)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		script := ddp(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := ownloop.Exec(ctx, srun(t, script, "--getitem-ms", "5", "--step-ms", "20"), settings(3000, 10), &bytes.Buffer{}, func(st ownloop.Step) {
			if st.Index == 3 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Exec = %v, want context.Canceled", err)
		}
		noneLeft(t, script)
	})
	t.Run("more than one node", func(t *testing.T) {
		script := ddp(t)
		_, err := ownloop.Exec(context.Background(), srun(t, script, "--multi-node"), settings(20, 10), &bytes.Buffer{}, nil)
		noneLeft(t, script)
		if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), "ranks on more than one node") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Exec = %v, want refused: more than one node", err)
		}
	})
}
