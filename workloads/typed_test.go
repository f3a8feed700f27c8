package workloads

import (
	"context"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/sim"
	"github.com/headspace-bench/headspace/harness/whatif"
)

// throughFile is recs written to a result file and read back, as a
// report reads them (benchfmt tidies ns/op to sec/op on the way).
func throughFile(t *testing.T, recs []*benchfmt.Result) []*benchfmt.Result {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.txt")
	job := driver.Job{Settings: func() []resultfile.Config { return []resultfile.Config{{Key: "document", Value: "test"}} },
		Measure: func(context.Context, *driver.Hooks) ([]*benchfmt.Result, error) { return recs, nil }}
	if _, err := driver.Run(context.Background(), job, driver.Output{Path: path}); err != nil {
		t.Fatal(err)
	}
	back, err := resultfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// roundTrip checks that c decodes what it encodes from want, in memory
// and through a result file, giving want back.
func roundTrip[R any](t *testing.T, c Codec[R], want R) {
	t.Helper()
	recs := c.Encode(want)
	for _, via := range []struct {
		name string
		recs []*benchfmt.Result
	}{{"in memory", recs}, {"through a file", throughFile(t, recs)}} {
		got, err := c.Decode(via.recs)
		if err != nil {
			t.Fatalf("%s: %v", via.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", via.name, got, want)
		}
	}
}

// TestSimCodec: a Sim's outcome, encoded then decoded, is itself (but
// for each run's Result, which the records do not hold).
func TestSimCodec(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    SimOutcome
	}{
		{"one run", SimOutcome{Runs: []SimRun{{Load: 2 * time.Second, Dist: sim.Constant, Seed: 1, Batches: 98, IdlePercent: 67.33333333333333, Queue: 0.98}}}},
		{"seeds and distributions", SimOutcome{Runs: []SimRun{
			{Load: 700 * time.Millisecond, Dist: sim.Normal, Seed: 1, Batches: 275, IdlePercent: 8.1, Queue: 2.9330759478333333},
			{Load: 700 * time.Millisecond, Dist: sim.Normal, Seed: 2, Batches: 270, IdlePercent: 10, Queue: 3},
			{Load: 350*time.Millisecond + 1, Dist: sim.Constant, Seed: 18446744073709551615, Batches: 0, IdlePercent: 0, Queue: 0},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, SimCodec, tc.o) })
	}
	// What Measure returns encodes as Run's records, and decodes as itself
	// without the simulations' results.
	s := QuickSim()
	s.Cases = s.Cases[:1]
	o, err := s.Measure(t.Context(), Env{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := s.Run(t.Context(), Env{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(SimCodec.Encode(o), recs) {
		t.Errorf("Measure's outcome encodes as\n%v\nRun's records are\n%v", SimCodec.Encode(o), recs)
	}
	for i := range o.Runs {
		if o.Runs[i].Result == nil || o.Runs[i].Result.Batches != o.Runs[i].Batches {
			t.Fatalf("run %d: result %+v, want the simulation's", i, o.Runs[i].Result)
		}
		o.Runs[i].Result = nil
	}
	roundTrip(t, SimCodec, o)
}

// TestLoadersCodec: a Loaders' outcome, encoded then decoded, is itself
// (but for each measurement's Samples, which the records do not hold).
func TestLoadersCodec(t *testing.T) {
	m := func(mode string, w int, ttfb time.Duration, sps float64, rss int64, cpu time.Duration) loadbench.Measurement {
		return loadbench.Measurement{Point: loadbench.Point{Mode: mode, Workers: w}, Batches: 3, TTFB: ttfb, SamplesPerSec: sps, PeakRSS: rss, CPU: cpu}
	}
	for _, tc := range []struct {
		name string
		o    LoadersOutcome
	}{
		{"sweep alone", LoadersOutcome{Measurements: []loadbench.Measurement{
			m(loadbench.Goroutine, 1, 370836, 149114.63187325257, 25354240, 485*time.Microsecond),
			m(loadbench.Process, 32, 12718329, 111211.51039132552, 48918528, 13926*time.Microsecond+7),
		}}},
		{"no peak RSS", LoadersOutcome{Measurements: []loadbench.Measurement{m(loadbench.Goroutine, 2, time.Second, 1, -1, 3*time.Hour+1)}}},
		{"with training", LoadersOutcome{
			Measurements: []loadbench.Measurement{m(loadbench.Goroutine, 1, 1, 2, 3, 4), m(loadbench.Goroutine, 1, 5, 6, 7, 8)},
			Training:     []LoadersTraining{{Mode: loadbench.Goroutine, Workers: 4, Steps: 10, StepsPerSec: 41.5}, {Mode: loadbench.Process, Workers: 4, Steps: 1, StepsPerSec: 0.25}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, LoadersCodec, tc.o) })
	}
}

// TestHeadspaceCodec: a Headspace's outcome, encoded then decoded, is
// itself, where its reports hold what the records do (HeadspaceAnalysis).
func TestHeadspaceCodec(t *testing.T) {
	rep := func(sw int, steps ...time.Duration) analysis.Report {
		return analysis.Report{StepTimes: steps, Switch: sw, Verdict: analysis.Verdict{Wait: 3 * time.Millisecond, Wall: 40 * time.Millisecond},
			Stats: pipeline.Stats{
				Stages: []pipeline.StageStats{{Name: "load", Workers: 4, Tasks: 120, Total: 2 * time.Second, Average: 16666666}, {Name: "transform", Workers: 4, Tasks: 120, Total: time.Second, Average: 8333333}},
				Queues: []pipeline.QueueStats{{Name: "load", Occupancy: 0.25}, {Name: "transform", Occupancy: 1}},
			}}
	}
	for _, tc := range []struct {
		name string
		o    HeadspaceOutcome
	}{
		{"one analysis", HeadspaceOutcome{Analyses: []HeadspaceAnalysis{{Transforms: "naive", Report: rep(3, 10, 20, 30, 40, 5, 6)}}}},
		{"two analyses", HeadspaceOutcome{Analyses: []HeadspaceAnalysis{
			{Transforms: "naive", Report: rep(2, 1041545, 27817555, 13272258, 900)},
			{Transforms: "fast", Report: rep(1, 7, 8)},
		}}},
		{"no switch reached", HeadspaceOutcome{Analyses: []HeadspaceAnalysis{{Transforms: "fast", Report: rep(3, 1, 2, 3)}}}},
		// Every statistic of a stage and its queue, which analyze's report
		// and --stats-json print from the records read back.
		{"whole statistics", HeadspaceOutcome{Analyses: []HeadspaceAnalysis{{Transforms: "naive", Report: analysis.Report{StepTimes: []time.Duration{4, 5, 6}, Switch: 1,
			Stats: pipeline.Stats{
				Stages: []pipeline.StageStats{{Name: "batch", Workers: 1, Tasks: 10, Failures: 2, Total: 3462001, CPU: 41, Average: 346200, P50: 1300, P90: 1601, P99: 3540017}},
				Queues: []pipeline.QueueStats{{Name: "batch", Capacity: 2, Items: 5, Elapsed: 5096285, AvgPutWait: 691544, AvgGetWait: 65560, Occupancy: 0.9140624984670206}},
			}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, HeadspaceCodec, tc.o) })
	}
}

// TestPeerCodec: a Peer's outcome, encoded then decoded, is itself (but
// for the peer's configuration lines, which are the file's, not its
// records').
func TestPeerCodec(t *testing.T) {
	m := func(impl string, w, batches int, ttfb time.Duration, sps float64, cpu time.Duration) peer.Measurement {
		return peer.Measurement{Impl: impl, Workers: w, Batches: batches, TTFB: ttfb, SamplesPerSec: sps, CPU: cpu}
	}
	for _, tc := range []struct {
		name string
		r    peer.Result
	}{
		{"one run", peer.Result{Measurements: []peer.Measurement{m(peer.Torch, 1, 6, 5550082544, 51.21, 30686*time.Millisecond)}}},
		{"rounds of every implementation", peer.Result{Measurements: []peer.Measurement{
			m(peer.Naive, 1, 6, 1528186885, 139.5453232323143, 11269521*time.Microsecond),
			m(peer.Fast, 1, 6, 314451291, 1026.960658566892, 2498352*time.Microsecond),
			m(peer.Torch, 2, 3, 200000000, 0.5, 1500*time.Millisecond),
			m(peer.Fast, 32, 2, 1, 0, 0),
			m(peer.Naive, 1, 6, 3*time.Hour+1, 1e-9, 13926*time.Microsecond+7),
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, PeerCodec, PeerOutcome{Result: tc.r}) })
	}
	// What the sweep returns encodes as Run's records, in the same order.
	p := QuickPeer(PeerPython, PeerScript)
	p.Config.Impls = []string{peer.Naive, peer.Fast}
	var each []peer.Measurement
	r, err := p.MeasureEach(t.Context(), Env{}, func(m peer.Measurement) { each = append(each, m) })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Measurements) != 2 || !reflect.DeepEqual(each, r.Measurements) {
		t.Fatalf("MeasureEach passed %v, returned %v: want its 2 runs, each passed as made", each, r.Measurements)
	}
	var streamed []*benchfmt.Result
	recs, err := p.Run(t.Context(), Env{Result: func(rec *benchfmt.Result) error { streamed = append(streamed, rec); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || !reflect.DeepEqual(recs, streamed) {
		t.Fatalf("Run returned %d records, passed %d to env.Result; want 2, the same", len(recs), len(streamed))
	}
	for i, rec := range PeerCodec.Encode(PeerOutcome{Result: r}) {
		if rec.Name.String() != recs[i].Name.String() || len(rec.Values) != len(recs[i].Values) {
			t.Errorf("record %d: Measure's outcome encodes as %v, Run's is %v", i, rec, recs[i])
		}
	}
	roundTrip(t, PeerCodec, PeerOutcome{Result: peer.Result{Measurements: r.Measurements}})
}

// TestPeerLadderCodec: a PeerLadder's outcome, encoded then decoded, is
// itself (but for its calibration and the script's configuration lines,
// which are the file's, not its records'); a run's batch is read back
// from samples/s over steps/s.
func TestPeerLadderCodec(t *testing.T) {
	m := func(impl string, l level.Level, w, steps, batch int, sps float64) peer.LadderMeasurement {
		return peer.LadderMeasurement{Impl: impl, Level: l, Workers: w, Steps: steps, Batch: batch, StepsPerSec: sps}
	}
	for _, tc := range []struct {
		name string
		o    PeerLadderOutcome
	}{
		{"one run", PeerLadderOutcome{LadderResult: peer.LadderResult{Measurements: []peer.LadderMeasurement{m(peer.Torch, level.None, 2, 4, 256, 0.813)}}}},
		{"the script alone, every level", PeerLadderOutcome{LadderResult: peer.LadderResult{Measurements: []peer.LadderMeasurement{
			m(peer.Torch, level.Device, 2, 4, 256, 3.448), m(peer.Torch, level.Host, 2, 4, 256, 3.423), m(peer.Torch, level.Sample, 2, 4, 256, 3.34),
			m(peer.Torch, level.Raw, 2, 4, 256, 0.783), m(peer.Torch, level.None, 2, 4, 256, 0.813),
		}}}},
		{"every implementation", PeerLadderOutcome{LadderResult: peer.LadderResult{Measurements: []peer.LadderMeasurement{
			m(peer.Naive, level.Device, 16, 8, 4, 33.33333333333333), m(peer.Fast, level.Device, 16, 8, 4, 1e-7), m(peer.Torch, level.None, 0, 1, 1, 2),
			m(peer.Fast, level.Raw, 1, 1, 65536, 123456.789), m(peer.Naive, level.None, 1, 2, 0, 0),
		}}}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, PeerLadderCodec, tc.o) })
	}
}

// TestCodecsRefuseOtherRecords: a file of another experiment, or a
// record whose name lacks a key or has one more, does not decode, and
// the error names the record and the codec's experiment.
func TestCodecsRefuseOtherRecords(t *testing.T) {
	simRecs := SimCodec.Encode(SimOutcome{Runs: []SimRun{{Load: time.Second, Dist: sim.Constant, Seed: 1, Batches: 3}}})
	loaderRecs := LoadersCodec.Encode(LoadersOutcome{Measurements: []loadbench.Measurement{{Point: loadbench.Point{Mode: loadbench.Goroutine, Workers: 1}, Batches: 2}}})
	peerRecs := PeerCodec.Encode(PeerOutcome{Result: peer.Result{Measurements: []peer.Measurement{{Impl: peer.Torch, Workers: 2, Batches: 3}}}})
	ladderRecs := PeerLadderCodec.Encode(PeerLadderOutcome{LadderResult: peer.LadderResult{Measurements: []peer.LadderMeasurement{{Impl: peer.Torch, Level: level.Raw, Workers: 2, Steps: 4, Batch: 8, StepsPerSec: 1}}}})
	headRecs := HeadspaceCodec.Encode(HeadspaceOutcome{Analyses: []HeadspaceAnalysis{{Transforms: "naive", Report: analysis.Report{StepTimes: []time.Duration{1, 2}, Switch: 1}}}})
	decodeRecs := CUDADecodeCodec.Encode(CUDADecodeOutcome{Decoder: DecodeNvjpeg, Batch: 4, Setup: CUDADecodeSetup{Width: 5, Height: 3}, Rates: []float64{10, 20}})
	checkRecs := CUDACheckCodec.Encode(CUDACheckOutcome{Copies: []CUDACopy{{HostToDevice: true, Pinned: true, Bytes: 1 << 20, GBps: 20}}, Batch: 2, Side: 32,
		Steps: []CUDANetStep{{Precision: "fp32", Times: []time.Duration{1}}}})
	nodeRecs := node.Records(node.Point{Accelerators: 1, Level: level.None}, node.Outcome{Ranks: nodeRanks()[:1]}, node.Others{Cores: -1, Threads: -1}, 0)
	whatIfChecks := []whatif.Check{{Predicted: whatif.Prediction{Scenario: whatif.Scenario{Cores: 1, Workers: 1, StepScale: 2}, StepsPerSec: 5}, Runs: []float64{4, 6}, Neighbours: []float64{-1, 0}},
		{Predicted: whatif.Prediction{Scenario: whatif.Scenario{Cores: 1, Workers: 2, StepScale: 2}, StepsPerSec: 9}, Runs: []float64{8}, Neighbours: []float64{1}}}
	whatIfRecs := WhatIfCodec.Encode(WhatIfOutcome{Profiling: []whatif.Profile{{Cores: 2, Workers: 2, Measured: 3, Stages: []whatif.Stage{{Name: "load", CPU: 5}}}}, Checks: whatIfChecks, Steps: 12})
	noCPUSample := withValue(nodeRecs, node.UnitLinkUse)
	noCPUSample[len(noCPUSample)-1].Values = slices.DeleteFunc(slices.Clone(nodeRecs[len(nodeRecs)-1].Values), func(v benchfmt.Value) bool { return v.Unit == node.UnitCPUSample })
	zeroLink := withValue(nodeRecs, node.UnitLinkUse)
	zeroLink[len(zeroLink)-1].Values[len(zeroLink[len(zeroLink)-1].Values)-1].Value = 0
	named := func(name string) []*benchfmt.Result {
		return []*benchfmt.Result{{Name: benchfmt.Name(name), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: "batches"}, {Value: 1, Unit: "model-idle-%"}, {Value: 1, Unit: "queue"}}}}
	}
	for _, tc := range []struct {
		codec string
		recs  []*benchfmt.Result
		want  string
	}{
		{"Sim", throughFile(t, loaderRecs), "BenchmarkLoaders/mode=goroutine/workers=1: not a record of Sim (its benchmarks: Sim)"},
		{"Sim", headRecs, "BenchmarkHeadspace/transforms=naive/phase=fill: not a record of Sim"},
		{"Loaders", throughFile(t, simRecs), "BenchmarkSim/load=1s/dist=constant/seed=1: not a record of Loaders (its benchmarks: Loaders, LoadersTraining)"},
		{"Headspace", simRecs, "not a record of Headspace (its benchmarks: Headspace, HeadspaceInput, HeadspaceStage)"},
		{"Headspace", loaderRecs, "not a record of Headspace"},
		{"Sim", nil, "no records of Sim"},
		{"Peer", throughFile(t, loaderRecs), "BenchmarkLoaders/mode=goroutine/workers=1: not a record of Peer (its benchmarks: Peer)"},
		{"Peer", simRecs, "not a record of Peer"},
		{"Loaders", throughFile(t, peerRecs), "BenchmarkPeer/impl=torch/workers=2: not a record of Loaders"},
		{"Peer", named("BenchmarkPeer/impl=torch"), "BenchmarkPeer/impl=torch: a record of Peer without its key workers"},
		{"Peer", named("BenchmarkPeer/impl=torch/workers=2/level=none"), "BenchmarkPeer/impl=torch/workers=2/level=none: a record of Peer with a part of its name more (/level=none)"},
		{"Peer", named("BenchmarkPeer/impl=torch/workers=two"), `BenchmarkPeer/impl=torch/workers=two: workers "two": want a positive count`},
		{"Loaders", append(LoadersCodec.Encode(LoadersOutcome{Training: []LoadersTraining{{Mode: loadbench.Goroutine, Workers: 1, Steps: 2, StepsPerSec: 3}}}), loaderRecs...),
			"BenchmarkLoaders/mode=goroutine/workers=1: a record of Loaders out of the order a run makes its records in (Loaders, LoadersTraining)"},
		{"Loaders", named("BenchmarkLoaders/mode=goroutine/workers=1e3"), `BenchmarkLoaders/mode=goroutine/workers=1e3: workers "1e3": want a count`},
		{"Node", named("BenchmarkNode/accelerators=0/level=none"), `BenchmarkNode/accelerators=0/level=none: accelerators "0": want a positive count`},
		{"Peer", named("BenchmarkPeer/impl=torch/workers=2/workers=3"), "BenchmarkPeer/impl=torch/workers=2/workers=3: a record of Peer with its key workers twice"},
		{"Peer", named("BenchmarkPeer/impl=torch/impl=fast/workers=2"), "a record of Peer with its key impl twice"},
		{"Peer", named("BenchmarkPeer/impl=jax/workers=2"), `BenchmarkPeer/impl=jax/workers=2: unknown impl "jax" (want one of naive, fast, torch)`},
		{"PeerLadder", named("BenchmarkPeerLadder/impl=jax/level=raw/workers=2"), `unknown impl "jax" (want one of torch, naive, fast)`},
		{"PeerLadder", named("BenchmarkPeerLadder/impl=torch/level=raw/level=none/workers=2"), "a record of PeerLadder with its key level twice"},
		{"Sim", named("BenchmarkSim/load=1s/dist=constant/seed=1/seed=2"), "a record of Sim with its key seed twice"},
		{"Peer", named("BenchmarkPeer/impl=torch/workers=2"), "BenchmarkPeer/impl=torch/workers=2: no value in ttfb-ns"},
		{"Peer", throughFile(t, ladderRecs), "BenchmarkPeerLadder/impl=torch/level=raw/workers=2: not a record of Peer (its benchmarks: Peer)"},
		{"PeerLadder", throughFile(t, peerRecs), "BenchmarkPeer/impl=torch/workers=2: not a record of PeerLadder (its benchmarks: PeerLadder)"},
		{"PeerLadder", throughFile(t, loaderRecs), "not a record of PeerLadder"},
		{"Sim", ladderRecs, "BenchmarkPeerLadder/impl=torch/level=raw/workers=2: not a record of Sim"},
		{"PeerLadder", nil, "no records of PeerLadder"},
		{"PeerLadder", named("BenchmarkPeerLadder/impl=torch/workers=2"), "BenchmarkPeerLadder/impl=torch/workers=2: a record of PeerLadder without its key level"},
		{"PeerLadder", named("BenchmarkPeerLadder/impl=torch/level=raw/workers=2/step=a"), "a record of PeerLadder with a part of its name more (/step=a)"},
		{"PeerLadder", named("BenchmarkPeerLadder/impl=torch/level=disk/workers=2"), "BenchmarkPeerLadder/impl=torch/level=disk/workers=2: "},
		{"PeerLadder", named("BenchmarkPeerLadder/impl=torch/level=raw/workers=2"), "BenchmarkPeerLadder/impl=torch/level=raw/workers=2: no value in steps/s"},
		{"Sim", named("BenchmarkSim/load=1s/seed=1"), "BenchmarkSim/load=1s/seed=1: a record of Sim without its key dist"},
		{"Sim", named("BenchmarkSim/load=1s/dist=constant/seed=1/workers=2"), "a record of Sim with a part of its name more (/workers=2)"},
		{"Headspace", named("BenchmarkHeadspace/transforms=naive/phase=fill/stage=load"), "BenchmarkHeadspace/transforms=naive/phase=fill/stage=load: a record of Headspace with a key stage its Headspace records do not have"},
		{"Sim", named("BenchmarkSim/load=1s/dist=constant/seed=1/x=2"), "a record of Sim with a part of its name more (/x=2)"},
		{"OnDisk", throughFile(t, simRecs), "BenchmarkSim/load=1s/dist=constant/seed=1: not a record of LadderOnDisk (its benchmarks: LadderOnDisk)"},
		{"OnDisk", named("BenchmarkLadderOnDisk/raw=64/workers=2/transforms=fast-2"), "a record of LadderOnDisk without its key level"},
		{"OnDisk", named("BenchmarkLadderOnDisk/raw=64/level=encoded/workers=2/transforms=fast-2"), "level encoded depends on"},
		{"OnDisk", named("BenchmarkLadderOnDisk/raw=64/level=device/workers=2/transforms=fast-2"), "no value in steps/s"},
		{"Sim", named("BenchmarkSim/load=1s/dist=constant/seed=1-4"), "a record of Sim with a part of its name more (-4)"},
		{"Sim", named("BenchmarkSim/load=fast/dist=constant/seed=1"), "BenchmarkSim/load=fast/dist=constant/seed=1: load:"},
		{"Sim", named("BenchmarkSimulation/load=1s/dist=constant/seed=1"), "not a record of Sim"},
		{"Headspace", named("BenchmarkHeadspace/script=train/phase=fill"), "BenchmarkHeadspace/script=train/phase=fill: a record of Headspace without its key transforms"},
		{"Node", throughFile(t, simRecs), "BenchmarkSim/load=1s/dist=constant/seed=1: not a record of Node (its benchmarks: Node, NodeTorch)"},
		{"Node", loaderRecs, "not a record of Node"},
		{"Sim", throughFile(t, nodeRecs), "/rank=0" + procsSuffix() + ": not a record of Sim"},
		{"Node", named("BenchmarkNode/accelerators=1/rank=0-2"), "BenchmarkNode/accelerators=1/rank=0-2: a record of Node without its key level"},
		{"Node", named("BenchmarkNode/accelerators=1/level=none/rank=1-2"), "BenchmarkNode/accelerators=1/level=none/rank=1-2: rank 1, want rank 0 of its run"},
		{"Node", named("BenchmarkNode/accelerators=1/level=none/step=3-2"), "a record of Node with a part of its name more (/step=3)"},
		{"Node", named("BenchmarkNode/accelerators=1/level=none-2"), "BenchmarkNode/accelerators=1/level=none-2: no value in steps/s"},
		{"Node", noCPUSample, node.UnitCores + " without " + node.UnitCPUSample},
		{"Node", zeroLink, node.UnitLinkUse + " 0, which a Node record leaves out"},
		{"Node", []*benchfmt.Result{{Name: benchfmt.Name("BenchmarkNode/accelerators=1/level=none/rank=0-2"), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: "steps/s"}, {Value: 1, Unit: "samples/s"}, {Value: 1, Unit: node.UnitPartial}}}},
			"BenchmarkNode/accelerators=1/level=none/rank=0-2: a rank's record marked partial"},
		{"Node", []*benchfmt.Result{{Name: benchfmt.Name("BenchmarkNode/accelerators=1/level=none-2"), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: "steps/s"}, {Value: 1, Unit: "samples/s"}, {Value: 2, Unit: node.UnitPartial}}}},
			"BenchmarkNode/accelerators=1/level=none-2: partial 2, want 1"},
		{"Node", withValue(nodeRecs, "model-idle-%"), "a value in model-idle-%, which a Node record does not hold"},
		{"Node", named("BenchmarkNode/accelerators=1/level=cold-2"), "BenchmarkNode/accelerators=1/level=cold-2: level:"},
		{"Node", named("BenchmarkNode/accelerators=1/level=none-x"), `level: unknown level "none-x"`},
		{"CUDADecode", throughFile(t, nodeRecs), "not a record of CUDADecode (its benchmarks: CUDADecode)"},
		{"Node", decodeRecs, "BenchmarkCUDADecode/decoder=nvjpeg/batch=4/size=5x3: not a record of Node"},
		{"CUDADecode", named("BenchmarkCUDADecode/decoder=nvjpeg/size=5x3"), "a record of CUDADecode without its key batch"},
		{"CUDADecode", named("BenchmarkCUDADecode/decoder=nvjpeg/batch=4/size=5"), `size "5": want WxH`},
		{"CUDADecode", named("BenchmarkCUDADecode/decoder=nvjpeg/batch=1/size=5x3"), "no value in images/s"},
		{"CUDADecode", append(slices.Clone(decodeRecs), CUDADecodeCodec.Encode(CUDADecodeOutcome{Decoder: DecodeTurbo, Batch: 4, Setup: CUDADecodeSetup{Width: 5, Height: 3}, Rates: []float64{1}})...),
			"BenchmarkCUDADecode/decoder=turbojpeg/batch=4/size=5x3: a record of another decode than the first's (decoder=nvjpeg/batch=4/size=5x3)"},
		{"CUDADecode", withValue(decodeRecs, "ns/op"), "2 values, want images/s alone"},
		{"CUDA", throughFile(t, decodeRecs), "BenchmarkCUDADecode/decoder=nvjpeg/batch=4/size=5x3: not a record of CUDA (its benchmarks: CUDACopy, CUDAStep)"},
		{"CUDADecode", checkRecs, "BenchmarkCUDACopy/dir=htod/pinned=true/size=1MiB: not a record of CUDADecode"},
		{"Node", checkRecs, "not a record of Node"},
		{"CUDA", named("BenchmarkCUDACopy/dir=htod/size=1MiB"), "a record of CUDA without its key pinned"},
		{"CUDA", single("BenchmarkCUDACopy/dir=up/pinned=true/size=1MiB", "GB/s"), `dir "up": want htod or dtoh`},
		{"CUDA", single("BenchmarkCUDACopy/dir=htod/pinned=yes/size=1MiB", "GB/s"), `pinned "yes": want true or false`},
		{"CUDA", single("BenchmarkCUDACopy/dir=htod/pinned=true/size=1GiB", "GB/s"), `size "1GiB": want a positive number of MiB`},
		{"CUDA", single("BenchmarkCUDAStep/batch=2/side=32/graphs=false", "step-ns"), `graphs "false": want true, or no graphs=`},
		{"CUDA", single("BenchmarkCUDAStep/batch=2/side=32/precision=fp32", "step-ns"), "precision=fp32, which its name leaves out"},
		{"CUDA", single("BenchmarkCUDAStep/batch=2/side=32/backend=kernels", "step-ns"), "backend=kernels, which its name leaves out"},
		{"CUDA", single("BenchmarkCUDAStep/batch=2/side=32/backend=gpu", "step-ns"), `backend "gpu": want cudnn, or no backend= for the kernels`},
		{"CUDA", single("BenchmarkCUDAStep/batch=2/side=32", "GB/s"), "BenchmarkCUDAStep/batch=2/side=32: no value in step-ns"},
		{"CUDA", single("BenchmarkCUDAStep/batch=2/side=32/seed=1", "step-ns"), "a record of CUDA with a part of its name more (/seed=1)"},
		{"CUDA", named("BenchmarkCUDAStep/batch=2/side=32"), "BenchmarkCUDAStep/batch=2/side=32: 1 iterations and 3 values, want 1 and 1"},
		{"CUDA", append(slices.Clone(checkRecs[1:]), checkRecs[0]), "BenchmarkCUDACopy/dir=htod/pinned=true/size=1MiB: a record of CUDA out of the order a run makes its records in (CUDACopy, CUDAStep)"},
		{"CUDA", withValue(checkRecs[:1], "ns/op"), "1 iterations and 2 values"},
		{"WhatIf", throughFile(t, simRecs), "BenchmarkSim/load=1s/dist=constant/seed=1: not a record of WhatIf (its benchmarks: Ladder, WhatIf/check, WhatIf/profile)"},
		{"Sim", throughFile(t, whatIfRecs), "BenchmarkWhatIf/profile/cores=2/workers=2-2: not a record of Sim"},
		{"OnDisk", whatIfRecs, "not a record of LadderOnDisk"},
		{"WhatIf", throughFile(t, nodeRecs), "not a record of WhatIf"},
		{"WhatIf", named("BenchmarkWhatIf/model/script=train.py"), "BenchmarkWhatIf/model/script=train.py: not a record of WhatIf"},
		{"WhatIf", named("BenchmarkWhatIf/check/script=train.py/workers=2"), "a record of WhatIf without its key cores"},
		{"WhatIf", named("BenchmarkWhatIf/cores=1/workers=2"), "BenchmarkWhatIf/cores=1/workers=2: not a record of WhatIf"},
		{"WhatIf", single("BenchmarkWhatIf/profile/cores=2/workers=2/x=1-2", "steps/s"), "a record of WhatIf with a part of its name more (/x=1)"},
		{"WhatIf", single("BenchmarkWhatIf/profile/cores=2/workers=2", "steps/s"), "BenchmarkWhatIf/profile/cores=2/workers=2: GOMAXPROCS 1, not its cores"},
		{"WhatIf", single("BenchmarkWhatIf/profile/cores=two/workers=2", "steps/s"), `BenchmarkWhatIf/profile/cores=two/workers=2: cores "two": want a positive count`},
		{"WhatIf", withValue(single("BenchmarkWhatIf/profile/cores=1/workers=2", "steps/s"), "queue"), "a value in queue, which a profiling record does not hold"},
		{"WhatIf", single("BenchmarkWhatIf/check/cores=1/workers=1/step=0.5", "steps/s"), `step "0.5": want x and a multiplier`},
		{"WhatIf", single("BenchmarkWhatIf/check/cores=1/workers=1/step=x0.50", "steps/s"), `step "x0.50": want x and a multiplier`},
		{"WhatIf", single("BenchmarkWhatIf/check/cores=1/workers=1/step=x2", "steps/s"), "no value in predicted-steps/s"},
		{"WhatIf", single("BenchmarkLadder/level=cold/workers=2/transforms=naive/placement=host/pinned=true", "steps/s"), "BenchmarkLadder/level=cold/workers=2/transforms=naive/placement=host/pinned=true: unknown level \"cold\""},
		{"WhatIf", single("BenchmarkLadder/level=raw/workers=2/transforms=naive", "steps/s"), "a record of WhatIf without its key pinned"},
		{"WhatIf", append(slices.Clone(whatIfRecs[1:]), whatIfRecs[0]), "BenchmarkWhatIf/profile/cores=2/workers=2-2: a record of WhatIf out of the order a run makes its records in (WhatIf/profile, Ladder, WhatIf/check)"},
		{"WhatIf", []*benchfmt.Result{whatIfRecs[1], whatIfRecs[3], whatIfRecs[2]}, "BenchmarkWhatIf/check/cores=1/workers=2/step=x2: out of the order a run checks its points in"},
		{"WhatIf", withValue(whatIfRecs, "ns/op"), "BenchmarkWhatIf/check/cores=1/workers=1/step=x2: 4 values, want steps/s, predicted-steps/s and other-cores"},
		{"WhatIf", []*benchfmt.Result{whatIfRecs[1], whatIfRecs[2], {Name: whatIfRecs[1].Name, Iters: 12, Values: []benchfmt.Value{{Value: 6, Unit: "steps/s"}, {Value: 5.5, Unit: "predicted-steps/s"}}}},
			"BenchmarkWhatIf/check/cores=1/workers=1/step=x2: predicted 5.5 steps/s, its first run 5"},
		{"WhatIf", []*benchfmt.Result{whatIfRecs[1], {Name: whatIfRecs[2].Name, Iters: 3, Values: whatIfRecs[2].Values}}, "BenchmarkWhatIf/check/cores=1/workers=2/step=x2: 3 steps, the checks before 12"},
	} {
		err := decoders[tc.codec](tc.recs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s codec: decoding %d records: %v, want %q", tc.codec, len(tc.recs), err, tc.want)
		}
	}
}

// TestCodecsOwnTheirBenchmarks checks that no two registered experiments
// write records of one benchmark: each typed experiment's codec writes
// only benchmarks named after it (its name, or its name and more), of its
// name, and none that another experiment writes or is named, but those
// it borrows, which another experiment is named; and a composite
// (Caching), whose codec writes none named after it, writes only its
// parts' benchmarks: those of other experiments of its document.
func TestCodecsOwnTheirBenchmarks(t *testing.T) {
	owner := map[string]Experiment{}
	for _, r := range Registry {
		e := r.Experiment()
		if o, ok := owner[e.Name()]; ok {
			t.Errorf("benchmark %s: written by %s and %s", e.Name(), o.Name(), e.Name())
		}
		owner[e.Name()] = e
	}
	typed := 0
	composites := map[string]codec{} // by name
	for _, r := range Registry {
		e := r.Experiment()
		c, ok := codecOf(e)
		if !ok {
			continue
		}
		typed++
		if c.experiment != e.Name() {
			t.Errorf("%s's codec says it is %s's", e.Name(), c.experiment)
		}
		if !strings.Contains(strings.Join(c.benchmarks, ","), e.Name()) {
			composites[e.Name()] = c
			continue
		}
		for _, b := range c.benchmarks {
			if slices.Contains(c.borrowed, b) {
				if o, ok := owner[b]; !ok || o.Name() == e.Name() {
					t.Errorf("%s's codec borrows %s, which no other experiment is named", e.Name(), b)
				}
				continue
			}
			if !strings.HasPrefix(b, e.Name()) {
				t.Errorf("%s's codec writes %s, not named after it", e.Name(), b)
			}
			if o, ok := owner[b]; ok && o.Name() != e.Name() {
				t.Errorf("benchmark %s: written by %s and %s", b, o.Name(), e.Name())
			}
			owner[b] = e
		}
	}
	for name, c := range composites {
		e := owner[name]
		for _, b := range c.benchmarks {
			if o, ok := owner[b]; !ok || o.Document() != e.Document() || o.Name() == name {
				t.Errorf("%s's codec writes %s, neither named after it nor a part's of its document", name, b)
			}
		}
	}
	if typed != len(Registry) || len(composites) != 1 {
		t.Errorf("%d typed experiments of %d registered, %d composite; want every one typed, Caching composite", typed, len(Registry), len(composites))
	}
}

// single is a record named name of one iteration and one value in unit.
func single(name, unit string) []*benchfmt.Result {
	return []*benchfmt.Result{{Name: benchfmt.Name(name), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: unit}}}}
}

