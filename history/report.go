package history

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/perf/benchunit"

	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/harness/report"
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
	k := "improvement"
	switch {
	case c.Series.Better == 0:
		k = "change"
	case c.Regression(c.Series.Better):
		k = "regression"
	}
	if c.Suspected {
		return "suspected " + k
	}
	return k
}

// label is kind(c), with how many of its series' last runs a suspected
// step is in.
func label(c SeriesChange) string {
	if c.Suspected {
		return fmt.Sprintf("%s (the last %d runs; too few to confirm)", kind(c), len(c.Series.Points)-c.Index)
	}
	return kind(c)
}

// WriteText writes only the detected changes, one per line, newest
// first: the machine, the benchmark, the unit, the size in %, the first
// commit that shows it and its date, the medians before and after, and
// whether it is a regression; then the suspected steps at the end of a
// series, as "suspected regression (the last 3 runs; too few to
// confirm)". A field that holds a space or a character that does not
// print is quoted (Go syntax), so no field can make another or a line.
func (h *History) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, c := range append(h.Changes(), h.Suspects()...) {
		fmt.Fprintf(&b, "%s %s %s %s at %s (%s): %s → %s, %s\n", textField(c.Series.Machine), textField(c.Series.Benchmark), textField(c.Series.Unit),
			signed(c.Delta), textField(c.Commit), c.Date.Format("2006-01-02"),
			formatValue(c.Before, c.Series.Unit), formatValue(c.After, c.Series.Unit), label(c))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// textField is s as one field of a text line: as it is when every
// character prints and none is a space, else quoted in Go syntax.
func textField(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return strconv.Quote(s)
		}
	}
	return s
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
		fmt.Fprintf(&b, "**%s**: %s (%s)", mdText(m.Key), mdCode(last.Commit), last.Date.Format("2006-01-02 15:04 UTC"))
		switch {
		case len(m.Runs) < 2:
			b.WriteString(": the first run of this machine, nothing to compare.\n\n")
			continue
		case m.LatestErr != nil:
			fmt.Fprintf(&b, ": not compared with %s: %s\n\n", mdCode(m.Runs[len(m.Runs)-2].Commit), mdText(m.LatestErr.Error()))
			continue
		}
		rows := latestRows(m)
		fmt.Fprintf(&b, " against %s: %d regressions, %d changed metrics of %d compared.\n\n",
			mdCode(m.Runs[len(m.Runs)-2].Commit), len(m.Latest.Regressions()), len(rows), len(m.Latest.Rows))
		if len(rows) > 0 {
			t := mdTable("llrrrrl", "benchmark", "unit", "before", "after", "change", "q", "verdict")
			for _, r := range rows {
				t.Add(mdText(r.Name), mdText(r.Unit), mdText(formatValue(r.Old.Center, r.Unit)), mdText(formatValue(r.New.Center, r.Unit)),
					mdText(signed(r.Delta)), fmt.Sprintf("%.2g", r.Q), mdText(r.Verdict.String()))
			}
			b.WriteString(t.String() + "\n")
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
		mdChanges(&b, all)
	}
	if sus := h.Suspects(); len(sus) > 0 {
		b.WriteString("\n### Suspected steps at the end of a series\n\nIn too few of the latest runs for the test to confirm; the next nights will tell.\n\n")
		mdChanges(&b, sus)
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

// mdChanges writes a table of changes (or suspected steps).
func mdChanges(b *strings.Builder, cs []SeriesChange) {
	t := mdTable("lllllrll", "machine", "benchmark", "unit", "first commit", "date", "change", "before → after", "")
	for _, c := range cs {
		t.Add(mdText(c.Series.Machine), mdText(c.Series.Benchmark), mdText(c.Series.Unit), mdCode(c.Commit), c.Date.Format("2006-01-02"),
			mdText(signed(c.Delta)), mdText(formatValue(c.Before, c.Series.Unit))+" → "+mdText(formatValue(c.After, c.Series.Unit)), mdText(label(c)))
	}
	b.WriteString(t.String())
}

// mdTable is a table of the page (report.Table), in its style: the
// separator row without spaces, an empty cell one space; its cells are
// mdText or mdCode.
func mdTable(align string, header ...string) *report.Table {
	return &report.Table{Align: align, Header: header, TightRule: true, TightEmpty: true}
}

// mdText is s as Markdown text that means nothing but its characters,
// inside a line (a paragraph or a table cell, never a line's start): the
// characters that inline Markdown, GFM (tables, strikethrough, autolinks)
// or GitHub (math, @mentions, #references) give a meaning backslash-
// escaped, < > & as entities (no raw HTML), and line breaks and
// characters that do not print as spaces.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case strings.ContainsRune(mdSpecial, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case !unicode.IsPrint(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdSpecial are the characters mdText escapes with a backslash.
const mdSpecial = "\\`*_[](){}|~!:$@#^"

// mdCode is s as a code span when it is a plain name (letters, digits and
// . _ / + -, as commits are), else as mdText: a backtick or a | would
// end the span or the table cell.
func mdCode(s string) string {
	if s == "" {
		return mdText(s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/+-", r)) {
			return mdText(s)
		}
	}
	return "`" + s + "`"
}
