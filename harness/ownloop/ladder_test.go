//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/ownloop"
)

// folder copies testdata/folder.py (a DatasetFolder whose .loader and
// .transform sleep set times) into the test's own directory.
func folder(t testing.TB) (script, root string) {
	t.Helper()
	b, err := os.ReadFile("testdata/folder.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script = filepath.Join(dir, "folder.py")
	if err := os.WriteFile(script, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return script, filepath.Join(dir, "data")
}

// TestStagesNameTheSlowOne: on a torchvision-style dataset the analysis
// splits __getitem__ into .loader and .transform, and the verdict names
// the one that sleeps the longest (12 ms against 1 ms a sample). The
// hooked run is checked for what a busy machine cannot break: every
// batch's .loader and .transform timed no shorter than their sleeps and
// within its __getitem__. Which stage the verdict names is checked on
// the same run with the times the sleeps make injected in place of the
// measured ones (folderIdle): on a busy machine the measured times say
// as much about the scheduler as about the stages.
func TestStagesNameTheSlowOne(t *testing.T) {
	needTorch(t)
	for _, tc := range []struct {
		load, transform time.Duration
		stage           string
	}{
		{12 * time.Millisecond, time.Millisecond, "dataset .loader (reading and decoding)"},
		{time.Millisecond, 12 * time.Millisecond, "dataset .transform"},
	} {
		script, root := folder(t)
		cmd := command(t, script, "--root", root, "--load-ms", msArg(tc.load), "--transform-ms", msArg(tc.transform))
		s := settings(20, 12)
		var out bytes.Buffer
		run, err := ownloop.Exec(context.Background(), cmd, s, &out, nil)
		noneLeft(t, script)
		if err != nil {
			t.Fatalf("Exec: %v\n%s", err, out.String())
		}
		measured, err := ownloop.Analyze(cmd, s, run, 100)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("load %v, transform %v: measured stage %q (%s)", tc.load, tc.transform, measured.Verdict.Stage, measured.Verdict.Reason)
		if len(run.Batches) == 0 {
			t.Fatalf("load %v, transform %v: no batch timed in the workers", tc.load, tc.transform)
		}
		for _, b := range run.Batches {
			if b.Samples != 4 || b.Load < 4*tc.load || b.Transform < 4*tc.transform || b.Load+b.Transform > b.GetItem {
				t.Errorf("load %v, transform %v: batch %+v, want 4 samples, .loader and .transform no shorter than their sleeps and within __getitem__", tc.load, tc.transform, b)
			}
		}
		st := measured.Stages
		if !st.Split || st.Load < tc.load || st.Transform < tc.transform || st.Load+st.Transform > st.GetItem || measured.Verdict.Stage == "" {
			t.Errorf("load %v, transform %v: stages %+v, verdict %+v; want .loader and .transform timed within __getitem__, no shorter than their sleeps, a stage named", tc.load, tc.transform, st, measured.Verdict)
		}

		folderIdle(run, tc.load, tc.transform, 2*time.Millisecond)
		rep, err := ownloop.Analyze(cmd, s, run, 100)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict.Class != analysis.HighlyInputBound || rep.Verdict.Stage != tc.stage {
			t.Errorf("load %v, transform %v, idle: verdict %s, stage %q (%s); want %s, %q", tc.load, tc.transform, rep.Verdict.Class, rep.Verdict.Stage, rep.Verdict.Reason, analysis.HighlyInputBound, tc.stage)
		}
		if st := rep.Stages; st.Load != tc.load || st.Transform != tc.transform {
			t.Errorf("load %v, transform %v, idle: stages %+v, want .loader and .transform at their sleeps", tc.load, tc.transform, st)
		}
	}
}

// msArg is d as a script's millisecond argument.
func msArg(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', -1, 64) }

// folderIdle replaces the times measured in a hooked run of folder.py
// (batches of 4, 2 workers) with those its sleeps make on an idle
// machine: each sample's .loader load and .transform transform, 50 µs of
// __getitem__ beside them, 100 µs of collate a batch, a few µs of CPU in
// each; the steps as idleSteps makes them of a step-long step and the
// workers' batches.
func folderIdle(run *ownloop.Run, load, transform, step time.Duration) {
	for i := range run.Batches {
		b := &run.Batches[i]
		n := time.Duration(b.Samples)
		b.Load, b.Transform, b.GetItem = n*load, n*transform, n*(load+transform+50*time.Microsecond)
		b.LoadCPU, b.TransformCPU, b.GetItemCPU = n*20*time.Microsecond, n*10*time.Microsecond, n*40*time.Microsecond
		b.Collate, b.CollateCPU = 100*time.Microsecond, 100*time.Microsecond
	}
	idleSteps(run, step, 4*(load+transform+50*time.Microsecond)+100*time.Microsecond, 2)
}

// TestLadderOnScript runs every level but device on the DatasetFolder
// script, loading the slow stage (15 ms a sample's .loader, 1 ms its
// .transform, a 2 ms step; 256 files: no epoch ends within a level's
// run). The real runs are checked for what a busy machine cannot break:
// the levels asked for, from the top down; each point's steps, workers
// and batch size; where each level's batches come from (host: the
// caches after the first; the others: the loader); no point's step time
// shorter than the step's sleep; at none, every batch's .loader and
// .transform no shorter than their sleeps and the mean step no shorter
// than the workers' sleeps allow (ladderFloor); at raw, the transform
// still run. Which level gets the largest drop is checked on the same
// runs with the times the sleeps make injected in place of the measured
// ones: none's, attributed to raw data loading.
func TestLadderOnScript(t *testing.T) {
	needTorch(t)
	const load, transform, step = 15 * time.Millisecond, time.Millisecond, 2 * time.Millisecond
	script, root := folder(t)
	cmd := command(t, script, "--root", root, "--load-ms", msArg(load), "--transform-ms", msArg(transform), "--step-ms", msArg(step), "--files", "256")
	c := ownloop.LadderConfig{Levels: []level.Level{level.None, level.Raw, level.Sample, level.Host}, Steps: 12, Count: 1, Loader: 1, FirstBatchTimeout: time.Minute}
	var points []ownloop.LadderPoint
	var out bytes.Buffer
	err := ownloop.Ladder(context.Background(), cmd, c, &out, func(p ownloop.LadderPoint) error {
		points = append(points, p)
		return nil
	})
	noneLeft(t, script)
	if err != nil {
		t.Fatalf("Ladder: %v\n%s", err, out.String())
	}
	var got []string
	for _, p := range points {
		got = append(got, p.Level.String())
		if p.Steps != 12 || p.Workers != 2 || p.BatchSize != 4 || p.StepTime < step {
			t.Errorf("point %+v: want 12 steps, 2 workers, batches of 4, no step shorter than its %v sleep", p, step)
		}
		for _, st := range p.From.Steps {
			want := "loader"
			if p.Level == level.Host && st.Index > 0 {
				want = "cached"
			}
			if st.Phase != want {
				t.Errorf("level %s: step %+v, want it from the %s", p.Level, st, want)
			}
		}
		if p.Level == level.Host {
			continue
		}
		if len(p.From.Batches) == 0 {
			t.Errorf("level %s: no batch timed in the workers", p.Level)
		}
		for _, b := range p.From.Batches {
			if b.Samples != 4 || (p.Level == level.None || p.Level == level.Raw) && b.Transform < 4*transform || p.Level == level.None && b.Load < 4*load {
				t.Errorf("level %s: batch %+v, want 4 samples, their .transform run (at raw and none) and .loader (at none), no shorter than their sleeps", p.Level, b)
			}
		}
		if p.Level == level.None {
			ld, _ := p.From.Target()
			if floor := ladderFloor(ld, c.Steps, 4*(load+transform)); p.StepTime < floor {
				t.Errorf("level none: step time %v, want no less than %v, what the workers' sleeps allow", p.StepTime, floor)
			}
		}
	}
	if strings.Join(got, ",") != "host,sample,raw,none" {
		t.Fatalf("levels %v, want host,sample,raw,none", got)
	}
	t.Logf("measured: %s", stepTimes(points))

	// The same runs at the times the sleeps make: each worker's batch
	// takes 4 transforms at raw (4 ms against two 2 ms steps: no wait),
	// and 4 loads and transforms at none (64 ms: 30 ms more a step).
	perBatch := map[level.Level]time.Duration{level.Host: 0, level.Sample: 0, level.Raw: 4 * transform, level.None: 4 * (load + transform)}
	idle := make([]ownloop.LadderPoint, len(points))
	for i, p := range points {
		idleSteps(p.From, step, perBatch[p.Level], p.Workers)
		s := ownloop.Settings{Mode: "ladder", Loader: c.Loader, Level: p.Level.String(), Steps: c.Steps, Warmup: c.Warmup}
		if idle[i], err = ownloop.PointOf(p.From, s, p.Level, p.Run); err != nil {
			t.Fatalf("level %s: %v", p.Level, err)
		}
	}
	var table bytes.Buffer
	ownloop.WriteLadder(&table, idle)
	t.Logf("idle:\n%s", table.String())
	if at, worst := largestDrop(t, table.String()); at != "raw data loading" || worst < 20 {
		t.Errorf("idle: largest drop +%.1f ms/step attributed to %q, want raw data loading's (30 ms): %s\n%s", worst, at, stepTimes(idle), table.String())
	}
}

// ladderRow is a row of WriteLadder's table below the top level: the
// level, its steps/s, the CI, the ratio, the ms a step it adds and the
// stage that is attributed to.
var ladderRow = regexp.MustCompile(`^(\S+)\s+([0-9.]+)\s+(.+?)\s+([0-9.]+)×\s+([+-][0-9.]+)\s+(.+)$`)

// largestDrop reads WriteLadder's table: the stage of the row that adds
// the most ms a step, and how many.
func largestDrop(t testing.TB, table string) (string, float64) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(table), "\n")
	at, worst := "", math.Inf(-1)
	rows := 0
	for _, l := range lines[1:] {
		m := ladderRow.FindStringSubmatch(l)
		if m == nil {
			continue // the top level: nothing above it
		}
		rows++
		added, err := strconv.ParseFloat(m[5], 64)
		if err != nil {
			t.Fatalf("table row %q: %v", l, err)
		}
		if added > worst {
			at, worst = m[6], added
		}
	}
	if rows != len(lines)-2 {
		t.Fatalf("table: %d rows below the top level, want %d:\n%s", rows, len(lines)-2, table)
	}
	return at, worst
}

// ladderFloor is the least mean step time a ladder run's timed steps can
// take at a level where each of the loader's workers takes at least batch
// to make a batch, however busy the machine. The run's warm-up leaves
// out the first step and the workers*prefetch_factor batches the loader
// keeps requested ahead; when the timed steps start, those ahead of them
// are all that is requested, so the other steps-workers*prefetch_factor
// batches are started after, each worker making its share one after the
// other.
func ladderFloor(ld ownloop.Loader, steps int, batch time.Duration) time.Duration {
	pf := ld.PrefetchFactor
	if pf <= 0 {
		pf = 2 // torch's default
	}
	ahead := ld.Workers * pf
	if ld.Workers == 0 || steps <= ahead {
		return 0
	}
	return time.Duration((steps-ahead)/ld.Workers) * batch / time.Duration(steps)
}

func stepTimes(points []ownloop.LadderPoint) string {
	var out []string
	for _, p := range points {
		out = append(out, p.Level.String()+" "+p.StepTime.String())
	}
	return strings.Join(out, ", ")
}

// TestLadderRefusals: raw on a dataset without .loader, device without a
// GPU, levels of headspace's own pipeline.
func TestLadderRefusals(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	cmd := command(t, script)
	for _, tc := range []struct {
		l    level.Level
		want string
	}{
		{level.Raw, "level raw needs a dataset with a .loader (torchvision-style: ImageFolder, DatasetFolder) or a map-style dataset with a .transform"},
		{level.Device, "level device needs a CUDA GPU"},
		{level.Encoded, "needs headspace's own pipeline"},
	} {
		c := ownloop.LadderConfig{Levels: []level.Level{tc.l}, Steps: 4, Count: 1, Loader: 1, FirstBatchTimeout: time.Minute}
		err := ownloop.Ladder(context.Background(), cmd, c, &bytes.Buffer{}, func(ownloop.LadderPoint) error { return nil })
		if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("level %s: %v, want refused: %s", tc.l, err, tc.want)
		}
	}
	noneLeft(t, script)
}

