package gate

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteText writes a paired session's report for people: how it ran, a
// table with a row per benchmark and unit (median ratio head/base, its
// bootstrap interval, the rounds used and left out, the verdict; verdict
// metrics marked "*"), then the confirmed slowdowns, the metrics to
// rerun, and a closing PASS, FAIL or RERUN line. notes are printed above
// the table (a partial session, a busy machine).
func (o Outcome) WriteText(w io.Writer, base, head string, notes ...string) error {
	r := o.Report
	var b strings.Builder
	fmt.Fprintf(&b, "base: %s\nhead: %s\n", base, head)
	stages := fmt.Sprintf("%d rounds", len(o.Rounds))
	if o.Max > 0 {
		stages += fmt.Sprintf(" of at most %d", o.Max)
	}
	if o.Confirmation != nil {
		stages += fmt.Sprintf(" (a first alarm after %d, checked over the %d after it)", o.First.Rounds, o.Confirmation.Rounds)
	}
	fmt.Fprintf(&b, "paired, interleaved: %s, base and head in random order in each; per-round ratio head/base, median with a %g%% bootstrap interval over rounds (%g%% over the verdict metrics, Bonferroni); threshold %s\n",
		stages, 100*pairedLevel(r), 100*r.Options.Confidence, pct(r.Options.Threshold))
	for _, n := range notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	b.WriteString("\n")
	writePairedTable(&b, r.Rows)
	b.WriteString("* the benchmark's verdict metric: cpu-sec/op (CPU time per op) on a CPU-bound point, sec/op (wall time) otherwise\n")
	list := func(title string, rows []PairedRow) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s\n", title)
		for _, row := range rows {
			fmt.Fprintf(&b, "  %s %s %s", row.Name, row.Unit, signedPct(row.Ratio-1))
			if row.Note != "" {
				fmt.Fprintf(&b, ": %s", row.Note)
			}
			b.WriteString("\n")
		}
	}
	var unconfirmed []PairedRow
	for _, row := range r.Rows {
		if row.Verdict && row.Decision != Slower && strings.Contains(row.Note, "first alarm") {
			unconfirmed = append(unconfirmed, row)
		}
	}
	list("Slower (confirmed):", r.Slower())
	list("First alarms not confirmed (not failed):", unconfirmed)
	list(fmt.Sprintf("Not sure (the interval still holds a slowdown beyond %s; no pass without evidence):", pct(r.Options.Threshold)), r.Unsure())
	list("Too few undisturbed rounds (rerun on a quieter machine):", r.Unsettled())
	switch {
	case o.Partial:
		fmt.Fprintf(&b, "\nPARTIAL: interrupted after %d rounds; no verdict\n", len(o.Rounds))
	case o.Failed():
		fmt.Fprintf(&b, "\nFAIL: %d verdict metric(s) slower, confirmed\n", len(r.Slower()))
	case o.Unsure():
		fmt.Fprintf(&b, "\nRERUN: not sure: nothing slower, but %d verdict metric(s) may be slower by more than %s after %d rounds; no pass without evidence (exit %d)\n",
			len(r.Unsure()), pct(r.Options.Threshold), len(o.Rounds), ExitDisturbed)
	case o.Rerun():
		fmt.Fprintf(&b, "\nRERUN: nothing slower, but %d verdict metric(s) had too few undisturbed rounds (exit %d)\n", len(r.Unsettled()), ExitDisturbed)
	default:
		fmt.Fprintf(&b, "\nPASS: every verdict metric's interval excludes a slowdown beyond %s\n", pct(r.Options.Threshold))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePairedTable writes one aligned line per metric: its head/base
// ratio, interval, rounds and decision; a verdict metric is starred.
func writePairedTable(b *strings.Builder, rows []PairedRow) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tunit\thead/base\tinterval\trounds\tverdict")
	for _, row := range rows {
		unit := row.Unit
		if row.Verdict {
			unit += " *"
		}
		interval := "-"
		if !math.IsNaN(row.Lo) {
			interval = fmt.Sprintf("[%.3f, %.3f]", row.Lo, row.Hi)
		}
		ratio := "-"
		if !math.IsNaN(row.Ratio) {
			ratio = fmt.Sprintf("%.3f (%s)", row.Ratio, signedPct(row.Ratio-1))
		}
		rounds := fmt.Sprint(row.Rounds)
		if row.Disturbed > 0 {
			rounds += fmt.Sprintf(" (+%d disturbed)", row.Disturbed)
		}
		v := row.Decision.String()
		if row.Verdict && row.Decision == Slower {
			v = "SLOWER"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Name, unit, ratio, interval, rounds, v)
	}
	tw.Flush()
}

// pairedLevel is the per-metric interval level the report used.
func pairedLevel(r PairedReport) float64 {
	for _, row := range r.Rows {
		if row.Level > 0 {
			return row.Level
		}
	}
	return r.Options.Confidence
}
