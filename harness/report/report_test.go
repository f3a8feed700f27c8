package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Table
		want string
	}{
		{"aligned", Table{Align: "lr", Header: []string{"stage", "share"}, Rows: [][]string{{"load", "12%"}, {"decode", "80%"}}},
			"| stage | share |\n| --- | ---: |\n| load | 12% |\n| decode | 80% |\n"},
		{"tight", Table{Align: "lr", Header: []string{"benchmark", "change"}, Rows: [][]string{{"a", "+1%"}}, TightRule: true},
			"| benchmark | change |\n|---|---:|\n| a | +1% |\n"},
		{"tight empty cells", Table{Header: []string{"", ""}, Rows: [][]string{{"x", ""}}, TightEmpty: true},
			"| | |\n| --- | --- |\n| x | |\n"},
		{"no rows, align shorter than the header", Table{Align: "r", Header: []string{"n", "x", "y"}},
			"| n | x | y |\n| ---: | --- | --- |\n"},
		{"an empty cell", Table{Header: []string{"a", ""}, Rows: [][]string{{"", "b"}}},
			"| a |  |\n| --- | --- |\n|  | b |\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.t.String(); got != tc.want {
				t.Errorf("String:\n%s\nwant:\n%s", got, tc.want)
			}
			var b bytes.Buffer
			n, err := tc.t.WriteTo(&b)
			if err != nil || b.String() != tc.want || n != int64(len(tc.want)) {
				t.Errorf("WriteTo: %d, %v, %q; want %d, nil, %q", n, err, b.String(), len(tc.want), tc.want)
			}
		})
	}
	tb := NewTable("rl", "n", "name")
	tb.Add("1", EscapePipes("a|b"))
	if got, want := tb.String(), "| n | name |\n| ---: | --- |\n| 1 | a\\|b |\n"; got != want {
		t.Errorf("NewTable, Add, EscapePipes: %q, want %q", got, want)
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Plural(0, "run"), "0 runs"},
		{Plural(1, "run"), "1 run"},
		{Plural(5, "run"), "5 runs"},
		{Plural(-1, "step"), "-1 steps"},
		{Ms(290*time.Millisecond, 1), "290.0 ms"},
		{Ms(1234567*time.Nanosecond, 2), "1.23 ms"},
		{Ms(0, 0), "0 ms"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestSave checks that a plot is written in the format its path names,
// both for SaveBoth, and that another extension is refused, naming the
// path, with nothing written.
func TestSave(t *testing.T) {
	p := plot.New()
	p.Title.Text = "t"
	dir := t.TempDir()
	base := filepath.Join(dir, "fig")
	if err := SaveBoth(p, base, 2*vg.Inch, 1*vg.Inch); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(base + ".png")
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s.png: %v, starts %q; want a PNG", base, err, png[:min(8, len(png))])
	}
	svg, err := os.ReadFile(base + ".svg")
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("%s.svg: %v; want an SVG", base, err)
	}
	bad := filepath.Join(dir, "fig.jpg")
	err = Save(p, bad, 2*vg.Inch, 1*vg.Inch)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), ".png or .svg") {
		t.Errorf("Save to %s: %v, want a refusal naming the path and the formats", bad, err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("Save to %s left a file: %v", bad, err)
	}
	// A file headspace did not write as a figure is not replaced.
	mine := filepath.Join(dir, "mine.png")
	if err := os.WriteFile(mine, []byte("not a figure"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Save(p, mine, 2*vg.Inch, 1*vg.Inch); err == nil {
		t.Errorf("Save over %s, a file headspace did not write: no error", mine)
	}
}