// TestVerifyRunsAtWorkers: whatif --verify's run sets the training
// loader's workers without a change to the script.
func TestVerifyRunsAtWorkers(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	got, err := ownloop.Verify(context.Background(), command(t, script, "--getitem-ms", "1", "--step-ms", "1", "--workers", "1"), 1, 3, 6, time.Minute, time.Minute, &bytes.Buffer{})
	noneLeft(t, script)
	if err != nil || got <= 0 {
		t.Fatalf("Verify at 3 workers = %v, %v; want steps/s from a run at 3 workers", got, err)
	}
}

// TestIterableDataset: an IterableDataset's __iter__ is timed per sample
// (named so), and level sample, which needs __getitem__, is refused. The
// hooked runs (no worker and one) are checked for what a busy machine
// cannot break: __iter__ timed at no less than its 5 ms sleep a sample.
// That the verdict names it is checked on the same runs with the times
// the sleeps make injected in place of the measured ones: on a busy
// machine the loop's wait may be short enough for the verdict to go by
// the CPU times (contention), where collate can outweigh a sleep.
func TestIterableDataset(t *testing.T) {
	needTorch(t)
	const getitem, step = 5 * time.Millisecond, 2 * time.Millisecond
	script := sleepy(t)
	for _, workers := range []int{0, 1} {
		cmd := command(t, script, "--iterable", "--workers", strconv.Itoa(workers), "--getitem-ms", msArg(getitem), "--step-ms", msArg(step))
		s := settings(20, 12)
		run, err := ownloop.Exec(context.Background(), cmd, s, &bytes.Buffer{}, nil)
		noneLeft(t, script)
		if err != nil {
			t.Fatal(err)
		}
		measured, err := ownloop.Analyze(cmd, s, run, 100)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("workers %d: measured stage %q (%s)", workers, measured.Verdict.Stage, measured.Verdict.Reason)
		if ld := measured.Loader; ld.Workers != workers || !ld.Measured.Iterable || !ld.Measured.GetItem {
			t.Errorf("workers %d: loader %+v, want %d workers, __iter__ timed", workers, ld, workers)
		}
		if st := measured.Stages; !st.Iterable || st.Samples == 0 || st.GetItem < getitem || measured.Verdict.Stage == "" {
			t.Errorf("workers %d: stages %+v, verdict %+v; want __iter__ timed at no less than its %v sleep, a stage named", workers, st, measured.Verdict, getitem)
		}

		for i := range run.Batches {
			b := &run.Batches[i]
			n := time.Duration(b.Samples)
			b.GetItem, b.GetItemCPU = n*getitem, n*20*time.Microsecond
			b.Collate, b.CollateCPU = 100*time.Microsecond, 100*time.Microsecond
		}
		idleSteps(run, step, 4*getitem+100*time.Microsecond, workers)
		rep, err := ownloop.Analyze(cmd, s, run, 100)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict.Class != analysis.HighlyInputBound || rep.Verdict.Stage != "dataset __iter__" || rep.Stages.GetItem != getitem {
			t.Errorf("workers %d, idle: verdict %s, stage %q (%s), __iter__ %v a sample; want %s, dataset __iter__, %v", workers, rep.Verdict.Class, rep.Verdict.Stage, rep.Verdict.Reason, rep.Stages.GetItem, analysis.HighlyInputBound, getitem)
		}
	}
	c := ownloop.LadderConfig{Levels: []level.Level{level.Sample}, Steps: 4, Count: 1, Loader: 1, FirstBatchTimeout: time.Minute}
	err := ownloop.Ladder(context.Background(), command(t, script, "--iterable"), c, &bytes.Buffer{}, func(ownloop.LadderPoint) error { return nil })
	if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), "IterableDataset") {
		t.Errorf("level sample on an IterableDataset: %v, want refused", err)
	}
	noneLeft(t, script)
}

