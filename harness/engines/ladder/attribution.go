package ladder

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/headspace-bench/headspace/harness/blocks/level"
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
}

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
			a.Drops = append(a.Drops, Drop{Level: l, Above: above, Fraction: 1 - v/med[above]})
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

// Significant lists the drops of at least Significant, from the top down.
func (a Attribution) Significant() []Drop {
	var out []Drop
	for _, d := range a.Drops {
		if d.Fraction >= Significant {
			out = append(out, d)
		}
	}
	return out
}

// String says what bounds throughput, in one line.
func (a Attribution) String() string {
	if a.Bottleneck == nil {
		return fmt.Sprintf("no stage costs %.0f%% or more — the model step bounds throughput", 100*Significant)
	}
	return fmt.Sprintf("%s (%.0f%% of throughput lost when it is added)", a.Bottleneck.Stages(), 100*a.Bottleneck.Fraction)
}

// Group is the median steps/s of one setting's levels, for a table.
type Group struct {
	Title  string                  // the setting, e.g. "transforms=naive workers=2 placement=host pinned=true"
	Median map[level.Level]float64 // median steps/s per level
	Runs   map[level.Level]int     // runs per level
}

// WriteTable prints, per group, the median steps/s of each level, its
// ratio to the device level, the document's ratio (documented: the
// document's steps/s per level; nil for none), the drop from the level
// above with the stages it is attributed to, and the bottleneck.
func WriteTable(w io.Writer, groups []Group, documented map[level.Level]float64) error {
	for _, g := range groups {
		fmt.Fprintln(w, g.Title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  level\tsteps/s\truns\tvs device\tdocument\tdrop from the level above\n")
		a := Attribute(g.Median)
		drops := map[level.Level]Drop{}
		for _, d := range a.Drops {
			drops[d.Level] = d
		}
		dev, hasDev := g.Median[level.Device]
		for l := level.Device; l >= level.None; l-- {
			v, ok := g.Median[l]
			if !ok {
				continue
			}
			ratio, doc, drop := "-", "-", ""
			if hasDev && dev > 0 {
				ratio = fmt.Sprintf("%.2f", v/dev)
			}
			if documented[level.Device] > 0 && documented[l] > 0 {
				doc = fmt.Sprintf("%.2f", documented[l]/documented[level.Device])
			}
			if d, ok := drops[l]; ok {
				drop = fmt.Sprintf("%+.0f%% %s", -100*d.Fraction, d.Stages())
			}
			fmt.Fprintf(tw, "  %s\t%.3f\t%d\t%s\t%s\t%s\n", l, v, g.Runs[l], ratio, doc, drop)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(g.Median) > 1 {
			fmt.Fprintf(w, "  bottleneck: %s\n", a)
		}
		fmt.Fprintln(w)
	}
	return nil
}
