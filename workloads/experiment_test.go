package workloads

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/sim"
	"github.com/headspace-bench/headspace/harness/whatif"
)

// tinyLadder is a two-point ladder on the quick emulated device.
func tinyLadder() (Ladder, Env) {
	l := QuickLadder()
	l.Levels, l.Transforms, l.Workers, l.Count = []level.Level{level.Device, level.None}, []string{"fast"}, []int{1}, 2
	dev := DocumentDevice()
	dev.Step = time.Millisecond
	return l, Env{Device: Emulated(dev)}
}

// TestLadderRunResumesAndRecords runs a ladder through Run as `headspace
// ladder` does: a resumed file already holds one run of one point, so
// Run makes the rest alone, each passed to Result as made; the first run
// of each point is recorded as a timeline.
func TestLadderRunResumesAndRecords(t *testing.T) {
	l, env := tinyLadder()
	pts := l.Selected()
	held := pts[0].BenchName()
	env.Done = func(name string) int {
		if name == held {
			return 1
		}
		return 0
	}
	if n := l.Todo(env); n != 3 {
		t.Errorf("Todo %d, want 3 (2 points × 2 runs, 1 held)", n)
	}
	var streamed []string
	env.Result = func(r *benchfmt.Result) error { streamed = append(streamed, string(r.Name)); return nil }
	var recorded []string
	env.Recorded = func(name string, rec *pipeline.Recorder) error {
		if rec == nil {
			t.Errorf("%s: no recorder", name)
		}
		recorded = append(recorded, name)
		return nil
	}
	recs, err := l.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range recs {
		names = append(names, string(r.Name))
	}
	want := []string{held, pts[1].BenchName(), pts[1].BenchName()}
	if !reflect.DeepEqual(names, want) || !reflect.DeepEqual(streamed, want) {
		t.Errorf("records %q, streamed %q; want %q", names, streamed, want)
	}
	if want := []string{pts[0].Name(), pts[1].Name()}; !reflect.DeepEqual(recorded, want) {
		t.Errorf("timelines of %q, want the first run of each point %q", recorded, want)
	}
}