// BenchmarkStagesNameTheSlowOne is how often the verdict on the measured
// times of TestStagesNameTheSlowOne's runs names the stage that sleeps
// the longest, on this machine: right-%, and the .loader's and the
// .transform's measured time a sample (load-ns/sample,
// transform-ns/sample).
func BenchmarkStagesNameTheSlowOne(b *testing.B) {
	needTorch(b)
	for _, tc := range []struct {
		name            string
		load, transform time.Duration
		stage           string
	}{
		{"slow=load", 12 * time.Millisecond, time.Millisecond, "dataset .loader (reading and decoding)"},
		{"slow=transform", time.Millisecond, 12 * time.Millisecond, "dataset .transform"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			script, root := folder(b)
			cmd := command(b, script, "--root", root, "--load-ms", msArg(tc.load), "--transform-ms", msArg(tc.transform))
			s := settings(20, 12)
			var right, n int
			var load, transform time.Duration
			for b.Loop() {
				var out bytes.Buffer
				run, err := ownloop.Exec(context.Background(), cmd, s, &out, nil)
				noneLeft(b, script)
				if err != nil {
					b.Fatalf("Exec: %v\n%s", err, out.String())
				}
				rep, err := ownloop.Analyze(cmd, s, run, 100)
				if err != nil {
					b.Fatal(err)
				}
				if rep.Verdict.Stage == tc.stage {
					right++
				}
				load += rep.Stages.Load
				transform += rep.Stages.Transform
				n++
			}
			b.ReportMetric(100*float64(right)/float64(n), "right-%")
			b.ReportMetric(float64(load)/float64(n), "load-ns/sample")
			b.ReportMetric(float64(transform)/float64(n), "transform-ns/sample")
		})
	}
}

