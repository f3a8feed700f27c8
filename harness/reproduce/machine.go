package reproduce

import (
	"fmt"
	"time"

	"github.com/headspace-bench/headspace/harness/machine"
)

// Header is what every report opens with: the document, the command that
// produced the report, the machine and the device, and how long it took.
type Header struct {
	ID      string          // "003"
	Title   string          // the document's title
	Source  string          // the document's file(s) in the seeds
	Command string          // the command line that wrote the report
	Quick   bool            // --quick: tiny sizes, numbers not comparable
	Machine machine.Machine // where the numbers were measured
	Device  string          // the device's description
	Elapsed time.Duration   // the document's run time
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
}
