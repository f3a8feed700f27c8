//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/ownloop"
)

// folder copies testdata/folder.py (a DatasetFolder whose .loader and
// .transform sleep set times) into the test's own directory.
func folder(t *testing.T) (script, root string) {
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
// the one that sleeps the longest.
func TestStagesNameTheSlowOne(t *testing.T) {
	needTorch(t)
	for _, tc := range []struct {
		load, transform string
		stage           string
	}{
		{"12", "1", "dataset .loader (reading and decoding)"},
		{"1", "12", "dataset .transform"},
	} {
		script, root := folder(t)
		cmd := command(t, script, "--root", root, "--load-ms", tc.load, "--transform-ms", tc.transform)
		s := settings(20, 12)
		var out bytes.Buffer
		run, err := ownloop.Exec(context.Background(), cmd, s, &out, nil)
		noneLeft(t, script)
		if err != nil {
			t.Fatalf("Exec: %v\n%s", err, out.String())
		}
		rep, err := ownloop.Analyze(cmd, s, run, 100)
		if err != nil {
			t.Fatal(err)
		}
		st := rep.Stages
		if !st.Split || st.Load <= 0 || st.Transform <= 0 || st.Load+st.Transform > st.GetItem {
			t.Errorf("load %s, transform %s ms: stages %+v, want .loader and .transform timed within __getitem__", tc.load, tc.transform, st)
		}
		if rep.Verdict.Stage != tc.stage {
			t.Errorf("load %s, transform %s ms: stage %q (%s), want %q", tc.load, tc.transform, rep.Verdict.Stage, rep.Verdict.Reason, tc.stage)
		}
	}
}

// TestLadderOnScript runs every level but device on the DatasetFolder
// script, loading the slow stage: the points are the levels asked for,
// and the largest drop is none's, which the table attributes to raw data
// loading.
func TestLadderOnScript(t *testing.T) {
	needTorch(t)
	script, root := folder(t)
	cmd := command(t, script, "--root", root, "--load-ms", "15", "--transform-ms", "1", "--step-ms", "2")
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
		if p.Steps != 12 || p.Workers != 2 || p.BatchSize != 4 {
			t.Errorf("point %+v: want 12 steps, 2 workers, batches of 4", p)
		}
	}
	if strings.Join(got, ",") != "host,sample,raw,none" {
		t.Fatalf("levels %v, want host,sample,raw,none", got)
	}
	// The step time raw to none adds (15 ms of loading a sample, 4 a
	// batch, 2 workers: 30 ms a batch against a few ms) is the largest.
	var worst time.Duration
	at := ""
	for i := 1; i < len(points); i++ {
		if d := points[i].StepTime - points[i-1].StepTime; d > worst {
			worst, at = d, level.Between(points[i].Level, points[i-1].Level)
		}
	}
	if at != "raw data loading" {
		t.Errorf("largest drop attributed to %q, want raw data loading: %+v", at, points)
	}
	var table bytes.Buffer
	ownloop.WriteLadder(&table, points)
	if !strings.Contains(table.String(), "raw data loading") {
		t.Errorf("table:\n%s", table.String())
	}
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
		{level.Raw, "level raw needs a torchvision-style dataset"},
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
	got, err := ownloop.Verify(context.Background(), command(t, script, "--getitem-ms", "1", "--step-ms", "1", "--workers", "1"), 1, 3, 6, time.Minute, &bytes.Buffer{})
	noneLeft(t, script)
	if err != nil || got <= 0 {
		t.Fatalf("Verify at 3 workers = %v, %v; want steps/s from a run at 3 workers", got, err)
	}
}

// TestIterableDataset: an IterableDataset's __iter__ is timed per sample
// (named so), and level sample, which needs __getitem__, is refused.
func TestIterableDataset(t *testing.T) {
	needTorch(t)
	script := sleepy(t)
	for _, workers := range []string{"0", "1"} {
		cmd := command(t, script, "--iterable", "--workers", workers, "--getitem-ms", "5", "--step-ms", "2")
		s := settings(20, 12)
		run, err := ownloop.Exec(context.Background(), cmd, s, &bytes.Buffer{}, nil)
		noneLeft(t, script)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ownloop.Analyze(cmd, s, run, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Stages.Iterable || rep.Stages.Samples == 0 || rep.Stages.GetItem < 5*time.Millisecond || rep.Verdict.Stage != "dataset __iter__" {
			t.Errorf("workers %s: stages %+v, stage %q; want __iter__ timed at no less than its 5 ms sleep and named", workers, rep.Stages, rep.Verdict.Stage)
		}
	}
	c := ownloop.LadderConfig{Levels: []level.Level{level.Sample}, Steps: 4, Count: 1, Loader: 1, FirstBatchTimeout: time.Minute}
	err := ownloop.Ladder(context.Background(), command(t, script, "--iterable"), c, &bytes.Buffer{}, func(ownloop.LadderPoint) error { return nil })
	if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), "IterableDataset") {
		t.Errorf("level sample on an IterableDataset: %v, want refused", err)
	}
	noneLeft(t, script)
}