// BenchmarkLadderOnScript is TestLadderOnScript's ladder on this
// machine: each level's measured step time (LEVEL-step-ns), and how
// often the table's largest drop is raw data loading's (right-%).
func BenchmarkLadderOnScript(b *testing.B) {
	needTorch(b)
	script, root := folder(b)
	cmd := command(b, script, "--root", root, "--load-ms", "15", "--transform-ms", "1", "--step-ms", "2", "--files", "256")
	c := ownloop.LadderConfig{Levels: []level.Level{level.None, level.Raw, level.Sample, level.Host}, Steps: 12, Count: 1, Loader: 1, FirstBatchTimeout: time.Minute}
	sum := map[level.Level]time.Duration{}
	var right, n int
	for b.Loop() {
		var points []ownloop.LadderPoint
		var out bytes.Buffer
		err := ownloop.Ladder(context.Background(), cmd, c, &out, func(p ownloop.LadderPoint) error {
			points = append(points, p)
			return nil
		})
		noneLeft(b, script)
		if err != nil {
			b.Fatalf("Ladder: %v\n%s", err, out.String())
		}
		for _, p := range points {
			sum[p.Level] += p.StepTime
		}
		var table bytes.Buffer
		ownloop.WriteLadder(&table, points)
		if at, _ := largestDrop(b, table.String()); at == "raw data loading" {
			right++
		}
		n++
	}
	for _, l := range c.Levels {
		b.ReportMetric(float64(sum[l])/float64(n), l.String()+"-step-ns")
	}
	b.ReportMetric(100*float64(right)/float64(n), "right-%")
}

