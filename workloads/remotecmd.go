package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/remedies"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Command is headspace remote.
func (Remote) Command() cli.Command {
	return cli.Command{Name: "remote", Summary: "the remedies of data in a bucket: samples/s and headspace against concurrency × round trip × layout × format, and the fetch model's predictions checked", Runs: []string{"Remote"}, Run: runRemote}
}

const remoteUsage = `
Measures the remedies of data in a bucket (issue 34, items 5 and 6): it
starts the pinned S3 server (versitygw, built by ci/versitygw.sh) on
127.0.0.1, writes and uploads raw and JPEG datasets as one object per
sample, ~4 MB and ~64 MB shards (each read member by member with ranged
GETs and whole, one GET a shard), and runs level none through an emulated
link of each round trip (0, 5, 20, 80 ms) at each concurrency (1, 4, 16,
64); level local (the objects on local disk) once per dataset, level device
once, and two checks at links off the grid. The fetch model (package
fetchmodel) is calibrated on the round-trip-0 points and predicts the rest;
the report gives where each remedy stops helping and the model's median
error. --from rebuilds the report and the plot from a result file,
measuring nothing. An interrupted run (SIGINT: exit 130) keeps what it
finished, marked partial, and never a complete --out's place.
`

func runRemote(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("remote", remoteUsage, stdout)
	quick := fs.Bool("quick", false, "the quick grid: every code path in seconds, no comparable numbers")
	out := fs.String("out", "", "benchmark-format result `file`, written as each point finishes, marked partial until the run completes (beside it as NAME.partial.txt where it holds a complete run, which SIGINT keeps)")
	report := fs.String("report", "", "Markdown report `file`, e.g. notebooks/remote-remedies.md")
	plotPath := fs.String("plot", "", "the figure, a .png `file`, e.g. notebooks/figures/remote-remedies.png")
	dir := fs.String("dir", "", "`directory` for the datasets and the server's objects (default: the system's temporary directory)")
	from := fs.String("from", "", "rebuild --report and --plot from the result `file` a run's --out wrote, measuring nothing")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if *plotPath != "" && filepath.Ext(*plotPath) != ".png" {
		return cli.Usagef("--plot %s: want a .png file", *plotPath)
	}
	if err := cli.CheckOutputs(cli.Output{Path: *report, Kind: remoteReport}, cli.Figure(*plotPath)); err != nil {
		return err
	}
	if *from != "" {
		return rebuildRemote(fs, *from, *report, *plotPath, stdout)
	}
	exp := Sized[Remote](Default)
	if *quick {
		exp = Sized[Remote](Quick)
	}
	dev := RemoteDevice()
	config := driver.Settings("emulated", dev.Settings, exp.Settings(),
		[]resultfile.Config{{Key: "command", Value: cli.CommandLine("headspace remote", args)}})
	if *quick {
		config = append(config, resultfile.Config{Key: "size", Value: "quick"})
	}
	// Each point is printed, then on disk; an interrupted run keeps them
	// in the partial file, but its report needs every point: it reports
	// nothing.
	var o RemoteOutcome
	run, err := driver.Run(ctx, driver.Job{File: driver.StreamPartial, Settings: func() []resultfile.Config { return config },
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			var recs []*benchfmt.Result
			var err error
			o, err = exp.MeasureEach(ctx, Env{Device: dev, Dir: *dir}, func(r RemoteRun) error {
				v, _ := resultfile.Value(r.Record, "samples/s")
				fmt.Fprintf(stderr, "%s: %.0f samples/s\n", r.Record.Name, v)
				recs = append(recs, r.Record)
				return h.Result(r.Record)
			})
			return recs, err
		}}, driver.Output{Path: *out, Benchmarks: []string{"Remote"}, Fresh: true})
	switch {
	case err != nil && !run.Interrupted:
		return err
	case run.Interrupted && (*out == "" || len(run.Records) == 0):
		return run.Err("") // nothing finished: --out is as it was
	case run.Interrupted:
		kept := fmt.Sprintf("the %d results finished are in %s, marked partial", len(run.Records), run.Path)
		if run.Path != *out {
			kept += "; " + *out + " is kept as it was"
		}
		return run.Err(kept)
	}
	if *out != "" {
		fmt.Fprintf(stdout, "results: %s\n", *out)
		if !atomicfile.InPlace(*out) {
			// The report is rebuilt from the file, as --from would.
			recs, err := resultfile.Read(*out)
			if err != nil {
				return err
			}
			if o, err = RemoteCodec.Decode(recs); err != nil {
				return err
			}
			config = fileConfig(recs)
		}
	}
	return writeRemote(stdout, o, config, *report, *plotPath)
}

// rebuildRemote is remote --from: the report and plot of a result file.
func rebuildRemote(fs *flag.FlagSet, from, report, plotPath string, stdout io.Writer) error {
	if err := cli.FromOnly(fs, "report", "plot"); err != nil {
		return err
	}
	recs, err := resultfile.Read(from)
	if err != nil {
		return cli.FromErr(from, err)
	}
	o, err := RemoteCodec.Decode(recs)
	if err == nil {
		_, err = remedies.Build(o.remedies(), fileConfig(recs))
	}
	if err != nil {
		// The file is not a remote run's: bad input, as a missing file
		// is.
		return cli.Usagef("--from %s: not a result file of headspace remote --out (%s)", from, strings.TrimPrefix(err.Error(), "remedies: "))
	}
	return writeRemote(stdout, o, fileConfig(recs), report, plotPath)
}

// fileConfig is the configuration lines of a file's records.
func fileConfig(recs []*benchfmt.Result) []resultfile.Config {
	if len(recs) == 0 {
		return nil
	}
	var out []resultfile.Config
	for _, c := range recs[0].Config {
		if c.File {
			out = append(out, resultfile.Config{Key: c.Key, Value: string(c.Value)})
		}
	}
	return out
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

// writeRemote builds the report of o, prints the model's median error
// and writes the plot and the report where asked.
func writeRemote(stdout io.Writer, o RemoteOutcome, config []resultfile.Config, report, plotPath string) error {
	r, err := remedies.Build(o.remedies(), config)
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
