package workloads

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// The codecs of the experiments that keep each run's record (Ladder,
// Caching, Remote): a decoded run is its point and its record, whose
// figures the report reads; Measure's whole train.Result is not in it.

// pointRun is a run of p whose record, named under (Ladder.Under),
// holds ns/op and steps/s.
func pointRun(under string, p ladder.Point, sps float64) PointRun {
	return PointRun{Point: p, Record: &benchfmt.Result{Name: benchfmt.Name(resultfile.BenchName(under+"/"+p.Sub(), runtime.GOMAXPROCS(0))),
		Iters: 4, Values: []benchfmt.Value{{Value: 1e9 / sps, Unit: "ns/op"}, {Value: sps, Unit: "steps/s"}, {Value: sps * 8, Unit: "samples/s"}}}}
}

// recordLines are recs as a result file's lines would give them: name
// (without "Benchmark"), iterations and values in the units written.
func recordLines(recs []*benchfmt.Result) []string {
	var out []string
	for _, r := range recs {
		line := fmt.Sprintf("%s %d", strings.TrimPrefix(string(r.Name), "Benchmark"), r.Iters)
		for _, v := range r.Values {
			if v.OrigUnit != "" {
				v.Value, v.Unit = v.OrigValue, v.OrigUnit
			}
			line += fmt.Sprintf(" %g %s", v.Value, v.Unit)
		}
		out = append(out, line)
	}
	return out
}

