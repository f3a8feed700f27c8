package workloads

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/tune"
)

var updateTune = flag.Bool("update-tune", false, "rewrite testdata/tune.golden")

// tuneOutcome is a tune of a script with num_workers=0: its profile with
// the model, a search with a failed candidate, the check and the best.
func tuneOutcome() tune.Result {
	own := tune.Setting{}
	w4 := tune.Setting{Workers: 4, Prefetch: 2}
	return tune.Result{Script: "train.py", Pick: 4,
		Profile: tune.Profile{Own: own, Before: 4.5, Cached: 19.25, Startup: 2500 * time.Millisecond,
			Model: &ownloop.WhatIf{Step: 52 * time.Millisecond, PerBatch: 210 * time.Millisecond, FreePerBatch: 180 * time.Millisecond, CPUPerBatch: 90 * time.Millisecond,
				MainCPUPerStep: 40 * time.Millisecond, Workers: 0, Cores: 2, Stage: "dataset .loader (reading and decoding)", StageTime: 120 * time.Millisecond}},
		Runs: []tune.Run{
			{Setting: w4, Stage: tune.Search, StepsPerSec: 15.5, Steps: 20, Wall: 6 * time.Second},
			{Setting: tune.Setting{Workers: 8, Prefetch: 2}, Stage: tune.Search, Failed: true, Wall: 3 * time.Second},
			{Setting: own, Stage: tune.Search, StepsPerSec: 4.25, Steps: 21, Wall: 9 * time.Second},
			{Setting: tune.Setting{Workers: 4, Prefetch: 4, Persistent: true, Start: "forkserver"}, Stage: tune.Search, StepsPerSec: 15, Steps: 20, Wall: 7 * time.Second},
			{Setting: own, Stage: tune.Check, StepsPerSec: 4, Steps: 20, Wall: 9 * time.Second},
			{Setting: w4, Stage: tune.Check, StepsPerSec: 16, Steps: 20, Wall: 6 * time.Second},
		},
		Best: w4, Stopped: "budget"}
}

// TestTuneCodec checks a tune's outcome encodes then decodes to itself,
// in memory and through a result file: with and without the model, cut
// short by an interrupt, on CUDA with pinned memory.
func TestTuneCodec(t *testing.T) {
	full := tuneOutcome()
	noModel := tuneOutcome()
	noModel.Profile.Model, noModel.Pick = nil, 2
	cut := tuneOutcome()
	cut.Runs, cut.Stopped, cut.Best = cut.Runs[:1], "interrupted", tune.Setting{Workers: 4, Prefetch: 2}
	cuda := tuneOutcome()
	cuda.Profile.CUDA, cuda.Profile.Own = true, tune.Setting{Workers: 2, Prefetch: 2, Pin: true}
	cuda.Runs = nil
	cuda.Best, cuda.Stopped = cuda.Profile.Own, "done"
	iterable := tuneOutcome()
	iterable.Profile.Iterable = true
	ranks := tuneOutcome()
	ranks.Profile.Ranks, ranks.Profile.Model.Cores = 2, 1
	for _, r := range []tune.Result{full, noModel, cut, cuda, iterable, ranks} {
		roundTrip(t, TuneCodec, r)
	}
}

