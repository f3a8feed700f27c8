package reproduce

import (
	"fmt"
	"time"

	"github.com/headspace-bench/headspace/harness/machine"
)

// Header is what every report opens with: the document, the command that
// measured it, the machine (absolute numbers only mean something beside
// the machine that produced them) and the device, how long it took, and
// the result file it was built from.
type Header struct {
	ID      string // "003"
	Title   string // the document's title
	Source  string // the document's file(s) in the seeds
	Command string // the command line that wrote the report
	Quick   bool   // --quick: tiny sizes, numbers not comparable
	Machine machine.Machine
	Device  string        // the device's description
	Elapsed time.Duration // the document's run time
	Results string        // the link to the result file, relative to the report
}

// writeHeader renders h.
func writeHeader(m *md, h Header) {
	m.para("# %s — %s", h.ID, h.Title)
	m.para("Reproduced by `headspace reproduce` from document %s in the project's seeds. Absolute numbers differ between machines; compare the ratios.", h.Source)
	if h.Quick {
		m.para("> **Quick run** (`--quick`): tiny images, batches and step counts so that every code path runs in seconds. Its numbers say nothing about the document; run without `--quick` for them.")
	}
	mc := h.Machine
	m.table("ll", []string{"run", ""}, [][]string{
		{"command", "`" + h.Command + "`"},
		{"date", mc.Date.UTC().Format("2006-01-02 15:04 UTC")},
		{"commit", mc.Commit},
		{"CPU", mc.CPU},
		{"cores, GOMAXPROCS", fmt.Sprintf("%d, %d", mc.Cores, mc.GOMAXPROCS)},
		{"OS/arch, Go", fmt.Sprintf("%s/%s, %s", mc.OS, mc.Arch, mc.Go)},
		{"device", h.Device},
		{"run time", h.Elapsed.Round(time.Second).String()},
	})
	m.para("The measurements are in [`%s`](%s), in Go benchmark format with this header's settings; `headspace reproduce --from` rebuilds the report and its figures from it without measuring.", h.Results, h.Results)
}
