package node

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// The units of a node's records that are its own: AU as a fraction (the
// node's mean and its smallest rank's), the CPU cores the ranks kept
// busy, the CPU time per sample, the barrier's wait per step, bytes and
// requests per second from a dataset on disk or in a bucket, and 1 on a
// partial run (--partial). The other processes' cores are
// disturb.OtherCoresUnit, as every other experiment records them.
const (
	UnitAU        = "au"
	UnitAUMin     = "au-min"
	UnitCores     = "cpu-cores"
	UnitCPUSample = "cpu-ns/sample"
	UnitInputWait = "input-wait-ns/op"
	UnitBarrier   = "barrier-ns/op"
	UnitBytes     = "bytes/s"
	UnitRequests  = "requests/s"
	// UnitOtherThreads is the other processes' runnable threads, the
	// mean over the run (sampled).
	UnitOtherThreads = "other-threads"
	UnitPartial      = "partial"
	// UnitLinkUse is the node's bytes/s as a percentage of the emulated
	// link's bandwidth (--link), where there is one.
	UnitLinkUse = "link-use-%"
	// UnitStall is the longest step of a run where one stalled for less
	// than the barrier's timeout (Outcome.Stall), in ns; a run with no
	// stall does not record it.
	UnitStall = "stall-ns"
)

// Point is one point of a node sweep: N accelerators at one level.
type Point struct {
	Accelerators int
	Level        level.Level
}

// Name is the point's benchmark name without "Benchmark" and the
// GOMAXPROCS suffix: "Node/accelerators=4/level=none".
func (p Point) Name() string {
	return fmt.Sprintf("Node/accelerators=%d/level=%s", p.Accelerators, p.Level)
}

// RankName is the name of rank r's record of the point:
// "Node/accelerators=4/level=none/rank=2".
func (p Point) RankName(r int) string { return fmt.Sprintf("%s/rank=%d", p.Name(), r) }

// BenchName is the node record's full name, GOMAXPROCS suffix included.
func (p Point) BenchName() string { return resultfile.BenchName(p.Name(), runtime.GOMAXPROCS(0)) }

// Points lists a sweep's points: each accelerator count, then each level
// from the bound (host) down to the pipeline (none).
func Points(accelerators []int, levels []level.Level) []Point {
	ordered := slices.Clone(levels)
	slices.SortFunc(ordered, func(a, b level.Level) int { return int(b) - int(a) })
	var out []Point
	for _, n := range accelerators {
		for _, l := range ordered {
			out = append(out, Point{Accelerators: n, Level: l})
		}
	}
	return out
}

// Others is what the other processes did during a run: their CPU use in
// cores and their runnable threads, each negative where unknown.
type Others struct {
	Cores, Threads float64
}

// Records are a finished run's records: each rank's, then the node's,
// with what the other processes did during it and, where linkBandwidth
// (bytes/s) is positive, the share of the link the node's reads used.
func Records(p Point, o Outcome, others Others, linkBandwidth float64) []*benchfmt.Result {
	procs := runtime.GOMAXPROCS(0)
	var out []*benchfmt.Result
	t := nodeTotals{auMin: 1e9, hasCPU: true, hasDelay: true}
	for _, r := range o.Ranks {
		out = append(out, rankRecord(p, r, procs))
		t.add(r)
	}
	if len(o.Ranks) == 0 || t.wall <= 0 {
		return out
	}
	return append(out, t.record(p, o, others, linkBandwidth))
}

// rankRecord is rank r's record of a run of p.
func rankRecord(p Point, r RankResult, procs int) *benchfmt.Result {
	res := &benchfmt.Result{Name: benchfmt.Name(resultfile.BenchName(p.RankName(r.Rank), procs)), Iters: max(r.Steps, 1)}
	add := func(v float64, unit string) { res.Values = append(res.Values, benchfmt.Value{Value: v, Unit: unit}) }
	per := func(d time.Duration) float64 { return float64(d) / float64(max(r.Steps, 1)) }
	add(per(r.Wall), "ns/op")
	add(r.StepsPerSec(), "steps/s")
	add(r.StepsPerSec()*float64(r.Batch), "samples/s")
	add(r.AU(), UnitAU)
	add(per(r.InputWait), UnitInputWait)
	add(per(r.Barrier), UnitBarrier)
	if r.HasCPU {
		add(per(r.CPU), disturb.CPUUnit)
	}
	if r.HasRunDelay && r.Wall > 0 {
		add(100*r.RunDelay.Seconds()/r.Wall.Seconds(), disturb.RunDelayUnit)
	}
	if r.Fetched > 0 && r.Wall > 0 {
		add(float64(r.Fetched)/r.Wall.Seconds(), UnitBytes)
	}
	if r.Requests > 0 && r.Wall > 0 {
		add(float64(r.Requests)/r.Wall.Seconds(), UnitRequests)
	}
	return res
}