// keptRoundTrip checks a codec that keeps each run's record: want (no
// run with a Result) decodes from its records in memory as itself, and
// from a result file as the same runs, by describe, which encode back to
// exactly the file's records.
func keptRoundTrip[R any](t *testing.T, c Codec[R], want R, describe func(R) []string) {
	t.Helper()
	recs := c.Encode(want)
	got, err := c.Decode(recs)
	if err != nil {
		t.Fatalf("in memory: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("in memory: decoded\n%+v\nwant\n%+v", got, want)
	}
	file := throughFile(t, recs)
	back, err := c.Decode(file)
	if err != nil {
		t.Fatalf("through a file: %v", err)
	}
	if !slices.Equal(describe(back), describe(want)) {
		t.Errorf("through a file: decoded %q, want %q", describe(back), describe(want))
	}
	if !slices.Equal(recordLines(c.Encode(back)), recordLines(file)) || len(file) != len(recs) {
		t.Errorf("through a file: encodes back as\n%q\nthe file's records are\n%q", recordLines(c.Encode(back)), recordLines(file))
	}
}

// describeRuns is each run's point, as %+v.
func describeRuns[T any](runs []T, of func(T) any) []string {
	var out []string
	for _, r := range runs {
		out = append(out, fmt.Sprintf("%+v", of(r)))
	}
	return out
}

func TestLadderCodec(t *testing.T) {
	none := ladder.Point{Level: level.None, Workers: 2, Impl: "naive", Placement: loader.Host, Pinned: true}
	dev := ladder.Point{Level: level.Device, Workers: 16, Impl: "device", Placement: loader.Device}
	raw := ladder.Point{Level: level.Raw, Workers: 1, Impl: "fast", Placement: loader.Host}
	for _, tc := range []struct {
		name string
		o    LadderOutcome
	}{
		{"one run", LadderOutcome{Runs: []PointRun{pointRun("Ladder", none, 0.813)}}},
		{"points and runs", LadderOutcome{Runs: []PointRun{pointRun("Ladder", dev, 3.45), pointRun("Ladder", raw, 1.72), pointRun("Ladder", raw, 1e-7), pointRun("Ladder", none, 0.89)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keptRoundTrip(t, LadderCodec, tc.o, func(o LadderOutcome) []string {
				return describeRuns(o.Runs, func(r PointRun) any { return r.Point })
			})
		})
	}
}

func TestCachingCodec(t *testing.T) {
	a := ladder.Point{Level: level.None, Workers: 2, Impl: "naive", Placement: loader.Host, Pinned: true}
	d := ladder.Point{Level: level.Host, Workers: 2, Impl: "fast", Placement: loader.Device, Pinned: true}
	fast := ladder.Point{Level: level.Device, Workers: 2, Impl: "fast", Placement: loader.Host, Pinned: true}
	disk := func(c OnDiskCase, p ladder.Point, sps float64) OnDiskResult {
		r := pointRun("LadderOnDisk/"+c.Name(), p, sps)
		return OnDiskResult{Case: c, Point: p, Record: r.Record, StepsPerSec: sps}
	}
	full := OnDiskCase{Format: "jpeg", Layout: "files", RawSize: 64, PageCache: "warm", Content: "natural", Decoder: "turbojpeg"}
	o := CachingOutcome{
		Runs:   []CachingRun{{"a", pointRun("Ladder/step=a", a, 0.9)}, {"d", pointRun("Ladder/step=d", d, 3.2)}, {"a", pointRun("Ladder/step=a", a, 0.8)}},
		OnDisk: OnDiskOutcome{Runs: []OnDiskResult{disk(full.For(level.Device), fast, 3.4), disk(full, ladder.Point{Level: level.None, Workers: 2, Impl: "fast", Placement: loader.Host, Pinned: true}, 1.5)}},
		Yardstick: PeerLadderOutcome{LadderResult: peer.LadderResult{Measurements: []peer.LadderMeasurement{
			{Impl: peer.Torch, Level: level.Device, Workers: 2, Steps: 4, Batch: 256, StepsPerSec: 3.448},
			{Impl: peer.Torch, Level: level.None, Workers: 2, Steps: 4, Batch: 256, StepsPerSec: 0.813},
		}}},
	}
	keptRoundTrip(t, CachingCodec, o, func(o CachingOutcome) []string {
		out := describeRuns(o.Runs, func(r CachingRun) any { return []any{r.Step, r.Point} })
		out = append(out, describeRuns(o.OnDisk.Runs, func(r OnDiskResult) any { return []any{r.Case, r.Point, r.StepsPerSec} })...)
		return append(out, describeRuns(o.Yardstick.Measurements, func(m peer.LadderMeasurement) any { return m })...)
	})
	// A quick run's file, written before the yardstick, has no
	// PeerLadder record.
	o.Yardstick = PeerLadderOutcome{}
	keptRoundTrip(t, CachingCodec, o, func(o CachingOutcome) []string {
		return describeRuns(o.Runs, func(r CachingRun) any { return []any{r.Step, r.Point} })
	})
}

func TestRemoteCodec(t *testing.T) {
	p := func(l level.Level) ladder.Point {
		return ladder.Point{Level: l, Workers: 2, Impl: "fast", Placement: loader.Host, Pinned: true}
	}
	run := func(at RemoteRun, l level.Level, sps float64) RemoteRun {
		at.PointRun = pointRun(at.under(), p(l), sps)
		return at
	}
	ds := RemoteDataset{"jpeg", "shards-4MB-whole"}
	o := RemoteOutcome{Runs: []RemoteRun{
		run(RemoteRun{}, level.Device, 99),
		run(RemoteRun{Dataset: ds}, level.Local, 50),
		run(RemoteRun{Dataset: ds, Concurrency: 1}, level.None, 10),
		run(RemoteRun{Dataset: ds, RTT: 20 * time.Millisecond, Concurrency: 64}, level.None, 8),
		run(RemoteRun{Dataset: ds, Check: "a", Concurrency: 16}, level.None, 4),
	}}
	if got := string(o.Runs[2].Record.Name); !strings.HasPrefix(got, "BenchmarkRemote/format=jpeg/layout=shards-4MB-whole/rtt=0s/concurrency=1/level=none/") {
		t.Errorf("a grid point's record %s", got)
	}
	keptRoundTrip(t, RemoteCodec, o, func(o RemoteOutcome) []string {
		return describeRuns(o.Runs, func(r RemoteRun) any { return []any{r.Dataset, r.RTT, r.Check, r.Concurrency, r.Point} })
	})
}

// TestLadderCodecsReadTheCommittedFiles: every committed result file of
// the Ladder experiment alone (under results/ and notebooks/results/),
// 003's (notebooks/results and the reports' test data) and headspace
// remote's decode, and encode back to exactly their records.
func TestLadderCodecsReadTheCommittedFiles(t *testing.T) {
	check := func(path string, decode func([]*benchfmt.Result) ([]*benchfmt.Result, error)) {
		t.Helper()
		recs, err := resultfile.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decode(recs)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		if !slices.Equal(recordLines(back), recordLines(recs)) {
			t.Errorf("%s: its %d records decode and encode back as %d others", path, len(recs), len(back))
		}
	}
	ladders := 0
	for _, dir := range []string{"results", "notebooks/results"} {
		err := filepath.WalkDir(fromRoot(dir), func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || filepath.Ext(path) != ".txt" {
				return err
			}
			recs, err := resultfile.Read(path)
			if err != nil || len(recs) == 0 {
				return nil // not a result file
			}
			for _, r := range recs {
				// The Ladder experiment's records alone.
				if !strings.HasPrefix(string(r.Name), "Ladder/level=") {
					return nil
				}
			}
			ladders++
			check(path, func(recs []*benchfmt.Result) ([]*benchfmt.Result, error) {
				o, err := LadderCodec.Decode(recs)
				return LadderCodec.Encode(o), err
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if ladders < 10 {
		t.Errorf("%d committed files of the Ladder experiment, want the many under results/", ladders)
	}
	for _, path := range []string{"notebooks/results/003-caching-ladder.txt", "reproduce/testdata/results/003-caching-ladder.txt"} {
		check(fromRoot(path), func(recs []*benchfmt.Result) ([]*benchfmt.Result, error) {
			o, err := CachingCodec.Decode(recs)
			if err == nil && (len(o.Runs) == 0 || len(o.OnDisk.Runs) == 0) {
				err = fmt.Errorf("%d runs of the steps, %d of step (e)", len(o.Runs), len(o.OnDisk.Runs))
			}
			return CachingCodec.Encode(o), err
		})
	}
	check(fromRoot("notebooks/results/remote-remedies.txt"), func(recs []*benchfmt.Result) ([]*benchfmt.Result, error) {
		o, err := RemoteCodec.Decode(recs)
		return RemoteCodec.Encode(o), err
	})
}

// TestLadderCodecsRefuseOtherRecords: a file of another experiment, or
// a record whose name is not a point of the experiment's, does not
// decode; the error names the record and the codec's experiment.
func TestLadderCodecsRefuseOtherRecords(t *testing.T) {
	simRecs := SimCodec.Encode(SimOutcome{Runs: []SimRun{{Load: time.Second, Dist: "constant", Seed: 1, Batches: 3}}})
	none := ladder.Point{Level: level.None, Workers: 2, Impl: "fast", Placement: loader.Host, Pinned: true}
	ladderRecs := LadderCodec.Encode(LadderOutcome{Runs: []PointRun{pointRun("Ladder", none, 1)}})
	remoteRecs := RemoteCodec.Encode(RemoteOutcome{Runs: []RemoteRun{{PointRun: pointRun("Remote", ladder.Point{Level: level.Device, Workers: 2, Impl: "fast"}, 1)}}})
	const pt = "/workers=2/transforms=fast/placement=host/pinned=true"
	named := func(name string) []*benchfmt.Result { return single(name, "steps/s") }
	for _, tc := range []struct {
		codec string
		recs  []*benchfmt.Result
		want  string
	}{
		{"Ladder", throughFile(t, simRecs), "BenchmarkSim/load=1s/dist=constant/seed=1: not a record of Ladder (its benchmarks: Ladder)"},
		{"Ladder", throughFile(t, remoteRecs), "not a record of Ladder"},
		{"Ladder", named("BenchmarkLadder/step=a/level=none" + pt), "a record of Ladder with a part of its name more (/step=a)"},
		{"Ladder", named("BenchmarkLadder/level=none/script=train.py/workers=2"), "a record of Ladder without its key transforms"},
		{"Ladder", named("BenchmarkLadder/level=cold" + pt), "BenchmarkLadder/level=cold" + pt + ": "},
		{"Ladder", named("BenchmarkLadder/level=none/workers=two/transforms=fast"), `BenchmarkLadder/level=none/workers=two/transforms=fast: workers "two": want a count`},
		{"Ladder", nil, "no records of Ladder"},
		{"OnDisk", named("BenchmarkLadderOnDisk/raw=0/level=device" + pt), `BenchmarkLadderOnDisk/raw=0/level=device` + pt + `: raw "0": want a positive count`},
		{"Caching", throughFile(t, simRecs), "not a record of Caching (its benchmarks: Ladder, LadderOnDisk, PeerLadder)"},
		{"Caching", throughFile(t, ladderRecs), "a record of Caching without its key step"},
		{"Caching", throughFile(t, remoteRecs), "not a record of Caching"},
		{"Caching", named("BenchmarkLadderOnDisk/raw=64/level=encoded" + pt), "level encoded depends on"},
		{"OnDisk", throughFile(t, ladderRecs), "not a record of LadderOnDisk"},
		{"Remote", throughFile(t, ladderRecs), "BenchmarkLadder/level=none" + pt + procsSuffix() + ": not a record of Remote (its benchmarks: Remote)"},
		{"Remote", throughFile(t, simRecs), "not a record of Remote"},
		{"Remote", named("BenchmarkRemote/format=jpeg/layout=files/level=none" + pt), "not a point of Remote's grid"},
		{"Remote", named("BenchmarkRemote/format=jpeg/layout=files/rtt=0s/check=a/concurrency=1/level=none" + pt), "not a point of Remote's grid"},
		{"Remote", named("BenchmarkRemote/format=jpeg/level=local" + pt), "not a point of Remote's grid"},
		{"Remote", named("BenchmarkRemote/format=jpeg/layout=files/level=device" + pt), "not a point of Remote's grid"},
		{"Remote", named("BenchmarkRemote/format=jpeg/layout=files/rtt=fast/concurrency=1/level=none" + pt), `rtt "fast" is not a duration`},
		{"Remote", named("BenchmarkRemote/format=jpeg/layout=files/rtt=0s/concurrency=0/level=none" + pt), `concurrency "0": want a positive count`},
	} {
		err := decoders[tc.codec](tc.recs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s codec: decoding %d records: %v, want %q", tc.codec, len(tc.recs), err, tc.want)
		}
	}
}
