package ladder

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"golang.org/x/perf/benchmath"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Significant is the smallest share of throughput a stage must cost before
// the ladder blames it: drops below it are within the run-to-run noise of
// a shared machine, and the model step is taken to bound throughput.
const Significant = 0.05

// Drop is the throughput lost between a measured level and the nearest
// measured level above it: the cost of the stages the lower level adds.
type Drop struct {
	Level, Above level.Level
	// Fraction is 1 − steps/s at Level ÷ steps/s at Above; negative when
	// the lower level was faster (noise).
	Fraction float64
	// Noise says the drop is within the run-to-run noise: the two levels'
	// runs do not differ by the Mann–Whitney U test at NoiseAlpha
	// (benchstat's "~"), too few runs to tell included. P is the test's
	// p-value. Both are set by AttributeRuns only (Attribute knows only
	// medians: P is NaN, Noise false).
	Noise bool
	P     float64
}

// NoiseAlpha is the significance level below which two levels' runs
// differ: benchstat's default.
const NoiseAlpha = 0.05

// Stages names the stages that Level runs and Above does not
// (level.Between), e.g. "transforms" or "raw data loading + transforms"
// when a level between them was not measured.
func (d Drop) Stages() string { return level.Between(d.Level, d.Above) }

// Attribution is the ladder's reading of one sweep's medians: the drop at
// every measured level and the bottleneck. It is the one rule the table,
// the reports and the analysis use.
type Attribution struct {
	Drops []Drop // from the top of the ladder down, one per measured level below the highest
	// Bottleneck is the largest drop if it is at least Significant; nil
	// when no stage costs that much: the model step bounds throughput.
	Bottleneck *Drop
	// Tested says the drops were tested against the noise (AttributeRuns).
	Tested bool
}

// Attribute reads the median steps/s of the measured levels.
func Attribute(med map[level.Level]float64) Attribution {
	var a Attribution
	above := level.Level(-1)
	for l := level.Device; l >= level.None; l-- {
		v, ok := med[l]
		if !ok {
			continue
		}
		if above >= 0 && med[above] > 0 {
			a.Drops = append(a.Drops, Drop{Level: l, Above: above, Fraction: 1 - v/med[above], P: math.NaN()})
		}
		above = l
	}
	for i := range a.Drops {
		d := &a.Drops[i]
		if d.Fraction >= Significant && (a.Bottleneck == nil || d.Fraction > a.Bottleneck.Fraction) {
			a.Bottleneck = d
		}
	}
	return a
}

// AttributeRuns is Attribute from every run's steps/s at each level: the
// medians by package summary, and each drop tested against the noise
// (Drop.Noise, Drop.P). A drop within the noise is never the bottleneck,
// however large its medians make it.
func AttributeRuns(runs map[level.Level][]float64) Attribution {
	med := map[level.Level]float64{}
	for l, vs := range runs {
		if len(vs) > 0 {
			med[l] = summary.Median(vs)
		}
	}
	a := Attribute(med)
	a.Bottleneck, a.Tested = nil, true
	for i := range a.Drops {
		d := &a.Drops[i]
		d.P = uTest(runs[d.Level], runs[d.Above])
		d.Noise = !(d.P < NoiseAlpha)
		if !d.Noise && d.Fraction >= Significant && (a.Bottleneck == nil || d.Fraction > a.Bottleneck.Fraction) {
			a.Bottleneck = d
		}
	}
	return a
}

// uTest is the Mann–Whitney U test's p-value of two levels' runs
// (benchmath.AssumeNothing, as benchstat and the gate): 1 when either
// has no run.
func uTest(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 1
	}
	thr := benchmath.DefaultThresholds
	c := benchmath.AssumeNothing.Compare(benchmath.NewSample(a, &thr), benchmath.NewSample(b, &thr))
	return c.P
}

// Significant lists the drops of at least Significant, from the top down
// (beyond the noise, where AttributeRuns tested them).
func (a Attribution) Significant() []Drop {
	var out []Drop
	for _, d := range a.Drops {
		if d.Fraction >= Significant && !d.Noise {
			out = append(out, d)
		}
	}
	return out
}

// String says what bounds throughput, in one line.
func (a Attribution) String() string {
	if a.Bottleneck == nil && a.Tested {
		return fmt.Sprintf("no stage costs %.0f%% or more beyond the noise — the model step bounds throughput", 100*Significant)
	}
	if a.Bottleneck == nil {
		return fmt.Sprintf("no stage costs %.0f%% or more — the model step bounds throughput", 100*Significant)
	}
	return fmt.Sprintf("%s (%.0f%% of throughput lost when it is added)", a.Bottleneck.Stages(), 100*a.Bottleneck.Fraction)
}