// nodeTotals are the ranks' results of a run summed for the node's
// record.
type nodeTotals struct {
	wall                        time.Duration
	samples, sps, auSum         float64
	auMin                       float64
	cpu, delay, sumWall, inWait time.Duration
	hasCPU, hasDelay            bool
	fetched, requests           int64
	steps                       int
}

// add adds rank r's result.
func (t *nodeTotals) add(r RankResult) {
	t.wall = max(t.wall, r.Wall)
	t.samples += float64(r.Steps * r.Batch)
	t.sps += r.StepsPerSec() * float64(r.Batch)
	t.auSum += r.AU()
	t.auMin = min(t.auMin, r.AU())
	t.cpu += r.CPU
	t.delay += r.RunDelay
	t.sumWall += r.Wall
	t.inWait += r.InputWait
	t.hasCPU = t.hasCPU && r.HasCPU
	t.hasDelay = t.hasDelay && r.HasRunDelay
	t.fetched += r.Fetched
	t.requests += r.Requests
	t.steps = max(t.steps, r.Steps)
}

// record is the node's record of a run of p by o's ranks (t.wall > 0).
func (t *nodeTotals) record(p Point, o Outcome, others Others, linkBandwidth float64) *benchfmt.Result {
	wall, steps, n := t.wall, t.steps, len(o.Ranks)
	res := &benchfmt.Result{Name: benchfmt.Name(p.BenchName()), Iters: max(steps, 1)}
	add := func(v float64, unit string) { res.Values = append(res.Values, benchfmt.Value{Value: v, Unit: unit}) }
	add(float64(wall)/float64(max(steps, 1)), "ns/op")
	add(float64(steps)/wall.Seconds(), "steps/s")
	add(t.sps, "samples/s")
	add(t.auSum/float64(n), UnitAU)
	add(t.auMin, UnitAUMin)
	add(float64(t.inWait)/float64(n*max(steps, 1)), UnitInputWait)
	if o.Released > 0 && o.Skew > 0 {
		// The pipe barrier's skew (the shared one does not time steps).
		add(float64(o.Skew)/float64(o.Released), UnitBarrier)
	}
	if t.hasCPU && t.cpu > 0 {
		add(t.cpu.Seconds()/wall.Seconds(), UnitCores)
		add(float64(t.cpu)/t.samples, UnitCPUSample)
	}
	if t.hasDelay && t.sumWall > 0 {
		add(100*t.delay.Seconds()/t.sumWall.Seconds(), disturb.RunDelayUnit)
	}
	if others.Cores >= 0 {
		add(others.Cores, disturb.OtherCoresUnit)
	}
	if others.Threads >= 0 {
		add(others.Threads, UnitOtherThreads)
	}
	if t.fetched > 0 {
		add(float64(t.fetched)/wall.Seconds(), UnitBytes)
		if linkBandwidth > 0 {
			add(100*float64(t.fetched)/wall.Seconds()/linkBandwidth, UnitLinkUse)
		}
	}
	if t.requests > 0 {
		add(float64(t.requests)/wall.Seconds(), UnitRequests)
	}
	if o.Stall > 0 {
		add(float64(o.Stall), UnitStall)
	}
	return res
}

// PartialRecord is the node's record of a run that failed (a rank died
// or hung), kept with --partial: the steps the barrier released over the
// time they took, and partial 1. It has no rank records.
func PartialRecord(p Point, o Outcome, batch int) *benchfmt.Result {
	res := &benchfmt.Result{Name: benchfmt.Name(p.BenchName()), Iters: max(o.Released, 1)}
	sps := 0.0
	if o.Elapsed > 0 {
		sps = float64(o.Released) / o.Elapsed.Seconds()
	}
	res.Values = []benchfmt.Value{
		{Value: sps, Unit: "steps/s"},
		{Value: sps * float64(batch*p.Accelerators), Unit: "samples/s"},
		{Value: 1, Unit: UnitPartial},
	}
	return res
}
