package ladder

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/montanaflynn/stats"
	"golang.org/x/perf/benchfmt"
)

// Point is one point of a ladder sweep.
type Point struct {
	Level   Level
	Workers int
	Impl    string // transform implementation
	// Transfer is Config.Transfer: "float32" or empty (the default), or
	// "uint8".
	Transfer string
}

// Name is the point's benchmark name without the "Benchmark" prefix and the
// GOMAXPROCS suffix, as `go test` would print the sub-benchmark:
// "Ladder/level=raw/workers=4/transforms=naive". A uint8 transfer adds
// "/transfer=uint8"; the default float32 adds nothing, so results recorded
// before there was a choice keep their names.
func (p Point) Name() string {
	name := fmt.Sprintf("Ladder/level=%s/workers=%d/transforms=%s", p.Level, p.Workers, p.Impl)
	if p.Transfer != "" && p.Transfer != "float32" {
		name += "/transfer=" + p.Transfer
	}
	return name
}

// BenchName is the full benchmark name as `go test -bench` prints it,
// GOMAXPROCS suffix included, so records from the CLI and from the Go
// benchmark group together in benchstat.
func (p Point) BenchName() string {
	name := "Benchmark" + p.Name()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		name += fmt.Sprintf("-%d", n)
	}
	return name
}

// Points lists the sweep's points: implementations, then worker counts,
// then levels from the device cache down to the full pipeline, so a table
// fills in the order it is read.
func Points(levels []Level, workers []int, impls []string) []Point {
	var out []Point
	ordered := slices.Clone(levels)
	slices.SortFunc(ordered, func(a, b Level) int { return int(b) - int(a) })
	for _, impl := range impls {
		for _, w := range workers {
			for _, l := range ordered {
				out = append(out, Point{Level: l, Workers: w, Impl: impl})
			}
		}
	}
	return out
}

// Benchmark turns a run into one benchmark-format result: ns/op per
// training step, steps/s, samples/s, au-% (accelerator utilisation) and,
// where the measured steps uploaded batches (every level but device),
// upload-B/op, the bytes copied to the device per step.
func (r Result) Benchmark(p Point) *benchfmt.Result {
	nsPerStep := 0.0
	if r.Steps > 0 {
		nsPerStep = float64(r.Wall.Nanoseconds()) / float64(r.Steps)
	}
	res := &benchfmt.Result{
		Name:  benchfmt.Name(p.BenchName()),
		Iters: r.Steps,
		Values: []benchfmt.Value{
			{Value: nsPerStep, Unit: "ns/op"},
			{Value: r.StepsPerSec(), Unit: "steps/s"},
			{Value: r.SamplesPerSec(), Unit: "samples/s"},
			{Value: r.AU(), Unit: "au-%"},
		},
	}
	if b := r.UploadBytesPerBatch(); b > 0 {
		res.Values = append(res.Values, benchfmt.Value{Value: b, Unit: "upload-B/op"})
	}
	return res
}

// Documented is the document's table (A10G, PyTorch 2.6, 4 workers,
// naive transforms): steps/s at each level.
var Documented = map[Level]float64{Device: 3.45, Host: 3.33, Sample: 3.23, Raw: 1.72, None: 0.89}

// Measurement is one steps/s sample of a point.
type Measurement struct {
	Point       Point
	StepsPerSec float64
}

// WriteTable prints, per implementation and worker count, the median
// steps/s of each level, its ratio to the device level, the document's
// ratio, and the stage that each drop between adjacent levels is
// attributed to; the largest drop is marked as the bottleneck.
func WriteTable(w io.Writer, ms []Measurement) error {
	type key struct {
		impl     string
		workers  int
		transfer string
	}
	groups := map[key]map[Level][]float64{}
	var keys []key
	for _, m := range ms {
		k := key{m.Point.Impl, m.Point.Workers, m.Point.Transfer}
		if k.transfer == "float32" {
			k.transfer = ""
		}
		if groups[k] == nil {
			groups[k] = map[Level][]float64{}
			keys = append(keys, k)
		}
		groups[k][m.Point.Level] = append(groups[k][m.Point.Level], m.StepsPerSec)
	}
	for _, k := range keys {
		g := groups[k]
		med := map[Level]float64{}
		for l, v := range g {
			m, err := stats.Median(v)
			if err != nil {
				return err
			}
			med[l] = m
		}
		fmt.Fprintf(w, "transforms=%s workers=%d", k.impl, k.workers)
		if k.transfer != "" {
			fmt.Fprintf(w, " transfer=%s", k.transfer)
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  level\tsteps/s\truns\tvs device\tdocument\tdrop from the level above\n")
		dev, hasDev := med[Device]
		worst, worstLevel := 0.0, Level(-1)
		aboveLevel := Level(-1)
		for l := Device; l >= None; l-- {
			v, ok := med[l]
			if !ok {
				continue
			}
			ratio := "-"
			if hasDev && dev > 0 {
				ratio = fmt.Sprintf("%.2f", v/dev)
			}
			doc := fmt.Sprintf("%.2f", Documented[l]/Documented[Device])
			drop := ""
			if aboveLevel >= 0 && med[aboveLevel] > 0 {
				d := 1 - v/med[aboveLevel]
				drop = fmt.Sprintf("%+.0f%% %s", -100*d, stagesBetween(l, aboveLevel))
				if d > worst {
					worst, worstLevel = d, l
				}
			}
			aboveLevel = l
			fmt.Fprintf(tw, "  %s\t%.3f\t%d\t%s\t%s\t%s\n", l, v, len(g[l]), ratio, doc, drop)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if worstLevel >= 0 && worst > 0.05 {
			fmt.Fprintf(w, "  bottleneck: %s (%.0f%% of throughput lost when it is added)\n", stagesBetween(worstLevel, aboveOf(med, worstLevel)), 100*worst)
		} else if len(med) > 1 {
			fmt.Fprintf(w, "  bottleneck: no stage costs more than 5%% — the model step bounds throughput\n")
		}
		fmt.Fprintln(w)
	}
	return nil
}

// stagesBetween names the stages that level lo runs and level hi does not.
func stagesBetween(lo, hi Level) string {
	var names []string
	for l := lo; l < hi; l++ {
		names = append(names, l.Stage())
	}
	return strings.Join(names, " + ")
}

// aboveOf is the nearest level above l that has a measurement.
func aboveOf(med map[Level]float64, l Level) Level {
	for a := l + 1; a <= Device; a++ {
		if _, ok := med[a]; ok {
			return a
		}
	}
	return l + 1
}

// Summary is the step-time summary of a run.
type Summary struct {
	Median, P90, P99, Mean time.Duration
}

// StepSummary summarises step times with montanaflynn/stats (pinned at
// v0.7.1: its Percentile uses the nearest-rank method there).
func StepSummary(ts []time.Duration) Summary {
	if len(ts) == 0 {
		return Summary{}
	}
	f := make(stats.Float64Data, len(ts))
	for i, t := range ts {
		f[i] = float64(t)
	}
	d := func(v float64, err error) time.Duration {
		if err != nil || math.IsNaN(v) {
			return 0
		}
		return time.Duration(v)
	}
	return Summary{
		Median: d(f.Median()),
		P90:    d(f.Percentile(90)),
		P99:    d(f.Percentile(99)),
		Mean:   d(f.Mean()),
	}
}
