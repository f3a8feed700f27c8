package history

import (
	"fmt"
	"io"
	"math"
	"strings"

	"golang.org/x/perf/benchunit"

	"github.com/headspace-bench/headspace/harness/engines/gate"
)

// formatValue formats v in unit as benchstat would (3.448, 290.1m).
func formatValue(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	return benchunit.CommonScale([]float64{v}, benchunit.ClassOf(unit)).Format(v)
}

func signed(d float64) string {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return fmt.Sprint(d)
	}
	return fmt.Sprintf("%+.1f%%", 100*d)
}

func kind(c SeriesChange) string {
	switch {
	case c.Series.Better == 0:
		return "change"
	case c.Regression(c.Series.Better):
		return "regression"
	}
	return "improvement"
}

// WriteText writes only the detected changes, one per line, newest
// first: the machine, the benchmark, the unit, the size in %, the first
// commit that shows it and its date, the medians before and after, and
// whether it is a regression.
func (h *History) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, c := range h.Changes() {
		fmt.Fprintf(&b, "%s %s %s %s at %s (%s): %s → %s, %s\n", c.Series.Machine, c.Series.Benchmark, c.Series.Unit,
			signed(c.Delta), c.Commit, c.Date.Format("2006-01-02"),
			formatValue(c.Before, c.Series.Unit), formatValue(c.After, c.Series.Unit), kind(c))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// counts returns how many runs, series and change points the history has.
func (h *History) counts() (runs, series, changes int) {
	for _, m := range h.Machines {
		runs += len(m.Runs)
		series += len(m.Series)
		for _, s := range m.Series {
			changes += len(s.Changes)
		}
	}
	return
}

// latestRows are the rows of a machine's latest comparison that changed.
func latestRows(m *Machine) []gate.Row {
	if m.Latest == nil {
		return nil
	}
	var out []gate.Row
	for _, r := range m.Latest.Rows {
		if r.Verdict == gate.Regression || r.Verdict == gate.Improvement || r.Verdict == gate.UnknownDirection {
			out = append(out, r)
		}
	}
	return out
}

// latestChanges are the change points of a machine at its latest run.
func latestChanges(h *History, m *Machine) []SeriesChange {
	var out []SeriesChange
	for _, c := range h.Changes() {
		if c.Series.Machine == m.Key && c.Run == len(m.Runs)-1 {
			out = append(out, c)
		}
	}
	return out
}

// WriteMarkdown writes the summary for $GITHUB_STEP_SUMMARY or a pull
// request comment: per machine, the latest run against the one before
// (the gate's changed rows) and the change points it starts, then every
// change point of the history.
func (h *History) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	runs, series, changes := h.counts()
	fmt.Fprintf(&b, "## headspace history\n\n%s, %s, %s, %s (E-Divisive means, permutation test).\n\n",
		count(len(h.Machines), "machine"), count(runs, "run"), count(series, "series"), count(changes, "change point"))
	b.WriteString("### Latest night\n\n")
	for _, m := range h.Machines {
		last := m.Runs[len(m.Runs)-1]
		fmt.Fprintf(&b, "**%s**: `%s` (%s)", m.Key, last.Commit, last.Date.Format("2006-01-02 15:04 UTC"))
		switch {
		case len(m.Runs) < 2:
			b.WriteString(": the first run of this machine, nothing to compare.\n\n")
			continue
		case m.LatestErr != nil:
			fmt.Fprintf(&b, ": not compared with `%s`: %s\n\n", m.Runs[len(m.Runs)-2].Commit, mdEscape(m.LatestErr.Error()))
			continue
		}
		rows := latestRows(m)
		fmt.Fprintf(&b, " against `%s`: %d regressions, %d changed metrics of %d compared.\n\n",
			m.Runs[len(m.Runs)-2].Commit, len(m.Latest.Regressions()), len(rows), len(m.Latest.Rows))
		if len(rows) > 0 {
			b.WriteString("| benchmark | unit | before | after | change | q | verdict |\n|---|---|---:|---:|---:|---:|---|\n")
			for _, r := range rows {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2g | %s |\n", mdEscape(r.Name), r.Unit,
					formatValue(r.Old.Center, r.Unit), formatValue(r.New.Center, r.Unit), signed(r.Delta), r.Q, r.Verdict)
			}
			b.WriteString("\n")
		}
		if cs := latestChanges(h, m); len(cs) > 0 {
			fmt.Fprintf(&b, "Change points starting at this run: %d.\n\n", len(cs))
		}
	}
	all := h.Changes()
	b.WriteString("### Change points\n\n")
	if len(all) == 0 {
		b.WriteString("None detected.\n")
	} else {
		b.WriteString("| machine | benchmark | unit | first commit | date | change | before → after | |\n|---|---|---|---|---|---:|---|---|\n")
		for _, c := range all {
			fmt.Fprintf(&b, "| %s | %s | %s | `%s` | %s | %s | %s → %s | %s |\n", c.Series.Machine, mdEscape(c.Series.Benchmark), c.Series.Unit,
				c.Commit, c.Date.Format("2006-01-02"), signed(c.Delta), formatValue(c.Before, c.Series.Unit), formatValue(c.After, c.Series.Unit), kind(c))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func count(n int, s string) string {
	if n == 1 || s == "series" {
		return fmt.Sprintf("%d %s", n, s)
	}
	return fmt.Sprintf("%d %ss", n, s)
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}
