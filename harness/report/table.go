package report

import (
	"io"
	"strings"
)

// Table is a Markdown table: a header row, the separator row that aligns
// each column, and the rows. Cells are written as they are: a caller
// whose cell may hold a pipe escapes it (EscapePipes, or the history
// page's own escaping of every character Markdown gives a meaning).
type Table struct {
	// Align has one letter per column: 'r' for a right-aligned column
	// (numbers), anything else (or none) for a left-aligned one.
	Align string
	// Header is the header row's cells.
	Header []string
	// Rows are the rows, each with its cells.
	Rows [][]string
	// TightRule writes the separator row without spaces (|---|---:|), as
	// the history page writes it, instead of | --- | ---: |.
	TightRule bool
	// TightEmpty writes an empty cell as one space between its pipes
	// (| |), as the history page, the what-if's and the peers' machine
	// tables write it, instead of two (|  |).
	TightEmpty bool
}

// NewTable is a table with the given alignment and header and no rows.
func NewTable(align string, header ...string) *Table {
	return &Table{Align: align, Header: header}
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// String is the table in Markdown, each row a line ending in a newline.
func (t *Table) String() string {
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			if c != "" || !t.TightEmpty {
				b.WriteString(" " + c)
			}
			b.WriteString(" |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	seps := make([]string, len(t.Header))
	for i := range seps {
		seps[i] = "---"
		if i < len(t.Align) && t.Align[i] == 'r' {
			seps[i] = "---:"
		}
	}
	if t.TightRule {
		b.WriteString("|" + strings.Join(seps, "|") + "|\n")
	} else {
		row(seps)
	}
	for _, r := range t.Rows {
		row(r)
	}
	return b.String()
}

// WriteTo writes the table to w in Markdown.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	n, err := io.WriteString(w, t.String())
	return int64(n), err
}

// EscapePipes is s with each pipe escaped, so that it stays in its cell.
func EscapePipes(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