// TestJob runs a ladder through the driver as a command does
// (driver.Run of Job(l, env), streamed to --out): the file holds every
// record, env.Result saw each first; run again, the file is resumed and
// Done tells the ladder to make nothing more.
func TestJob(t *testing.T) {
	l, env := tinyLadder()
	l.Count = 1
	var seen []string
	env.Result = func(r *benchfmt.Result) error { seen = append(seen, string(r.Name)); return nil }
	out := driver.Output{Path: filepath.Join(t.TempDir(), "ladder.txt")}
	job := Job(l, env)
	job.File, job.Settings = driver.Stream, func() []resultfile.Config { return driver.Settings("emulated", l.Settings()) }
	o, err := driver.Run(context.Background(), job, out)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range l.Selected() {
		want = append(want, p.BenchName())
	}
	file, err := resultfile.Read(out.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(file) != len(want) || !reflect.DeepEqual(seen, want) || len(o.Records) != len(want) || o.Path != out.Path {
		t.Fatalf("the file holds %d records, env.Result saw %q, Outcome %d records at %q; want %q in %s", len(file), seen, len(o.Records), o.Path, want, out.Path)
	}
	seen = nil
	if o, err = driver.Run(context.Background(), job, out); err != nil {
		t.Fatal(err)
	}
	if file, _ = resultfile.Read(out.Path); len(file) != len(want) || len(seen) != 0 || len(o.Records) != len(want) {
		t.Errorf("resumed: the file holds %d records, %d new, Outcome %d; want %d, none new", len(file), len(seen), len(o.Records), len(want))
	}
}

// TestLadderUnder runs a ladder under a sub-benchmark path, as the 003
// report runs its steps: records, Start, Recorded and Done all use the
// path's name (BenchmarkLadder/step=a/level=…), each run reaches
// MeasureEach's callback as a PointRun with its record, Record picks the one point recorded,
// and a path that is not one is refused.
func TestLadderUnder(t *testing.T) {
	l, env := tinyLadder()
	l.Under, l.Count = "Ladder/step=a", 1
	pts := l.Selected()
	none := l.PointName(pts[1])
	if pts[1].Level != level.None || none != "Ladder/step=a/"+pts[1].Sub() {
		t.Fatalf("point %s named %q", pts[1].Name(), none)
	}
	var started, recorded, asked []string
	var runs []PointRun
	env.Start = func(name string) { started = append(started, name) }
	env.Record = func(name string) bool { return name == none }
	env.Recorded = func(name string, _ *pipeline.Recorder) error { recorded = append(recorded, name); return nil }
	env.Done = func(name string) int { asked = append(asked, name); return 0 }
	o, err := l.MeasureEach(context.Background(), env, func(r PointRun) error { runs = append(runs, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	recs := LadderCodec.Encode(o)
	var names, want []string
	for _, r := range recs {
		names = append(names, string(r.Name))
	}
	for _, p := range pts {
		want = append(want, strings.Replace(p.BenchName(), "BenchmarkLadder/", "BenchmarkLadder/step=a/", 1))
	}
	if !reflect.DeepEqual(names, want) || !reflect.DeepEqual(asked, want) {
		t.Errorf("records %q, Done asked for %q; want %q", names, asked, want)
	}
	if want := []string{l.PointName(pts[0]), none}; !reflect.DeepEqual(started, want) {
		t.Errorf("started %q, want %q", started, want)
	}
	if !reflect.DeepEqual(recorded, []string{none}) {
		t.Errorf("recorded %q, want %q alone", recorded, none)
	}
	if len(runs) != len(recs) {
		t.Fatalf("%d PointRuns for %d records", len(runs), len(recs))
	}
	for i, r := range runs {
		if r.Point != pts[i] || r.Record != recs[i] || r.Result.StepsPerSec() <= 0 {
			t.Errorf("run %d: point %s, record %s, %v steps/s", i, r.Point.Name(), r.Record.Name, r.Result.StepsPerSec())
		}
	}
	for _, bad := range []string{"Ladder/step a", "/Ladder", "Ladder/"} {
		b := l
		b.Under = bad
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "benchmark path") {
			t.Errorf("under %q: %v", bad, err)
		}
	}
}

// TestLadderShards checks that the shards of a sweep split its points,
// every point in one shard, in the sweep's order.
func TestLadderShards(t *testing.T) {
	l := DefaultLadder()
	var all []string
	for s := range 3 {
		sh := l
		sh.Shard, sh.Shards = s, 3
		for _, p := range sh.Selected() {
			all = append(all, p.Name())
		}
	}
	if len(all) != len(l.Points()) || len(l.Selected()) != len(l.Points()) {
		t.Fatalf("%d points in 3 shards, %d unsharded; the sweep has %d", len(all), len(l.Selected()), len(l.Points()))
	}
	// Only is one point's sweep, whatever the shard.
	sh := l
	sh.Shard, sh.Shards = 1, 3
	for _, p := range l.Points() {
		if got := sh.Only(p).Selected(); len(got) != 1 || got[0] != p {
			t.Errorf("Only(%s) runs %v", p.Name(), got)
		}
	}
	seen := map[string]bool{}
	for _, n := range all {
		if seen[n] {
			t.Errorf("%s in two shards", n)
		}
		seen[n] = true
	}
}

// TestSimOneCase is `headspace sim`'s experiment: one case, no Dists, no
// Seeds, simulated exactly as its Config says (its distribution, spread
// and seed), its *sim.Result in the outcome Measure returns, and Run's
// record its encoding.
func TestSimOneCase(t *testing.T) {
	c := sim.Config{Loaders: 3, Load: 700 * time.Millisecond, LoadDist: sim.Normal, LoadStddev: 50 * time.Millisecond,
		Step: 100 * time.Millisecond, Duration: 5 * time.Second, Prefetch: 2, Seed: 7}
	s := Sim{Cases: []SimCase{{Config: c}}}
	if runs := s.Runs(); len(runs) != 1 || runs[0] != c {
		t.Fatalf("runs %+v, want the case as it is", runs)
	}
	out, err := s.Measure(context.Background(), Env{})
	if err != nil {
		t.Fatal(err)
	}
	var streamed []*benchfmt.Result
	recs, err := s.Run(context.Background(), Env{Result: func(r *benchfmt.Result) error { streamed = append(streamed, r); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || len(out.Runs) != 1 || out.Runs[0].Result == nil || out.Runs[0].Result.Batches != want.Batches || out.Runs[0].Result.ModelIdle != want.ModelIdle {
		t.Fatalf("%d records, %d runs; want one, as sim.Run gives", len(recs), len(out.Runs))
	}
	if !reflect.DeepEqual(streamed, recs) {
		t.Errorf("env.Result got %d records, Run returned %d: want the same", len(streamed), len(recs))
	}
	if name := string(recs[0].Name); !strings.Contains(name, "dist=normal/seed=7") {
		t.Errorf("record %s: want the case's distribution and seed", name)
	}
	if v := recs[0].Values[0]; v.Unit != "batches" || v.Value != float64(want.Batches) {
		t.Errorf("record's %v %s, want %d batches", v.Value, v.Unit, want.Batches)
	}
	// With Seeds, the seeds run from 1; with Dists, each case also runs
	// with each distribution at the document's spread.
	s.Seeds, s.Dists = 2, []string{sim.Constant}
	runs := s.Runs()
	if len(runs) != 2 || runs[0].Seed != 1 || runs[1].Seed != 2 || runs[0].LoadDist != sim.Constant || runs[0].LoadStddev != 0 {
		t.Errorf("runs %+v", runs)
	}
}

// TestWhatIfRunWithAProfile is `headspace whatif --stats`: a saved
// profile, no verification and no ladder make no runs, and the profile
// is the one given.
func TestWhatIfRunWithAProfile(t *testing.T) {
	w := QuickWhatIf()
	p := whatif.Profile{Batch: 4, Workers: 1, Cores: 1, Step: time.Millisecond, Measured: 100,
		Stages: []whatif.Stage{{Name: "transform", Workers: 1, CPU: time.Millisecond}}}
	w.Profiled, w.Verify = &p, whatif.Grid{}
	if n := w.Runs(); n != 0 {
		t.Errorf("Runs %d, want none", n)
	}
	var got []WhatIfOutcome
	o, err := w.MeasureEach(context.Background(), Env{}, func(o WhatIfOutcome) error { got = append(got, o); return nil })
	if err != nil || o.Checks != nil || o.Profiling != nil || len(WhatIfCodec.Encode(o)) != 0 {
		t.Fatalf("%+v, %v; want no runs", o, err)
	}
	if len(got) != 1 || got[0].Profile != &p || o.Profile != &p {
		t.Errorf("passed %+v, returned the profile %p; want the one given (%p), once", got, o.Profile, &p)
	}
}

// TestCUDACheckValidate refuses what the check cannot run before it
// looks for a GPU.
func TestCUDACheckValidate(t *testing.T) {
	for _, tc := range []struct {
		edit func(*CUDACheck)
		want string
	}{
		{func(c *CUDACheck) { c.Batch = 0 }, "batch 0 and side 256 must be positive"},
		{func(c *CUDACheck) { c.Reps = 0 }, "steps 5 and reps 0 must be positive"},
		{func(c *CUDACheck) { c.Sizes = nil }, "no copy sizes"},
		{func(c *CUDACheck) { c.Sizes = []int64{-1} }, "copy size -1"},
		{func(c *CUDACheck) { c.Precisions = []string{"fp16"} }, `precision "fp16"`},
		{func(c *CUDACheck) { c.Ordinal = -1 }, "ordinal -1"},
	} {
		c := DefaultCUDACheck()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", c, err, tc.want)
		}
		if _, err := c.Run(context.Background(), Env{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run %+v: %v, want %q", c, err, tc.want)
		}
	}
	for _, z := range []Size{Default, Quick} {
		if err := Sized[CUDACheck](z).Validate(); err != nil {
			t.Errorf("size %d: %v", z, err)
		}
		d := Sized[CUDADecode](z)
		d.JPEGs = "jpegs" // the caller's
		if err := d.Validate(); err != nil {
			t.Errorf("CUDADecode at size %d: %v", z, err)
		}
	}
}

// TestEnvHooksTyped checks that no hook of Env takes an interface,
// which a subscriber of the wrong type would wait on in silence: what an
// experiment measured is its typed outcome (Typed), and what it passes
// as it goes is typed too.
func TestEnvHooksTyped(t *testing.T) {
	for f := range reflect.TypeFor[Env]().Fields() {
		if f.Type.Kind() != reflect.Func {
			continue
		}
		for p := range f.Type.Ins() {
			if p.Kind() == reflect.Interface {
				t.Errorf("Env.%s takes %s: an untyped hook", f.Name, p)
			}
		}
	}
}

// TestHookedChainsResult: env.Hooked(h) gives each record to env.Result
// first, then to the run's streamed file (the ladder's table sees every
// record so); a record env.Result refuses never reaches the file, and
// Done counts what the file holds.
func TestHookedChainsResult(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	refuse := errors.New("refused")
	var seen int
	env := Env{Result: func(*benchfmt.Result) error {
		if seen++; seen == 2 {
			return refuse
		}
		return nil
	}}
	rec := func(v float64) *benchfmt.Result {
		return &benchfmt.Result{Name: benchfmt.Name("BenchmarkLadder/level=raw"), Iters: 1, Values: []benchfmt.Value{{Value: v, Unit: "steps/s"}}}
	}
	job := driver.Job{File: driver.Stream, Settings: func() []resultfile.Config { return []resultfile.Config{{Key: "document", Value: "test"}} },
		Measure: func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			env := env.Hooked(h)
			if err := env.Result(rec(1)); err != nil {
				return nil, err
			}
			if err := env.Result(rec(2)); !errors.Is(err, refuse) {
				t.Errorf("a refused record: Result = %v, want %v", err, refuse)
			}
			if got := env.Done("Ladder/level=raw"); got != 1 {
				t.Errorf("Done = %d, want 1", got)
			}
			return nil, nil
		}}
	if _, err := driver.Run(context.Background(), job, driver.Output{Path: path}); err != nil {
		t.Fatal(err)
	}
	if rs, err := resultfile.Read(path); err != nil || len(rs) != 1 || seen != 2 {
		t.Errorf("the file holds %d records (%v) and env.Result saw %d; want 1 and 2", len(rs), err, seen)
	}
}
