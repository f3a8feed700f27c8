package ladder

import (
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// Point is one point of a ladder sweep: every dimension that changes the
// result and is not recorded in the result file's configuration.
type Point struct {
	Level     level.Level
	Workers   int
	Impl      string // transform implementation
	Placement loader.Placement
	Pinned    bool // uploads from pinned host memory
}

// Name is the point's benchmark name without the "Benchmark" prefix and the
// GOMAXPROCS suffix, as `go test` would print the sub-benchmark:
// "Ladder/level=raw/workers=4/transforms=naive/placement=host/pinned=true".
func (p Point) Name() string {
	return fmt.Sprintf("Ladder/level=%s/workers=%d/transforms=%s/placement=%s/pinned=%v",
		p.Level, p.Workers, p.Impl, p.Placement, p.Pinned)
}

// Sub is the name's part after "Ladder/", the sub-benchmark's name in
// BenchmarkLadder.
func (p Point) Sub() string { return p.Name()[len("Ladder/"):] }

// BenchName is the full benchmark name as `go test -bench` prints it,
// GOMAXPROCS suffix included, so records from the CLI and from the Go
// benchmark group together in benchstat.
func (p Point) BenchName() string {
	return resultfile.BenchName(p.Name(), runtime.GOMAXPROCS(0))
}

// Points lists a sweep's points: implementations, then placements, pinning
// and worker counts, then levels from the device cache down to the full
// pipeline, so a table fills in the order it is read.
func Points(levels []level.Level, workers []int, impls []string, placements []loader.Placement, pinned []bool) []Point {
	var out []Point
	ordered := slices.Clone(levels)
	slices.SortFunc(ordered, func(a, b level.Level) int { return int(b) - int(a) })
	for _, impl := range impls {
		for _, pl := range placements {
			for _, pin := range pinned {
				for _, w := range workers {
					for _, l := range ordered {
						out = append(out, Point{Level: l, Workers: w, Impl: impl, Placement: pl, Pinned: pin})
					}
				}
			}
		}
	}
	return out
}

// Benchmark turns a run into one benchmark-format result, the one record
// every output path writes: ns/op per training step, steps/s, samples/s,
// au-% (accelerator utilisation), the step-time percentiles (step-p50-ns …
// step-max-ns: tail stalls), and, where the measured steps uploaded
// batches (every level but device), upload-B/op, the bytes copied per
// step; where the level loads or transforms, the mean load and transform
// time per sample (load-ns/sample, transform-ns/sample; from a dataset on
// disk, fetch-ns/sample and decode-ns/sample instead of load), and where it
// fetched, the read throughput read-MB/s (bytes fetched over the fetch
// stage's summed task time, 10⁶ bytes); failures, the samples skipped,
// where any were; the device's copy and conversion time per step
// (upload-ns/op, convert-ns/op) where it did either.
func (p Point) Benchmark(r train.Result) *benchfmt.Result {
	per := func(d float64, n int64) float64 {
		if n <= 0 {
			return 0
		}
		return d / float64(n)
	}
	res := &benchfmt.Result{
		Name:  benchfmt.Name(p.BenchName()),
		Iters: max(r.Steps, 1),
		Values: []benchfmt.Value{
			{Value: per(float64(r.Wall.Nanoseconds()), int64(r.Steps)), Unit: "ns/op"},
			{Value: r.StepsPerSec(), Unit: "steps/s"},
			{Value: r.SamplesPerSec(), Unit: "samples/s"},
			{Value: r.AU(), Unit: "au-%"},
		},
	}
	add := func(v float64, unit string) {
		if v > 0 {
			res.Values = append(res.Values, benchfmt.Value{Value: v, Unit: unit})
		}
	}
	s := r.StepSummary()
	add(float64(s.P50), "step-p50-ns")
	add(float64(s.P90), "step-p90-ns")
	add(float64(s.P99), "step-p99-ns")
	add(float64(s.Max), "step-max-ns")
	add(r.UploadBytesPerBatch(), "upload-B/op")
	ds := r.DeviceStats
	add(per(float64(ds.UploadTime), ds.Uploads), "upload-ns/op")
	add(per(float64(ds.ConvertTime), ds.Steps), "convert-ns/op")
	for _, st := range r.Pipeline.Stages {
		// Only where the stage does the work: a cached stage hands out its
		// sample in nanoseconds.
		name := level.Stage(st.Name)
		if slices.Contains(level.SampleStages, name) && p.Level.Runs(name) {
			add(per(float64(st.Total), st.Tasks), st.Name+"-ns/sample")
		}
		if name == level.Fetch && p.Level.Runs(level.Fetch) && st.Total > 0 {
			add(float64(r.Fetched)/1e6/st.Total.Seconds(), "read-MB/s")
		}
	}
	add(float64(r.Failures), "failures")
	if r.Copied > 0 && r.CopyTime > 0 {
		// Level local's first epoch: the copy of the bucket's objects to
		// local disk, made before the measured steps.
		add(float64(r.Copied)/1e6/r.CopyTime.Seconds(), "copy-MB/s")
	}
	if r.Requests > 0 && r.Samples > 0 {
		// Data from a bucket: what it cost in requests, and an epoch's
		// price at the table recorded in the file (cost.go).
		add(float64(r.Requests)/float64(r.Samples), "requests/sample")
		add(float64(r.Retries), "retries")
		add(float64(r.RequestMean), "req-mean-ns")
		add(float64(r.RequestP99), "req-p99-ns")
		add(bucket.S3Standard.Epoch(float64(r.Requests)/float64(r.Samples), float64(r.Fetched)/float64(r.Samples), int(r.EpochSamples)), "epoch-usd")
	}
	return res
}

// AddDisturbance adds to a run's record what disturbed it and what it
// cost in CPU (package disturb), over its measured steps: the CPU time
// per step (cpu-ns/op: user+sys, which does not count time spent waiting
// for a CPU; the companion of ns/op on CPU-bound points), the run-queue
// delay and the machine's CPU pressure as percentages of the wall time
// (run-delay-%, cpu-pressure-%), the cores the other processes used
// (other-cores: with the delay, what tells their disturbance from the
// point's own threads waiting for each other), the instructions per step where
// hardware counters exist (instructions/op), the times the point was
// repeated for being disturbed (reruns) and, when it stayed disturbed,
// disturbed 1. A counter that cannot be read is left out.
func AddDisturbance(b *benchfmt.Result, s disturb.Sample, steps, reruns int, disturbed bool) {
	if steps <= 0 {
		return
	}
	add := func(v float64, unit string) {
		b.Values = append(b.Values, benchfmt.Value{Value: v, Unit: unit})
	}
	if s.HasCPU && s.CPU > 0 {
		add(float64(s.CPU.Nanoseconds())/float64(steps), disturb.CPUUnit)
	}
	if s.HasRunDelay {
		add(100*s.DelayShare(), disturb.RunDelayUnit)
	}
	if s.HasPressure {
		add(100*s.PressureShare(), disturb.PressureUnit)
	}
	if s.HasOthers {
		add(s.OtherCores(), disturb.OtherCoresUnit)
	}
	if s.HasInstructions && s.Instructions > 0 {
		add(float64(s.Instructions)/float64(steps), disturb.InstructionsUnit)
	}
	if reruns > 0 {
		add(float64(reruns), disturb.RerunsUnit)
	}
	if disturbed {
		add(1, disturb.DisturbedUnit)
	}
}