// BenchmarkIterableDataset is how often the verdict on the measured times
// of TestIterableDataset's runs names the IterableDataset's __iter__, on
// this machine (right-%), and __iter__'s measured time a sample
// (iter-ns/sample).
func BenchmarkIterableDataset(b *testing.B) {
	needTorch(b)
	for _, workers := range []int{0, 1} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			script := sleepy(b)
			cmd := command(b, script, "--iterable", "--workers", strconv.Itoa(workers), "--getitem-ms", "5", "--step-ms", "2")
			s := settings(20, 12)
			var right, n int
			var iter time.Duration
			for b.Loop() {
				run, err := ownloop.Exec(context.Background(), cmd, s, &bytes.Buffer{}, nil)
				noneLeft(b, script)
				if err != nil {
					b.Fatal(err)
				}
				rep, err := ownloop.Analyze(cmd, s, run, 100)
				if err != nil {
					b.Fatal(err)
				}
				if rep.Verdict.Stage == "dataset __iter__" {
					right++
				}
				iter += rep.Stages.GetItem
				n++
			}
			b.ReportMetric(100*float64(right)/float64(n), "right-%")
			b.ReportMetric(float64(iter)/float64(n), "iter-ns/sample")
		})
	}
}

// arrays copies testdata/arrays.py (a CIFAR10-style dataset: samples in
// memory, a .transform and no .loader) into a directory of the test's own.
func arrays(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/arrays.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "arrays.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLadderRawTransform: level raw on a dataset with a .transform and no
// .loader replays what __getitem__ hands its .transform, the transform
// still applied, and leaves out the rest of __getitem__ (its fetch). The
// script's sleeps are the truth (12 ms a sample's fetch, 3 ms its
// transform, a 2 ms step, batches of 4 in the main process): at none a
// step takes at least 2 + 4×15 ms, at raw at least 2 + 4×3 ms and at
// least half the fetches' 48 ms less than at none, at sample at least
// half the transforms' 12 ms less than at raw. No bound is tighter than
// a sleep allows either way: the levels are told apart by what they
// removed. The script checks each batch (shapes, each target its
// sample's), so a replay that broke the sample would fail it; with two
// transformed views a sample, both are replayed; with the transform's
// output changed by __getitem__, raw is refused in one line.
func TestLadderRawTransform(t *testing.T) {
	needTorch(t)
	const fetch, transform, step = 12 * time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond
	script := arrays(t)
	args := []string{"--fetch-ms", msArg(fetch), "--transform-ms", msArg(transform), "--step-ms", msArg(step)}
	c := ownloop.LadderConfig{Levels: []level.Level{level.None, level.Raw, level.Sample, level.Host}, Steps: 10, Count: 1, Loader: 1, FirstBatchTimeout: time.Minute}
	at := map[level.Level]ownloop.LadderPoint{}
	var out bytes.Buffer
	err := ownloop.Ladder(context.Background(), command(t, script, args...), c, &out, func(p ownloop.LadderPoint) error {
		at[p.Level] = p
		return nil
	})
	noneLeft(t, script)
	if err != nil {
		t.Fatalf("Ladder: %v\n%s", err, out.String())
	}
	if len(at) != 4 {
		t.Fatalf("levels %v, want host, sample, raw and none", at)
	}
	t.Logf("measured: host %v, sample %v, raw %v, none %v", at[level.Host].StepTime, at[level.Sample].StepTime, at[level.Raw].StepTime, at[level.None].StepTime)
	none, raw, sample := at[level.None].StepTime, at[level.Raw].StepTime, at[level.Sample].StepTime
	if floor := step + 4*(fetch+transform); none < floor {
		t.Errorf("none: step %v, want at least %v (the step's, the fetches' and the transforms' sleeps)", none, floor)
	}
	if floor := step + 4*transform; raw < floor {
		t.Errorf("raw: step %v, want at least %v: the transforms still run", raw, floor)
	}
	if raw > none-4*fetch/2 {
		t.Errorf("raw: step %v against none's %v: want at least %v less, half the fetches left out", raw, none, 4*fetch/2)
	}
	if sample > raw-4*transform/2 {
		t.Errorf("sample: step %v against raw's %v: want at least %v less, half the transforms left out", sample, raw, 4*transform/2)
	}
	for _, b := range at[level.Raw].From.Batches {
		if b.Samples != 4 || b.Transform < 4*transform || b.GetItem > b.Transform+4*fetch/2 {
			t.Errorf("raw: batch %+v, want 4 samples, their .transform timed and run (at least %v), and no fetch in __getitem__", b, 4*transform)
		}
	}
	if ld, _ := at[level.None].From.Target(); !ld.Measured.Raw || ld.Measured.Split {
		t.Errorf("loader %+v: want raw applicable without a split (no .loader)", ld)
	}

	// Two transformed views a sample (the .transform called twice), in
	// two forked workers: both replayed, the script's checks pass.
	c.Levels, c.Steps = []level.Level{level.Raw}, 4
	views := command(t, script, append(args, "--returns", "views", "--workers", "2")...)
	if err := ownloop.Ladder(context.Background(), views, c, &out, func(ownloop.LadderPoint) error { return nil }); err != nil {
		t.Errorf("raw on two views a sample: %v\n%s", err, out.String())
	}
	noneLeft(t, script)

	// __getitem__ changes the transform's output: refused in one line.
	changed := command(t, script, append(args, "--returns", "changed")...)
	err = ownloop.Ladder(context.Background(), changed, c, &out, func(ownloop.LadderPoint) error { return nil })
	if want := "level raw: Arrays.__getitem__ returns tuple, not its .transform's output as it is"; !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Errorf("raw on a changed output: %v, want refused: %s", err, want)
	}
	noneLeft(t, script)
}

