package whatif

// A what-if run's output (headspace whatif): printed as the run measures
// it (Printer), or rebuilt from the run's result file (Report.WriteText),
// and its Markdown report and plot (Report.WriteFiles).

import (
	"fmt"
	"io"
	"slices"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// Report is everything `headspace whatif --report` writes, as a result
// file of the run holds it: the command, the profile the model was fed,
// the table's grid, the checked points with their runs, and the caching
// ladder's medians where the run had --ladder.
type Report struct {
	Command string                  // the command line that made the run
	Profile Profile                 // the profile the model was fed
	Grid    Grid                    // the predicted table's cores, workers and step multipliers
	Verify  Grid                    // the points --verify was to check; empty without it
	Impl    string                  // the transforms' implementation
	Checks  []Check                 // the checked points, with their runs
	Ladder  map[level.Level]float64 // each level's median steps/s; nil without --ladder
	Partial bool                    // the verification was interrupted
}

// ReportKind is what a what-if's Markdown report is, for the output
// policy.
var ReportKind = atomicfile.Report("what-if report")

// WriteText prints what a run printed, from r (a run's file read back):
// the profile, the table, the needs, the ladder's attribution and the
// checks.
func (r Report) WriteText(w io.Writer) error {
	p := r.Profile
	line := func() error { _, err := fmt.Fprintln(w); return err }
	// Every part is written, the first error returned.
	for _, err := range []error{WriteProfile(w, p), line(), WriteTable(w, p, r.Grid), WriteNeeds(w, p, Scenario{})} {
		if err != nil {
			return err
		}
	}
	if r.Ladder != nil {
		fmt.Fprintf(w, "\nthe caching ladder at the profile's setting:\n")
		if err := WriteLadder(w, p.ReadLadder(r.Ladder)); err != nil {
			return err
		}
	}
	if len(r.Checks) > 0 {
		fmt.Fprintf(w, "\nverification:\n\n")
		return WriteChecks(w, p, r.Checks)
	}
	return nil
}

// WriteFiles draws r's plot to plotPath and writes its Markdown report
// to report, each where its path is not "", saying where on stdout; a
// partial run's go beside complete ones (atomicfile.PartialPath).
func (r Report) WriteFiles(stdout io.Writer, report, plotPath string) error {
	p := r.Profile
	if plotPath != "" {
		path := plotPath
		if r.Partial {
			path = atomicfile.PartialPath(path)
		}
		if err := SavePlot(path, p, r.Grid.Workers, slices.Max(r.Grid.Cores), 1, r.Checks); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s\n", path)
	}
	if report == "" {
		return nil
	}
	path := report
	if r.Partial {
		path = atomicfile.PartialPath(path)
	}
	if err := atomicfile.WriteKind(path, ReportKind, r.writeMarkdown); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", path)
	return nil
}

// writeMarkdown writes r's Markdown report to f.
func (r Report) writeMarkdown(f io.Writer) error {
	p := r.Profile
	if r.Partial {
		fmt.Fprintf(f, "> **Partial run**: interrupted after %d of %d verification points; the table below holds only those.\n\n",
			len(r.Checks), len(r.Verify.Cores)*len(r.Verify.Workers)*len(r.Verify.StepScales))
	}
	if err := WriteMarkdown(f, p, r.Grid, r.Checks, r.Command); err != nil {
		return err
	}
	if r.Ladder == nil {
		return nil
	}
	title := fmt.Sprintf("%s transforms, %d workers, %d cores", r.Impl, p.Workers, p.Cores)
	return WriteLadderMarkdown(f, title, p.ReadLadder(r.Ladder))
}

// Printer prints a what-if run's output as the run measures it: the
// profile with its table and needs first, then the caching ladder's
// attribution (Show), and the checks once the run is over (WriteChecks).
// Printing goes on after an error, the first kept (Err).
type Printer struct {
	// W receives the output.
	W io.Writer
	// Grid is the predicted table's grid.
	Grid Grid
	// Runs is the runs of the profile and of each point, for the
	// headings.
	Runs int
	// Save, where not "", is the file the profile is saved to
	// (Profile.Write) once measured.
	Save string

	profile *Profile
	ladder  map[level.Level]float64
	err     error
}

// keep keeps err if it is the first.
func (pr *Printer) keep(err error) {
	if pr.err == nil {
		pr.err = err
	}
}

// Show takes the run's profile and the caching ladder's medians (each
// level's steps/s) at the profile's setting so far, each nil until the
// run has made it, and prints each once: the profile (saved, with Save),
// the table of its predictions over Grid and the needs at its own
// setting, then the ladder's attribution beside the model's.
func (pr *Printer) Show(p *Profile, ladder map[level.Level]float64) {
	if pr.profile == nil && p != nil {
		pr.profile = p
		if pr.Save != "" {
			pr.keep(p.Write(pr.Save))
		}
		pr.keep(WriteProfile(pr.W, *p))
		fmt.Fprintln(pr.W)
		pr.keep(WriteTable(pr.W, *p, pr.Grid))
		pr.keep(WriteNeeds(pr.W, *p, Scenario{}))
	}
	if pr.ladder == nil && ladder != nil && pr.profile != nil {
		pr.ladder = ladder
		fmt.Fprintf(pr.W, "\nthe caching ladder at the profile's setting (%s each):\n", report.Plural(pr.Runs, "run"))
		pr.keep(WriteLadder(pr.W, pr.profile.ReadLadder(ladder)))
	}
}

// Err is the first error of the printing so far.
func (pr *Printer) Err() error { return pr.err }

// WriteChecks prints the checked points, predicted against measured.
func (pr *Printer) WriteChecks(checks []Check) error {
	fmt.Fprintf(pr.W, "\nverification on this machine (%s each):\n\n", report.Plural(pr.Runs, "run"))
	return WriteChecks(pr.W, *pr.profile, checks)
}

// Report is the run's report as printed, once Show has had the profile:
// the profile, Grid, the ladder's medians and those of checks with runs
// (the file holds no others); the command, the verify grid, the
// transforms and Partial are the caller's to set.
func (pr *Printer) Report(checks []Check) Report {
	checks = slices.DeleteFunc(slices.Clone(checks), func(c Check) bool { return len(c.Runs) == 0 })
	return Report{Profile: *pr.profile, Grid: pr.Grid, Checks: checks, Ladder: pr.ladder}
}
