package reproduce

import (
	"fmt"
	"runtime"
	"time"

	"github.com/headspace-bench/headspace/harness/results"
)

// Machine describes where a report's numbers were measured. Every report
// prints it beside the command, because absolute numbers only mean
// something on the machine that produced them.
type Machine struct {
	CPU        string    // the first "model name" of /proc/cpuinfo
	Cores      int       // runtime.NumCPU
	GOMAXPROCS int       // runtime.GOMAXPROCS(0)
	OS, Arch   string    // runtime.GOOS, runtime.GOARCH
	Go         string    // runtime.Version()
	Commit     string    // git's short commit (-dirty with local changes), HEADSPACE_COMMIT, or "unknown"
	Date       time.Time // when the run started
}

// DescribeMachine describes this machine now. The CPU model and the commit
// come from results.Environment, so reports and result files agree.
func DescribeMachine() Machine {
	m := Machine{
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Go:         runtime.Version(),
		Date:       time.Now().UTC(),
	}
	for _, c := range results.Environment("none") {
		switch c.Key {
		case "cpu":
			m.CPU = c.Value
		case "commit":
			m.Commit = c.Value
		}
	}
	return m
}

// Header is what every report opens with: the document, the command that
// produced the report, the machine and the device, and how long it took.
type Header struct {
	ID      string // "003"
	Title   string // the document's title
	Source  string // the document's file(s) in the seeds
	Command string // the command line that wrote the report
	Quick   bool   // --quick: tiny sizes, numbers not comparable
	Machine Machine
	Device  string        // the device's description
	Elapsed time.Duration // the document's run time
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