// Group is the steps/s of one setting's levels, for a table.
type Group struct {
	Title  string                  // the setting, e.g. "transforms=naive workers=2 placement=host pinned=true"
	Median map[level.Level]float64 // median steps/s per level
	Runs   map[level.Level]int     // runs per level
	// Samples are every run's steps/s per level: with them the table
	// shows each level's spread and tests each drop against the noise
	// (AttributeRuns); nil when only the medians are known.
	Samples map[level.Level][]float64
	// Disturbed counts the runs per level that stayed disturbed after
	// their reruns (the result file's "disturbed" metric).
	Disturbed map[level.Level]int
}

// WriteTable prints, per group, the median steps/s of each level, its
// spread (with Samples: ± the 95% interval of the median, relative, as
// benchstat shows it), its runs (and how many stayed disturbed, marked
// with *), its ratio to the device level, the document's ratio
// (documented: the document's steps/s per level; nil for none), the drop
// from the level above with the stages it is attributed to and, with
// Samples, the U test's p: "~" for a drop within the noise, as benchstat
// writes it. A level that adds work cannot speed the loop up: a lower
// level faster beyond the noise is flagged. Then the bottleneck.
func WriteTable(w io.Writer, groups []Group, documented map[level.Level]float64) error {
	for _, g := range groups {
		fmt.Fprintln(w, g.Title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  level\tsteps/s\t±\truns\tvs device\tdocument\tdrop from the level above\n")
		a := Attribute(g.Median)
		if g.Samples != nil {
			a = AttributeRuns(g.Samples)
		}
		drops := map[level.Level]Drop{}
		for _, d := range a.Drops {
			drops[d.Level] = d
		}
		dev, hasDev := g.Median[level.Device]
		disturbed, faster := false, false
		for l := level.Device; l >= level.None; l-- {
			v, ok := g.Median[l]
			if !ok {
				continue
			}
			ratio, doc, drop, spread, runs := "-", "-", "", "-", fmt.Sprint(g.Runs[l])
			if hasDev && dev > 0 {
				ratio = fmt.Sprintf("%.2f", v/dev)
			}
			if documented[level.Device] > 0 && documented[l] > 0 {
				doc = fmt.Sprintf("%.2f", documented[l]/documented[level.Device])
			}
			if vs := g.Samples[l]; len(vs) > 0 {
				spread = spreadOf(vs)
			}
			if n := g.Disturbed[l]; n > 0 {
				runs = fmt.Sprintf("%d (%d disturbed*)", g.Runs[l], n)
				disturbed = true
			}
			if d, ok := drops[l]; ok {
				var up bool
				drop, up = dropCell(d)
				faster = faster || up
			}
			fmt.Fprintf(tw, "  %s\t%.3f\t%s\t%s\t%s\t%s\t%s\n", l, v, spread, runs, ratio, doc, drop)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(g.Median) > 1 {
			fmt.Fprintf(w, "  bottleneck: %s\n", a)
		}
		if faster {
			fmt.Fprintln(w, "  ! faster than the level above beyond the noise: a level that adds work cannot speed the loop up, so the machine changed between the runs; rerun")
		}
		if disturbed {
			fmt.Fprintln(w, "  * runs that stayed disturbed after their reruns (other processes took the CPU): their steps/s wait on them")
		}
		fmt.Fprintln(w)
	}
	return nil
}

// dropCell is the table's cell for the drop d from the level above:
// its size, the stages it is attributed to and the U test's p ("~" for
// a drop within the noise). faster says the level is faster than the
// one above beyond the noise (the cell is flagged with "!").
func dropCell(d Drop) (cell string, faster bool) {
	switch {
	case d.Noise:
		return fmt.Sprintf("~ %s (p=%.2f)", d.Stages(), d.P), false
	case math.IsNaN(d.P):
		return fmt.Sprintf("%+.0f%% %s", -100*d.Fraction, d.Stages()), false
	case d.Fraction < 0:
		return fmt.Sprintf("%+.0f%% %s (p=%.3f)!", -100*d.Fraction, d.Stages(), d.P), true
	}
	return fmt.Sprintf("%+.0f%% %s (p=%.3f)", -100*d.Fraction, d.Stages(), d.P), false
}

// spreadOf is the spread of a level's runs as benchstat shows it: ± the
// larger side of the median's 95% interval, relative to the median
// (summary.Summary.HalfWidth); "±∞" with too few runs for an interval.
func spreadOf(vs []float64) string {
	h := summary.Of(vs).HalfWidth()
	if math.IsInf(h, 0) || math.IsNaN(h) {
		return "±∞"
	}
	return fmt.Sprintf("±%.0f%%", 100*h)
}
