package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/remedies"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// remoteCommand is what headspace remote's flags set beside the grid:
// its size, its directory and the files its report writes.
type remoteCommand struct {
	quick        bool
	dir          string
	report, plot string
}

// Flags are remote's: the grid is the registry's, --quick its Quick size.
func (r *Remote) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&r.cmd.quick, "quick", false, "the quick grid: every code path in seconds, no comparable numbers")
	fs.StringVar(&r.cmd.report, "report", "", "Markdown report `file`, e.g. notebooks/remote-remedies.md")
	fs.StringVar(&r.cmd.plot, "plot", "", "the figure, a .png `file`, e.g. notebooks/figures/remote-remedies.png")
	fs.StringVar(&r.cmd.dir, "dir", "", "`directory` for the datasets and the server's objects (default: the system's temporary directory)")
}

// File is driver.StreamPartial: each point on disk as it finishes; an
// interrupted run keeps them, marked partial, but reports nothing.
func (*Remote) File() driver.Mode { return driver.StreamPartial }

// Outputs are --report and --plot, a .png.
func (r *Remote) Outputs() ([]string, error) {
	if r.cmd.plot != "" && filepath.Ext(r.cmd.plot) != ".png" {
		return nil, cli.Usagef("--plot %s: want a .png file", r.cmd.plot)
	}
	return []string{"report", "plot"}, cli.CheckOutputs(cli.Output{Path: r.cmd.report, Kind: remoteReport}, cli.Figure(r.cmd.plot))
}

// Prepare picks the grid's size and prints each run as it finishes.
func (r *Remote) Prepare(_ context.Context, _, stderr io.Writer) (Setup, error) {
	if r.cmd.quick {
		cmd := r.cmd
		*r = Sized[Remote](Quick)
		r.cmd = cmd
	}
	dev := RemoteDevice()
	settings := append(append([]resultfile.Config(nil), dev.Settings...), r.Settings()...)
	if r.cmd.quick {
		settings = append(settings, resultfile.Config{Key: "size", Value: "quick"})
	}
	return Setup{Env: Env{Device: dev, Dir: r.cmd.dir, Result: func(rec *benchfmt.Result) error {
		v, _ := resultfile.Value(rec, "samples/s")
		fmt.Fprintf(stderr, "%s: %.0f samples/s\n", rec.Name, v)
		return nil
	}}, Settings: settings, CommandLine: true}, nil
}

// remedies is the outcome's runs as the remedies report reads them: a
// record's figure it does not hold is 0.
func (o RemoteOutcome) remedies() []remedies.Run {
	out := make([]remedies.Run, len(o.Runs))
	for i, r := range o.Runs {
		v := func(unit string) float64 { x, _ := resultfile.Value(r.Record, unit); return x }
		out[i] = remedies.Run{Format: r.Dataset.Format, Layout: r.Dataset.Layout, Level: r.Point.Level, RTT: r.RTT, Check: r.Check, Concurrency: r.Concurrency,
			SamplesPerSec: v("samples/s"), ReqMean: v("req-mean-ns"), BytesPerSample: v(RemoteBytesUnit), RequestsPerSample: v("requests/sample")}
	}
	return out
}

// Report builds the remedies report of o, prints the model's median
// error and writes the plot and the report where asked.
func (e *Remote) Report(o RemoteOutcome, stdout io.Writer) error {
	report, plotPath := e.cmd.report, e.cmd.plot
	r, err := remedies.Build(o.remedies(), o.Settings)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "device %.0f samples/s; the model's median error over the predicted points: %.1f%%\n",
		r.Device, remedies.MedianError(r))
	var figs []remedies.Figure
	if plotPath != "" {
		if err := remedies.SavePlot(plotPath, r); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s\n", plotPath)
		if report != "" {
			rel, err := filepath.Rel(filepath.Dir(report), plotPath)
			if err != nil {
				return err
			}
			figs = append(figs, remedies.Figure{Alt: "samples/s against requests in flight, a panel per dataset, a line per round trip (dashed: predicted)", Path: filepath.ToSlash(rel)})
		}
	}
	if report == "" {
		return nil
	}
	if err := atomicfile.WriteKind(report, remoteReport, func(w io.Writer) error { return remedies.WriteMarkdown(w, r, figs) }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", report)
	return nil
}

// remoteReport is what remote --report writes, for the output policy.
var remoteReport = atomicfile.Report("remote remedies report")