// TestRemadeLoaderTimedOnce: a DataLoader made anew each epoch over the
// same torchvision-style dataset is the same training loop, and its
// dataset's .loader and .transform are timed once, not once more each
// epoch: in every batch the parts are no longer than the whole
// __getitem__ they are part of (timed twice, .loader would read twice
// its time).
func TestRemadeLoaderTimedOnce(t *testing.T) {
	needTorch(t)
	script, root := folder(t)
	cmd := command(t, script, "--root", root, "--load-ms", "6", "--transform-ms", "3", "--step-ms", "1", "--files", "16", "--remake")
	var out bytes.Buffer
	run, err := ownloop.Exec(context.Background(), cmd, settings(14, 4), &out, nil)
	noneLeft(t, script)
	if err != nil {
		t.Fatalf("Exec: %v\n%s", err, out.String())
	}
	epochs := 0
	for _, st := range run.Steps {
		if st.Phase == "epoch" {
			epochs++
		}
	}
	if epochs < 2 || len(run.Batches) == 0 {
		t.Fatalf("%d steps across an epoch's end, %d batches timed: want the loop measured over 3 epochs of 4 batches", epochs, len(run.Batches))
	}
	for _, b := range run.Batches {
		if b.Load+b.Transform > b.GetItem || b.LoadCPU+b.TransformCPU > b.GetItemCPU {
			t.Errorf("batch %+v: .loader and .transform take longer than the __getitem__ they are part of: timed more than once", b)
		}
	}
}
