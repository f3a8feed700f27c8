package workloads

import (
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
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/sim"
)

// throughFile is recs written to a result file and read back, as a
// report reads them (benchfmt tidies ns/op to sec/op on the way).
func throughFile(t *testing.T, recs []*benchfmt.Result) []*benchfmt.Result {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.txt")
	if _, err := driver.Write(driver.Output{Path: path}, []resultfile.Config{{Key: "document", Value: "test"}}, recs, false); err != nil {
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
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, HeadspaceCodec, tc.o) })
	}
}

// TestCodecsRefuseOtherRecords: a file of another experiment, or a
// record whose name lacks a key or has one more, does not decode, and
// the error names the record and the codec's experiment.
func TestCodecsRefuseOtherRecords(t *testing.T) {
	simRecs := SimCodec.Encode(SimOutcome{Runs: []SimRun{{Load: time.Second, Dist: sim.Constant, Seed: 1, Batches: 3}}})
	loaderRecs := LoadersCodec.Encode(LoadersOutcome{Measurements: []loadbench.Measurement{{Point: loadbench.Point{Mode: loadbench.Goroutine, Workers: 1}, Batches: 2}}})
	headRecs := HeadspaceCodec.Encode(HeadspaceOutcome{Analyses: []HeadspaceAnalysis{{Transforms: "naive", Report: analysis.Report{StepTimes: []time.Duration{1, 2}, Switch: 1}}}})
	decodeRecs := CUDADecodeCodec.Encode(CUDADecodeOutcome{Decoder: DecodeNvjpeg, Batch: 4, Setup: CUDADecodeSetup{Width: 5, Height: 3}, Rates: []float64{10, 20}})
	checkRecs := CUDACheckCodec.Encode(CUDACheckOutcome{Copies: []CUDACopy{{HostToDevice: true, Pinned: true, Bytes: 1 << 20, GBps: 20}}, Batch: 2, Side: 32,
		Steps: []CUDANetStep{{Precision: "fp32", Times: []time.Duration{1}}}})
	nodeRecs := node.Records(node.Point{Accelerators: 1, Level: level.None}, node.Outcome{Ranks: nodeRanks()[:1]}, node.Others{Cores: -1, Threads: -1}, 0)
	named := func(name string) []*benchfmt.Result {
		return []*benchfmt.Result{{Name: benchfmt.Name(name), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: "batches"}, {Value: 1, Unit: "model-idle-%"}, {Value: 1, Unit: "queue"}}}}
	}
	decode := map[string]func([]*benchfmt.Result) error{
		"Sim":        func(r []*benchfmt.Result) error { _, err := SimCodec.Decode(r); return err },
		"Loaders":    func(r []*benchfmt.Result) error { _, err := LoadersCodec.Decode(r); return err },
		"Headspace":  func(r []*benchfmt.Result) error { _, err := HeadspaceCodec.Decode(r); return err },
		"Node":       func(r []*benchfmt.Result) error { _, err := NodeCodec.Decode(r); return err },
		"CUDADecode": func(r []*benchfmt.Result) error { _, err := CUDADecodeCodec.Decode(r); return err },
		"CUDA":       func(r []*benchfmt.Result) error { _, err := CUDACheckCodec.Decode(r); return err },
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
		{"Sim", named("BenchmarkSim/load=1s/seed=1"), "BenchmarkSim/load=1s/seed=1: a record of Sim without its key dist"},
		{"Sim", named("BenchmarkSim/load=1s/dist=constant/seed=1/workers=2"), "a record of Sim with a part of its name more (/workers=2)"},
		{"Headspace", named("BenchmarkHeadspace/transforms=naive/phase=fill/stage=load"), "BenchmarkHeadspace/transforms=naive/phase=fill/stage=load: a record of Headspace with a key stage its Headspace records do not have"},
		{"Sim", named("BenchmarkSim/load=1s/dist=constant/seed=1/x=2"), "a record of Sim with a part of its name more (/x=2)"},
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
		{"CUDA", single("BenchmarkCUDAStep/batch=2/side=32", "GB/s"), "BenchmarkCUDAStep/batch=2/side=32: no value in step-ns"},
		{"CUDA", single("BenchmarkCUDAStep/batch=2/side=32/seed=1", "step-ns"), "a record of CUDA with a part of its name more (/seed=1)"},
		{"CUDA", named("BenchmarkCUDAStep/batch=2/side=32"), "BenchmarkCUDAStep/batch=2/side=32: 1 iterations and 3 values, want 1 and 1"},
		{"CUDA", append(slices.Clone(checkRecs[1:]), checkRecs[0]), "BenchmarkCUDACopy/dir=htod/pinned=true/size=1MiB: a copy after the Net's steps"},
		{"CUDA", withValue(checkRecs[:1], "ns/op"), "1 iterations and 2 values"},
	} {
		err := decode[tc.codec](tc.recs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s codec: decoding %d records: %v, want %q", tc.codec, len(tc.recs), err, tc.want)
		}
	}
}

// TestCodecsOwnTheirBenchmarks checks that no two registered experiments
// write records of one benchmark: each typed experiment's codec writes
// only benchmarks named after it (its name, or its name and more), of its
// name, and none that another experiment writes or is named.
func TestCodecsOwnTheirBenchmarks(t *testing.T) {
	owner := map[string]string{}
	for _, r := range Registry {
		e := r.Experiment()
		if o, ok := owner[e.Name()]; ok {
			t.Errorf("benchmark %s: written by %s and %s", e.Name(), o, e.Name())
		}
		owner[e.Name()] = e.Name()
	}
	typed := 0
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
			t.Errorf("%s's codec writes %v, not its own benchmark", e.Name(), c.benchmarks)
		}
		for _, b := range c.benchmarks {
			if !strings.HasPrefix(b, e.Name()) {
				t.Errorf("%s's codec writes %s, not named after it", e.Name(), b)
			}
			if o, ok := owner[b]; ok && o != e.Name() {
				t.Errorf("benchmark %s: written by %s and %s", b, o, e.Name())
			}
			owner[b] = e.Name()
		}
	}
	if typed != 6 {
		t.Errorf("%d typed experiments registered, want Sim, Loaders, Headspace, Node, CUDACheck and CUDADecode", typed)
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
	experiment string
	benchmarks []string
}

// codecOf is e's codec, if e is Typed: its Codec method's value.
func codecOf(e Experiment) (codec, bool) {
	m := reflect.ValueOf(e).MethodByName("Codec")
	if !m.IsValid() {
		return codec{}, false
	}
	c := m.Call(nil)[0]
	return codec{experiment: c.FieldByName("Experiment").String(), benchmarks: c.MethodByName("Benchmarks").Call(nil)[0].Interface().([]string)}, true
}
