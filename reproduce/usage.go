package reproduce

import "strings"

// Usage is headspace reproduce's help: the documents' list is each
// report's Summary (Docs), wrapped at 76 columns.
func Usage() string {
	var docs strings.Builder
	for _, d := range Docs {
		docs.WriteString(wrapItem("  "+d.ID+"  ", d.Summary, 76))
	}
	return reproduceIntro + docs.String() + reproduceMore
}

// wrapItem is an item of a list: head, then text wrapped at width
// columns, its lines after the first indented as far as head.
func wrapItem(head, text string, width int) string {
	var b strings.Builder
	line := head
	for i, w := range strings.Fields(text) {
		if i > 0 && len([]rune(line))+1+len([]rune(w)) > width {
			b.WriteString(line + "\n")
			line = strings.Repeat(" ", len(head)) + w
			continue
		}
		if i > 0 {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}

const reproduceIntro = `
Runs the experiment of each document this project reproduces and writes one
report per document into --out (Markdown with tables, and PNG, SVG and GIF
figures under --out/figures): the machine and the command, the document's
numbers beside ours, and ratios, since absolute numbers differ between
machines.

`

const reproduceMore = `
Each document's measurements are saved first, in Go benchmark format with
the machine, the device, the command and every setting as configuration
lines, to --out/results/<id>-<name>.txt (003 also saves there its timeline,
003-timeline-none.json, and the what-if model's profiles, 003-model.json); the report and its figures are then built from that
file read back. 003 also runs the document's own code (--torch-script,
peers/torch/ladder.py) on the same emulated device, with a calibration of
this machine against the document's host; where torch is not installed the
report says that column was not measured (docs/yardstick.md). --from DIR rebuilds the reports and figures from the saved
files in DIR (a run's --out/results) without measuring: byte for byte what
the run wrote. A saved file that is missing, unreadable or another
document's exits 2 with one line naming it.

Each report's run time is recorded in its result file (elapsed) and printed
in its header; --quick runs every code path at tiny sizes in seconds (its
numbers are not comparable). The run stops at the first document that
fails; reports already written stay.`
