package peer

// What headspace peer prints and writes of a comparison, the same from a
// run and from its result file (ReportOf): the settings' line and the
// table, the plots and the Markdown report; the ladder's table; and the
// index of a dataset on disk that both sides read.

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// ReportKind is what a peer comparison's Markdown report is, for the
// output policy.
var ReportKind = atomicfile.Report("peer report")

// WriteText prints the settings' line and the table of r's rows.
func (r Report) WriteText(w io.Writer) error {
	s := r.Settings
	fmt.Fprintf(w, "raw %dx%d, crop %d, batch %d, %d batches a run, %s; medians\n\n",
		s.Width, s.Height, s.Crop, s.Batch, s.Batches, report.Plural(r.Count, "round"))
	return WriteTable(w, r.Rows)
}

// WriteFiles draws r's plots to plotPrefix-throughput and plotPrefix-ttfb
// (.png and .svg) and writes its Markdown report to report, each where
// its path is not "", saying where on stdout; the report embeds the
// PNGs by their path relative to it.
func (r Report) WriteFiles(stdout io.Writer, report, plotPrefix string) error {
	var plots []string
	if plotPrefix != "" {
		s := r.Settings
		title := fmt.Sprintf("raw %dx%d, crop %d, batch %d", s.Width, s.Height, s.Crop, s.Batch)
		var err error
		if plots, err = Plots(r.Rows, plotPrefix, title); err != nil {
			return err
		}
		for _, path := range plots {
			fmt.Fprintf(stdout, "plot: %s\n", path)
		}
	}
	if report == "" {
		return nil
	}
	for i, name := range PlotNames {
		if len(plots) < 2*(i+1) {
			break
		}
		rel, err := filepath.Rel(filepath.Dir(report), plots[2*i]) // the PNG
		if err != nil {
			return err
		}
		alt := map[string]string{"throughput": "samples/s against workers", "ttfb": "time to first batch against workers"}[name]
		r.Figures = append(r.Figures, Figure{Alt: alt, Path: filepath.ToSlash(rel)})
	}
	if err := atomicfile.WriteKind(report, ReportKind, func(w io.Writer) error { return WriteMarkdown(w, r) }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", report)
	return nil
}

// IndexFor is the index the peer reads a dataset on disk in dir by: ""
// for a dataset headspace wrote (the peer reads its manifest), else our
// index of it, saved to the cache (never into the dataset) and named by
// its path, so that both sides read the same files.
func IndexFor(ctx context.Context, dir string) (string, error) {
	if kind, _ := ondisk.DetectKind(dir); kind == "headspace" {
		return "", nil
	}
	x, _, err := ondisk.LoadIndex(ctx, dir)
	if err != nil {
		return "", err
	}
	return ondisk.SaveIndex(x)
}

// WriteText prints the ladder comparison's settings and the table of
// r's medians, each level's steps/s and its ratio to the device level.
func (c LadderConfig) WriteText(w io.Writer, r LadderResult) error {
	s := c.Settings
	fmt.Fprintf(w, "raw %dx%d, crop %d, batch %d, %d workers, emulated step %v, %s of %s; medians\n\n",
		s.Width, s.Height, s.Crop, s.Batch, s.Workers, s.Device.Step, report.Plural(c.Count, "round"), report.Plural(s.Steps, "measured step"))
	return WriteLadderTable(w, SummarizeLadder(r.Measurements))
}
