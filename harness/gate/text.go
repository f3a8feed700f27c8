package gate

// WriteText: the report for people.

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchunit"

	"github.com/headspace-bench/headspace/harness/report"
)

func pct(f float64) string {
	s := fmt.Sprintf("%.1f", 100*f)
	return strings.TrimSuffix(s, ".0") + "%"
}

func signedPct(f float64) string {
	switch {
	case math.IsNaN(f):
		return "-"
	case math.IsInf(f, 0):
		return fmt.Sprintf("%+.0f%%", f)
	}
	return fmt.Sprintf("%+.2f%%", 100*f)
}

// WriteText writes the report for people: a table with a row per
// benchmark and unit (medians ± their 95% confidence interval, delta,
// p-value, sample counts, verdict), then a summary naming every
// regression, improvement, benchmark present on one side only, metric
// with too few samples to decide and change of unknown direction, and a
// closing PASS or FAIL line.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	r.writeHeader(&b)
	if len(r.Rows) == 0 {
		b.WriteString("no benchmark results to compare\n")
	} else {
		r.writeTable(&b)
		r.writeSections(&b)
		r.writeNotes(&b)
		r.writeVerdict(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeader writes what was compared, how, and the warnings that hold
// for the whole report (busy machines, differing configurations).
func (r Report) writeHeader(b *strings.Builder) {
	oldName, newName := r.names()
	if r.CrossMachine {
		fmt.Fprintf(b, "CROSS-MACHINE comparison (--cross-machine): %s; a change may be the machine's, not the code's\n",
			strings.Join(r.MachineDiffs, "; "))
	}
	fmt.Fprintf(b, "old: %s\nnew: %s\n", oldName, newName)
	fmt.Fprintf(b, "medians ± %g%% confidence interval; Mann–Whitney U test, false discovery rate %g over %s (Benjamini–Hochberg); threshold %s\n",
		100*Confidence, r.Alpha, report.Plural(r.Tested, "tested metric"), pct(r.Threshold))
	if r.WithSpread > 0 {
		fmt.Fprintf(b, "history: %d metrics must also change by more than %g × their spread between runs\n", r.WithSpread, r.SpreadZ)
	}
	b.WriteString("\n")
	for _, busy := range r.Busy {
		fmt.Fprintf(b, "warning: %s\n", busy)
	}
	if len(r.ConfigDiffs) > 0 {
		b.WriteString("warning: old and new were recorded under different configurations; they may not be comparable:\n")
		for _, d := range r.ConfigDiffs {
			fmt.Fprintf(b, "  %s\n", d)
		}
		b.WriteString("\n")
	}
}

// writeTable writes one aligned line per compared metric.
func (r Report) writeTable(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	spreadCol := func(string) string { return "" }
	if r.WithSpread > 0 {
		// compare --history: each metric's spread between runs.
		spreadCol = func(s string) string { return s + "\t" }
	}
	fmt.Fprintln(tw, "benchmark\tunit\told\tnew\tdelta\t"+spreadCol("run-to-run")+"p\tq\tn\tverdict")
	for _, row := range r.Rows {
		sc := scaler(row)
		p, q := "-", "-"
		if !math.IsNaN(row.P) {
			p, q = fmt.Sprintf("%.3g", row.P), fmt.Sprintf("%.3g", row.Q)
		}
		sp := "-"
		if !math.IsNaN(row.Spread) {
			sp = "±" + pct(row.Spread)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s%s\t%s\t%s\t%s\n", row.Name, row.Unit,
			cell(row.Old, sc), cell(row.New, sc), signedPct(row.Delta), spreadCol(sp), p, q, counts(row), r.verdictCell(row))
	}
	tw.Flush()
}

// verdictCell is a row's verdict as the table words it.
func (r Report) verdictCell(row Row) string {
	switch {
	case row.Verdict == Regression:
		return "REGRESSION"
	case row.Verdict == Disturbed:
		return "DISTURBED: rerun"
	case row.Verdict == NoChange && row.Q < r.Alpha && row.Noise > 0 && math.Abs(row.Delta) > r.Threshold:
		return "within the spread between runs"
	case row.Verdict == NoChange && row.Q < r.Alpha:
		return "within " + pct(r.Threshold) + " threshold"
	}
	return row.Verdict.String()
}

// writeSections writes a titled list of the rows of each verdict that
// needs words (regressions, improvements, one-sided, too few, disturbed,
// unknown direction).
func (r Report) writeSections(b *strings.Builder) {
	section := func(title string, rows []Row, line func(Row) string) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(b, "\n%s\n", title)
		for _, row := range rows {
			fmt.Fprintf(b, "  %s\n", line(row))
		}
	}
	change := func(row Row) string {
		sc := scaler(row)
		return fmt.Sprintf("%s %s: %s → %s (%s, p=%.3g, q=%.3g, n=%s); %s is better", row.Name, row.Unit,
			sc.Format(row.Old.Center), sc.Format(row.New.Center), signedPct(row.Delta), row.P, row.Q, counts(row), row.Better)
	}
	regs := r.Regressions()
	section(fmt.Sprintf("%s beyond %s at false discovery rate %g:", report.Plural(len(regs), "regression"), pct(r.Threshold), r.Alpha), regs, change)
	imps := r.with(Improvement)
	section(fmt.Sprintf("%s beyond %s:", report.Plural(len(imps), "improvement"), pct(r.Threshold)), imps, change)
	section("Only in old (missing from new; not compared):", oneSided(r.Rows, OnlyInOld), func(row Row) string { return row.Name })
	section("Only in new (not in old; not compared):", oneSided(r.Rows, OnlyInNew), func(row Row) string { return row.Name })
	few := r.with(TooFewSamples)
	section("Too few samples to decide (not checked):", few, func(row Row) string {
		return fmt.Sprintf("%s %s: %s", row.Name, row.Unit, row.Note)
	})
	section("Disturbed (worse beyond the threshold, but runs of the benchmark stayed disturbed: not called a regression; rerun on a quiet machine):", r.Disturbed(), func(row Row) string {
		sc := scaler(row)
		return fmt.Sprintf("%s %s: %s → %s (%s); %s", row.Name, row.Unit, sc.Format(row.Old.Center), sc.Format(row.New.Center), signedPct(row.Delta), row.Note)
	})
	unk := r.with(UnknownDirection)
	section("Changed, but which way is better is unknown (not checked; add a \"Unit <unit> better=higher|lower\" line):", unk, func(row Row) string {
		sc := scaler(row)
		return fmt.Sprintf("%s %s: %s → %s (%s, p=%.3g, q=%.3g, n=%s)", row.Name, row.Unit,
			sc.Format(row.Old.Center), sc.Format(row.New.Center), signedPct(row.Delta), row.P, row.Q, counts(row))
	})
}

// writeNotes writes benchmath's warnings, each once.
func (r Report) writeNotes(b *strings.Builder) {
	var notes []string
	seen := map[string]bool{}
	for _, row := range r.Rows {
		for _, w := range row.Warnings {
			if !seen[w] {
				seen[w] = true
				notes = append(notes, w)
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nbenchmath notes:\n")
		for _, n := range notes {
			fmt.Fprintf(b, "  %s\n", n)
		}
	}
}

// writeVerdict writes the last line: FAIL with the regressions, RERUN, or
// PASS.
func (r Report) writeVerdict(b *strings.Builder) {
	regs, dist, checked := r.Regressions(), r.Disturbed(), r.checked()
	switch {
	case len(regs) > 0:
		fmt.Fprintf(b, "\nFAIL: %s in %s:\n", report.Plural(len(regs), "regression"), report.Plural(checked, "compared metric"))
		for _, row := range regs {
			fmt.Fprintf(b, "  %s %s %s\n", row.Name, row.Unit, signedPct(row.Delta))
		}
	case len(dist) > 0:
		fmt.Fprintf(b, "\nRERUN: no regressions, but %s disturbed runs; rerun on a quiet machine (exit %d)\n", report.Plural(len(dist), "metric rests on"), ExitDisturbed)
	default:
		fmt.Fprintf(b, "\nPASS: no regressions in %s", report.Plural(checked, "compared metric"))
		if unchecked := len(r.Rows) - checked; unchecked > 0 {
			fmt.Fprintf(b, "; %d not checked (see above)", unchecked)
		}
		b.WriteString("\n")
	}
}

// oneSided returns one row per benchmark name whose rows all have the
// verdict v, with the units listed in its Name; and a row per unit for
// benchmarks present on both sides but missing that unit on one.
func oneSided(rows []Row, v Verdict) []Row {
	var out []Row
	byName := map[string][]Row{}
	var names []string
	for _, row := range rows {
		if byName[row.Name] == nil {
			names = append(names, row.Name)
		}
		byName[row.Name] = append(byName[row.Name], row)
	}
	for _, name := range names {
		var units []string
		all := true
		for _, row := range byName[name] {
			if row.Verdict == v {
				units = append(units, row.Unit)
			} else {
				all = false
			}
		}
		switch {
		case len(units) == 0:
		case all:
			out = append(out, Row{Name: fmt.Sprintf("%s (%s)", name, strings.Join(units, ", "))})
		default:
			for _, u := range units {
				out = append(out, Row{Name: fmt.Sprintf("%s %s (the benchmark is on both sides, this unit is not)", name, u)})
			}
		}
	}
	return out
}

func counts(row Row) string {
	switch {
	case row.Verdict == OnlyInOld:
		return fmt.Sprint(row.Old.N)
	case row.Verdict == OnlyInNew:
		return fmt.Sprint(row.New.N)
	case row.Old.N == row.New.N:
		return fmt.Sprint(row.Old.N)
	}
	return fmt.Sprintf("%d+%d", row.Old.N, row.New.N)
}

func scaler(row Row) benchunit.Scaler {
	var vals []float64
	for _, s := range []Side{row.Old, row.New} {
		if s.N > 0 {
			vals = append(vals, s.Center)
		}
	}
	return benchunit.CommonScale(vals, benchunit.ClassOf(row.Unit))
}

func cell(s Side, sc benchunit.Scaler) string {
	if s.N == 0 {
		return "-"
	}
	return sc.Format(s.Center) + " ± " + s.PctRangeString()
}