// withValue is recs with a value more in unit on the last.
func withValue(recs []*benchfmt.Result, unit string) []*benchfmt.Result {
	out := slices.Clone(recs)
	last := *out[len(out)-1]
	last.Values = append(slices.Clone(last.Values), benchfmt.Value{Value: 1, Unit: unit})
	out[len(out)-1] = &last
	return out
}

// procsSuffix is a record's GOMAXPROCS suffix in this process ("" at 1).
func procsSuffix() string {
	return strings.TrimPrefix(resultfile.BenchName("", runtime.GOMAXPROCS(0)), "Benchmark")
}

// codec is a Codec without its type.
type codec struct {
	experiment           string
	benchmarks, borrowed []string
}

// codecOf is e's codec, if e is Typed: its Codec method's value.
func codecOf(e Experiment) (codec, bool) {
	m := reflect.ValueOf(e).MethodByName("Codec")
	if !m.IsValid() {
		return codec{}, false
	}
	c := m.Call(nil)[0]
	return codec{experiment: c.FieldByName("Experiment").String(), benchmarks: c.MethodByName("Benchmarks").Call(nil)[0].Interface().([]string),
		borrowed: c.FieldByName("Borrowed").Interface().([]string)}, true
}

// decoders decode records with each codec, by the name the refusal
// tests give it, keeping only the error.
var decoders = map[string]func([]*benchfmt.Result) error{
	"Sim":        func(r []*benchfmt.Result) error { _, err := SimCodec.Decode(r); return err },
	"Loaders":    func(r []*benchfmt.Result) error { _, err := LoadersCodec.Decode(r); return err },
	"Headspace":  func(r []*benchfmt.Result) error { _, err := HeadspaceCodec.Decode(r); return err },
	"Node":       func(r []*benchfmt.Result) error { _, err := NodeCodec.Decode(r); return err },
	"CUDADecode": func(r []*benchfmt.Result) error { _, err := CUDADecodeCodec.Decode(r); return err },
	"CUDA":       func(r []*benchfmt.Result) error { _, err := CUDACheckCodec.Decode(r); return err },
	"Peer":       func(r []*benchfmt.Result) error { _, err := PeerCodec.Decode(r); return err },
	"PeerLadder": func(r []*benchfmt.Result) error { _, err := PeerLadderCodec.Decode(r); return err },
	"OnDisk":     func(r []*benchfmt.Result) error { _, err := OnDiskCodec.Decode(r); return err },
	"WhatIf":     func(r []*benchfmt.Result) error { _, err := WhatIfCodec.Decode(r); return err },
	"Ladder":     func(r []*benchfmt.Result) error { _, err := LadderCodec.Decode(r); return err },
	"Caching":    func(r []*benchfmt.Result) error { _, err := CachingCodec.Decode(r); return err },
	"Remote":     func(r []*benchfmt.Result) error { _, err := RemoteCodec.Decode(r); return err },
}

// TestLoadersReport: headspace loaders' report of an outcome with
// training runs gives each run's steps/s after the loaders' table.
func TestLoadersReport(t *testing.T) {
	o := LoadersOutcome{
		Measurements: []loadbench.Measurement{{Point: loadbench.Point{Mode: loadbench.Goroutine, Workers: 1}, Batches: 3, TTFB: time.Millisecond, SamplesPerSec: 100, PeakRSS: 1 << 20, CPU: time.Second}},
		Training:     []LoadersTraining{{Mode: loadbench.Goroutine, Workers: 2, Steps: 10, StepsPerSec: 3.25}, {Mode: loadbench.Process, Workers: 2, Steps: 10, StepsPerSec: 1.5}},
	}
	var b strings.Builder
	if err := new(Loaders).Report(o, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"goroutine        1        1.0        100", "training fed by the goroutine loader, 2 workers: 3.250 steps/s\ntraining fed by the process loader, 2 workers: 1.500 steps/s\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
}