// TestTuneCodecRanks checks a tune of a node's ranks names every record
// with ranks=N (compare and history tell it from one process's), and
// that records of another count of ranks than their profile's, or a
// count that is not one, do not decode.
func TestTuneCodecRanks(t *testing.T) {
	r := tuneOutcome()
	r.Profile.Ranks = 2
	recs := TuneCodec.Encode(r)
	for _, rec := range recs {
		if !strings.Contains(string(rec.Name), "/ranks=2") {
			t.Errorf("%s: no ranks=2", rec.Name)
		}
	}
	if got, want := string(recs[1].Name), "BenchmarkTune/script=train.py/stage=search/workers=4/prefetch=2/pin=false/persistent=false/start=default/ranks=2"; got != want {
		t.Errorf("a search run's name %q, want %q", got, want)
	}
	renamed := func(i int, from, to string) []*benchfmt.Result {
		out := slices.Clone(recs)
		x := *recs[i]
		x.Name = benchfmt.Name(strings.Replace(string(x.Name), from, to, 1))
		out[i] = &x
		return out
	}
	for _, tc := range []struct {
		name string
		recs []*benchfmt.Result
		want string
	}{
		{"a run of other ranks", renamed(2, "/ranks=2", "/ranks=4"), "a record of Tune of 4 ranks after a profile of 2"},
		{"a run of one process", renamed(3, "/ranks=2", ""), "a record of Tune of 0 ranks after a profile of 2"},
		{"ranks not a count", renamed(0, "/ranks=2", "/ranks=two"), "ranks \"two\": want a count of 1 or more"},
		{"no ranks", renamed(0, "/ranks=2", "/ranks=0"), "ranks \"0\": want a count of 1 or more"},
	} {
		_, err := TuneCodec.Decode(tc.recs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestTuneCodecCommittedFiles checks the committed tunes of docs/tune.md
// decode, each to the answer the page gives.
func TestTuneCodecCommittedFiles(t *testing.T) {
	for _, tc := range []struct {
		path      string
		recommend bool
		best      tune.Setting
	}{
		{"../results/tune-imagefolder-5d62c85.txt", true, tune.Setting{Workers: 3, Prefetch: 2, Persistent: true}},
		{"../results/tune-imagefolder-598bba3.txt", false, tune.Setting{Workers: 1, Prefetch: 4}},
		{"../results/tune-imagefolder-517e1ce.txt", false, tune.Setting{Workers: 1, Prefetch: 2, Persistent: true}},
		{"../results/tune-ours-remote-a98e6c0.txt", true, tune.Setting{Workers: 1, Prefetch: 2, Fetch: 128}},
		{"../results/tune-ours-ladder-a98e6c0.txt", false, tune.Setting{Workers: 1, Prefetch: 2}},
		{"../results/tune-ranks-d2c5995.txt", false, tune.Setting{Workers: 2, Prefetch: 4, Persistent: true}},
	} {
		recs, err := resultfile.Read(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := TuneCodec.Decode(recs)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if strings.Contains(tc.path, "ranks") && (r.Profile.Ranks != 2 || r.Profile.Model.Cores != 1) {
			t.Errorf("%s: %d ranks, a rank's model on %d cores; want 2 and 1", tc.path, r.Profile.Ranks, r.Profile.Model.Cores)
		}
		if a := r.Answer(); a.Recommend != tc.recommend || a.Best != tc.best || r.Stopped != "done" || (r.Profile.Model == nil) != r.Profile.Ours() {
			t.Errorf("%s: answer %+v, stopped %q; want recommend %v of %+v", tc.path, a, r.Stopped, tc.recommend, tc.best)
		}
	}
}

// TestTuneCodecGolden checks the records of a tune against the golden
// file: the format compare and history read.
func TestTuneCodecGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.txt")
	res := tuneOutcome()
	res.Runs[1].Reason = "DataLoader worker (pid 4242) is killed by signal: Killed"
	job := driver.Job{Settings: func() []resultfile.Config { return TuneFailures(res) },
		Measure: func(context.Context, *driver.Hooks) ([]*benchfmt.Result, error) { return TuneCodec.Encode(res), nil }}
	if _, err := driver.Run(context.Background(), job, driver.Output{Path: path}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "tune.golden")
	if *updateTune {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("tune's result file:\n%s\nwant (%s; -update-tune rewrites it):\n%s", got, golden, want)
	}
	back, err := resultfile.Read(golden)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TuneCodec.Decode(back); err != nil {
		t.Errorf("the golden file does not decode: %v", err)
	}
}

// TestTuneCodecRefuses checks records a tune does not make, in an order
// it does not make them, or cut short, do not decode, naming the record.
func TestTuneCodecRefuses(t *testing.T) {
	recs := TuneCodec.Encode(tuneOutcome())
	renamed := func(i int, from, to string) []*benchfmt.Result {
		out := make([]*benchfmt.Result, len(recs))
		copy(out, recs)
		r := *recs[i]
		r.Name = benchfmt.Name(strings.Replace(string(r.Name), from, to, 1))
		out[i] = &r
		return out
	}
	for _, tc := range []struct {
		name string
		recs []*benchfmt.Result
		want string
	}{
		{"another's", SimCodec.Encode(SimOutcome{Runs: []SimRun{{Load: time.Second, Batches: 3, Seed: 1}}}), "not a record of Tune"},
		{"cut short", recs[:len(recs)-1], "no best record after 7 records"},
		{"profile not first", append(recs[1:2:2], recs...), "stage=search/workers=4/prefetch=2/pin=false/persistent=false/start=default: a record of Tune at stage \"search\" out of the order"},
		{"a stage of its own", renamed(2, "stage=search", "stage=warm"), "at stage \"warm\" out of the order"},
		{"pin not a bool", renamed(1, "pin=false", "pin=maybe"), "pin \"maybe\": want true or false"},
		{"no start", renamed(1, "/start=default", ""), "without its key start"},
		{"runs miscounted", append(append(recs[:3:3], recs[4:len(recs)-1]...), recs[len(recs)-1]), "6 runs and stopped 1, after 5 runs"},
	} {
		_, err := TuneCodec.Decode(tc.recs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// tuneOursOutcome is a tune of our pipeline reading from a bucket: its
// profile with the model's picks and bound, a failed candidate, the
// check and the best.
func tuneOursOutcome() tune.Result {
	own := tune.Setting{Workers: 1, Prefetch: 1, Fetch: 2}
	best := tune.Setting{Workers: 4, Prefetch: 1, Fetch: 16}
	return tune.Result{Script: "none", Pick: 4, FetchPick: 16,
		Profile: tune.Profile{Own: own, Pipeline: "remote", Before: 6, Cached: 90, Startup: 40 * time.Millisecond, Limit: "fetch workers"},
		Runs: []tune.Run{
			{Setting: tune.Setting{Workers: 4, Prefetch: 1, Fetch: 2}, Stage: tune.Search, StepsPerSec: 6.5, Steps: 20, Wall: time.Second},
			{Setting: tune.Setting{Workers: 64, Prefetch: 1, Fetch: 2}, Stage: tune.Search, Failed: true, Wall: time.Second},
			{Setting: best, Stage: tune.Search, StepsPerSec: 48, Steps: 20, Wall: 500 * time.Millisecond},
			{Setting: own, Stage: tune.Check, StepsPerSec: 6, Steps: 20, Wall: 3 * time.Second},
			{Setting: best, Stage: tune.Check, StepsPerSec: 50, Steps: 20, Wall: 500 * time.Millisecond},
		},
		Best: best, Stopped: "done"}
}

// TestTuneCodecOurs checks a tune of our pipeline encodes then decodes
// to itself (the ladder's without a bucket or a model too), by the
// names compare and history read, and that records mixing a script's
// keys with our pipeline's, or of two pipelines, do not decode.
func TestTuneCodecOurs(t *testing.T) {
	ladder := tuneOursOutcome()
	ladder.Profile.Pipeline, ladder.Profile.Limit, ladder.FetchPick, ladder.Script = "ladder", "", 0, "raw"
	for i := range ladder.Runs {
		ladder.Runs[i].Setting.Fetch = 0
	}
	ladder.Profile.Own.Fetch, ladder.Best.Fetch = 0, 0
	for _, r := range []tune.Result{tuneOursOutcome(), ladder} {
		roundTrip(t, TuneCodec, r)
	}
	recs := TuneCodec.Encode(tuneOursOutcome())
	if got, want := string(recs[0].Name), "BenchmarkTune/pipeline=remote/level=none/stage=profile/workers=1/prefetch=1/fetch=2/bound=fetch+workers"; got != want {
		t.Errorf("the profile's name %q, want %q", got, want)
	}
	renamed := func(i int, from, to string) []*benchfmt.Result {
		out := slices.Clone(recs)
		r := *recs[i]
		r.Name = benchfmt.Name(strings.Replace(string(r.Name), from, to, 1))
		out[i] = &r
		return out
	}
	for _, tc := range []struct {
		name string
		recs []*benchfmt.Result
		want string
	}{
		{"a script's key too", renamed(1, "/fetch=2", "/fetch=2/pin=false"), "with the keys of a script's and our pipeline's (pin)"},
		{"no fetch", renamed(1, "/fetch=2", ""), "without its key fetch"},
		{"another pipeline", renamed(2, "pipeline=remote", "pipeline=ladder"), "of another pipeline than its profile's"},
		{"an unknown pipeline", renamed(0, "pipeline=remote", "pipeline=peer"), `pipeline "peer": want ladder or remote`},
	} {
		_, err := TuneCodec.Decode(tc.recs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestTuneCodecReadsFailures checks Decode gives each failed run the
// reason the file's tune-failed lines hold (TuneFailures), as the run's
// report printed it, where the records carry the file's settings: the
// golden file's, a run's records given them, a reason on many lines
// kept on one; and none where the records carry no such line, or a line
// of another setting.
func TestTuneCodecReadsFailures(t *testing.T) {
	res := tuneOutcome()
	res.Runs[1].Reason = "the script failed: exit status 1\nTraceback (most recent call last):"
	golden, err := resultfile.Read(filepath.Join("testdata", "tune.golden"))
	if err != nil {
		t.Fatal(err)
	}
	recs := TuneCodec.Encode(res)
	other := []resultfile.Config{{Key: "tune-failed-1", Value: "num_workers=6, prefetch_factor=2: out of memory"}}
	for _, tc := range []struct {
		name string
		recs []*benchfmt.Result
		want string // the failed candidate's line in the report
	}{
		{"the golden file", golden, "failed: DataLoader worker (pid 4242) is killed by signal: Killed\n"},
		{"a run's records with the file's settings", resultfile.WithSettings(recs, TuneFailures(res)), `failed: the script failed: exit status 1\nTraceback (most recent call last):` + "\n"},
		{"records without settings", recs, "failed: failed\n"},
		{"a line of another setting", resultfile.WithSettings(recs, other), "failed: failed\n"},
	} {
		r, err := TuneCodec.Decode(tc.recs)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var b bytes.Buffer
		r.WriteText(&b)
		if !strings.Contains(b.String(), "num_workers=8, prefetch_factor=2") || !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s: the report lacks %q:\n%s", tc.name, tc.want, b.String())
		}
	}
}
