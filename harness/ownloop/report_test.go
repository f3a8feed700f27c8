package ownloop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/ownloop"
)

// bursty is a run of a loader with 2 workers, each making a batch in
// 67 ms, under a 5 ms step: the gaps between batches alternate 53 and
// 14 ms (the loop), then cached steps of 5 ms.
func bursty(after, stepsAfter int) *ownloop.Run {
	run := &ownloop.Run{Done: true, Start: ownloop.Start{Python: "3.11", Torch: "2"}}
	var ld ownloop.Loader
	ld.Index, ld.Target, ld.Kind, ld.Dataset, ld.BatchSize, ld.Workers, ld.Site = 1, true, "DataLoader", "Slow", 4, 2, "train.py:9"
	ld.Measured.GetItem, ld.Measured.Collate = true, true
	run.Loaders = []ownloop.Loader{ld}
	for i := range after + stepsAfter {
		st := ownloop.Step{Index: i, Time: 5 * time.Millisecond, Wait: 0, Phase: "cached"}
		if i < after {
			st.Phase = "loader"
			st.Time, st.Wait = 53*time.Millisecond, 48*time.Millisecond
			if i%2 == 1 {
				st.Time, st.Wait = 14*time.Millisecond, 9*time.Millisecond
			}
		}
		run.Steps = append(run.Steps, st)
	}
	for i := range after {
		run.Batches = append(run.Batches, ownloop.Batch{Worker: i % 2, Samples: 4, GetItem: 66 * time.Millisecond, Collate: time.Millisecond, CPU: time.Duration(i) * time.Millisecond})
	}
	return run
}

// TestBurstyLoop: the median of single steps of a bursty loader lands on
// one of the two gaps (14 ms here: it would call the loop nearly free);
// the estimate over rounds of the workers is the loader's period, 33.5 ms,
// and the verdict holds.
func TestBurstyLoop(t *testing.T) {
	const after, stepsAfter = 60, 30
	run := bursty(after, stepsAfter)
	var singles []time.Duration
	for _, st := range run.Steps[2:after] { // an odd count, from a short gap
		singles = append(singles, st.Time)
	}
	if m := analysis.RoundEstimate(singles[1:], 1).Median; m != 14*time.Millisecond && m != 53*time.Millisecond {
		t.Fatalf("single steps' median %v: the test's loop is not bursty", m)
	}
	s := ownloop.Settings{Mode: "analyze", Loader: 1, NumCaches: 4, ReturnCachesAfter: after, StepsAfter: stepsAfter}
	rep, err := ownloop.Analyze(ownloop.Command{Argv: []string{"python3", "train.py"}, Script: "train.py"}, s, run, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Round != 2 {
		t.Fatalf("round %d, want 2", rep.Round)
	}
	period := 33500 * time.Microsecond
	if rep.Before.Lo > period || rep.Before.Hi < period || rep.Before.Median != period {
		t.Errorf("step time before %v (%v – %v), want the period %v within its interval", rep.Before.Median, rep.Before.Lo, rep.Before.Hi, period)
	}
	if rep.After.Median != 5*time.Millisecond {
		t.Errorf("step time after %v, want 5ms", rep.After.Median)
	}
	if p := rep.HeadspacePercent(); p < 84 || p > 86 {
		t.Errorf("headspace %.1f%%, want 85%%", p)
	}
	if rep.Verdict.Class != analysis.HighlyInputBound || rep.Verdict.Stage != "dataset __getitem__" {
		t.Errorf("verdict %s at %s, want highly input-bound at dataset __getitem__", rep.Verdict.Class, rep.Verdict.Stage)
	}
}

// TestRecords: every step in order with its phase, the estimates and the
// stages, each a benchmark of the file's benchmarks.
func TestRecords(t *testing.T) {
	run := bursty(10, 10)
	s := ownloop.Settings{Mode: "analyze", Loader: 1, NumCaches: 4, ReturnCachesAfter: 10, StepsAfter: 10}
	rep, err := ownloop.Analyze(ownloop.Command{Argv: []string{"python3", "train.py"}, Script: "dir/train.py"}, s, run, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	units := map[string]bool{}
	for _, r := range rep.Records() {
		name := string(r.Name)
		base, _, _ := strings.Cut(strings.TrimPrefix(name, "Benchmark"), "/")
		if !strings.HasPrefix(base, "OwnLoopAnalyze") {
			t.Errorf("record %s is not OwnLoopAnalyze's", name)
		}
		if base == "OwnLoopAnalyze" {
			_, ph, _ := strings.Cut(name, "/phase=")
			phases = append(phases, ph)
		}
		for _, v := range r.Values {
			units[v.Unit] = true
		}
		if !strings.Contains(name, "/script=train.py") {
			t.Errorf("record %s does not name the script", name)
		}
	}
	want := "fill " + strings.Repeat("loader ", 9) + "switch " + strings.TrimSpace(strings.Repeat("cached ", 9))
	if got := strings.Join(phases, " "); got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
	for _, u := range []string{"ns/op", "wait-ns", "headspace-%", "getitem-ns/sample", "collate-ns/batch", "worker-cpu-ns", "wait-ns/step"} {
		if !units[u] {
			t.Errorf("no record has unit %s", u)
		}
	}
}

// TestContendedVerdict: a loop that hardly waits for its batches but
// whose steps run three times slower beside the loader (its workers take
// the step's cores) is input-bound, and the stage is named by CPU time:
// here the transform, though the loader's wall time is the longer.
func TestContendedVerdict(t *testing.T) {
	const after, stepsAfter = 40, 30
	run := bursty(after, stepsAfter)
	run.Loaders[0].Measured.Split = true
	for i := range run.Steps {
		if run.Steps[i].Phase == "loader" {
			run.Steps[i].Time, run.Steps[i].Wait = 300*time.Millisecond, 6*time.Millisecond
		} else {
			run.Steps[i].Time = 100 * time.Millisecond
		}
	}
	for i := range run.Batches {
		b := &run.Batches[i]
		b.Load, b.Transform, b.GetItem = 40*time.Millisecond, 20*time.Millisecond, 61*time.Millisecond
		b.LoadCPU, b.TransformCPU, b.GetItemCPU, b.CollateCPU = 4*time.Millisecond, 9*time.Millisecond, 13*time.Millisecond, time.Millisecond
	}
	s := ownloop.Settings{Mode: "analyze", Loader: 1, NumCaches: 4, ReturnCachesAfter: after, StepsAfter: stepsAfter}
	rep, err := ownloop.Analyze(ownloop.Command{Argv: []string{"python3", "train.py"}, Script: "train.py"}, s, run, 1000)
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Verdict
	if v.Share > 0.05 || v.Class != analysis.HighlyInputBound || v.Stage != "dataset .transform" || !strings.Contains(v.Reason, "share the machine's") {
		t.Errorf("verdict %s (wait share %.1f%%) at %q: %s; want highly input-bound at dataset .transform, by CPU", v.Class, 100*v.Share, v.Stage, v.Reason)
	}
}
