package reproduce

import (
	"fmt"
	"io"
	"math"
	"strings"

	reports "github.com/headspace-bench/headspace/harness/report"
)

// md collects a report's Markdown, keeping the first write error so that the
// rendering functions read as a list of paragraphs.
type md struct {
	w   io.Writer
	err error
}

// p writes a formatted line (a paragraph needs a blank line after it: use para).
func (m *md) p(format string, args ...any) {
	if m.err != nil {
		return
	}
	if _, m.err = fmt.Fprintf(m.w, format, args...); m.err == nil {
		_, m.err = fmt.Fprintln(m.w)
	}
}

// para writes a formatted paragraph and the blank line after it.
func (m *md) para(format string, args ...any) {
	m.p(format, args...)
	m.p("")
}

// table writes a Markdown table (report.Table), its cells' pipes
// escaped: align has one of 'l' or 'r' per column.
func (m *md) table(align string, header []string, rows [][]string) {
	t := reports.Table{Align: align, Header: escapeCells(header)}
	for _, r := range rows {
		t.Add(escapeCells(r)...)
	}
	if m.err == nil {
		_, m.err = t.WriteTo(m.w)
	}
	m.p("")
}

// code writes a fenced code block.
func (m *md) code(lang, body string) {
	m.p("```%s", lang)
	m.p("%s", strings.TrimRight(body, "\n"))
	m.p("```")
	m.p("")
}

// escapeCells keeps a cell's pipes from splitting it.
func escapeCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = reports.EscapePipes(c)
	}
	return out
}

// num formats v with the given decimals, or "–" for a missing value (NaN).
func num(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.*f", decimals, v)
}

// ratio is a/b with two decimals and a "×", or "–" when either is missing or
// b is zero.
func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// div is a/b, or NaN when b is zero or either is missing.
func div(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}

// pct formats a signed percentage change from a to b: "−12%", "+3%".
func pct(from, to float64) string {
	if math.IsNaN(from) || math.IsNaN(to) || from == 0 {
		return "–"
	}
	return signed(100 * (to - from) / from)
}

// signed formats a percentage with its sign and a true minus sign.
func signed(v float64) string {
	s := fmt.Sprintf("%+.0f%%", v)
	if s == "-0%" {
		s = "+0%"
	}
	return strings.Replace(s, "-", "−", 1)
}

// mib formats bytes in MiB with one decimal.
func mib(b float64) string {
	if math.IsNaN(b) {
		return "–"
	}
	return fmt.Sprintf("%.1f", b/(1<<20))
}

// bytesHuman formats a byte count in decimal units, as a copy's payload
// is read against a bandwidth in GB/s.
func bytesHuman(b int64) string {
	switch {
	case b >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(b)/1e6)
	case b >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(b)/1e3)
	}
	return fmt.Sprintf("%d B", b)
}

// thousands writes n with comma separators: 200,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// joined is each of vs formatted, joined by commas: a command's list,
// "1,2,4".
func joined[T any](vs []T, format func(T) string) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = format(v)
	}
	return strings.Join(s, ",")
}
