package whatif

import (
	"fmt"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/report"
	"io"
	"text/tabwriter"

	"github.com/headspace-bench/headspace/harness/ladder"
)

// LadderReading is a measured caching ladder read beside the model: the
// ladder's attribution of the measured levels, the model's prediction of
// the same levels from the profile, and the model's own blame.
type LadderReading struct {
	Measured  map[level.Level]float64 // median steps/s per level
	Predicted map[level.Level]float64 // Profile.Ladder at the profile's setting
	Ladder    ladder.Attribution      // ladder.Attribute(Measured)
	Model     string                  // Profile.Blame at the profile's setting
	Bound     Limit                   // the model's binding resource there
}

// ReadLadder sets a measured ladder beside the model's reading of p.
func (p Profile) ReadLadder(measured map[level.Level]float64) LadderReading {
	s := p.fill(Scenario{})
	return LadderReading{Measured: measured, Predicted: p.Ladder(s), Ladder: ladder.Attribute(measured), Model: p.Blame(s), Bound: p.Predict(s).Bound}
}

// Comparison is the reading as a Comparison of the measured ladder and
// the model.
func (r LadderReading) Comparison() Comparison {
	return Comparison{Ladder: r.Ladder, Model: r.Model, Bound: r.Bound}
}

// WriteLadder prints the measured and the predicted steps/s of every
// level, and the ladder's attribution beside the model's.
func WriteLadder(w io.Writer, r LadderReading) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  level\tmeasured\tpredicted\tstage it adds\n")
	for _, l := range level.Descending(level.Document) {
		fmt.Fprintf(tw, "  %s\t%.2f\t%.2f\t%s\n", l, r.Measured[l], r.Predicted[l], l.StageIn(level.Document))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "  measured ladder: %s\n  %s\n", r.Ladder, r.Comparison())
	return err
}

// WriteLadderMarkdown is WriteLadder as a Markdown section for a report
// (the 003 report's "the model's attribution beside the ladder's"), titled
// with the pipeline it read, e.g. "naive transforms".
func WriteLadderMarkdown(w io.Writer, title string, r LadderReading) error {
	t := report.NewTable("llrr", "level", "stage it adds", "measured steps/s", "predicted by the model")
	for _, l := range level.Descending(level.Document) {
		t.Add(l.String(), fmt.Sprint(l.StageIn(level.Document)), fmt.Sprintf("%.2f", r.Measured[l]), fmt.Sprintf("%.2f", r.Predicted[l]))
	}
	fmt.Fprintf(w, "### The ladder and the model: %s\n\n%s", title, t)
	c := r.Comparison()
	fmt.Fprintf(w, "\nThe measured ladder blames **%s** (%s); the model, reading the stages' CPU time, blames **%s**", c.LadderBlames(), r.Ladder, c.Model)
	if c.Agree() {
		_, err := fmt.Fprintf(w, ": they agree.\n\n")
		return err
	}
	_, err := fmt.Fprintf(w, ": %s.\n\n", c.Reason())
	return err
}
