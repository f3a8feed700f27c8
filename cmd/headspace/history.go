package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/history"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// history generate's bounds, beside its flags (internal/cli's table).
var _ = cli.Declare(map[string]cli.Bound{
	"history generate nights": {Lo: 1, Hi: history.MaxNights},
	"history generate series": {Lo: 1, Hi: history.MaxSeries},
})

func init() {
	register(cli.Command{Name: "history", Verbs: []string{"add", "report", "latest", "generate"}, Summary: "a results history across commits and machines: add runs, report change points as a page", Run: runHistory})
}

const historyUsage = `
headspace history add --store DIR [--date RFC3339] [--partial] FILE...
headspace history report --store DIR [--format html|text|markdown] [--out PAGE]
headspace history latest --store DIR FILE
headspace history generate --store DIR [--nights N] [--series S] [--seed N]

add puts result files into the store DIR (created if missing), each under
its machine (the key headspace baseline uses — device, GPU, CPU, cores —
and a short hash of that description, so no two machines share a folder;
a store's older folders without the hash go on taking their machine's
runs), its date (its date: line, else --date, else the file's time) and
its commit: DIR/<machine>/<date>-<commit>.txt, readable by all (0644).
The add is atomic, never replaces a file, and waits for another add to
the same machine (one at a time: DIR/.<machine>.lock). It refuses, with
exit 2 and one line, a file with no results or no commit, a file whose
header names more than one machine, a cores: line that is not a positive
number, a date later than now (10 minutes' leeway), a partial file (a
partial: line) unless --partial, a file already in the store, a file
whose setup differs from its machine's series, naming the keys, and a
machine folder that is a symbolic link. Files are added in the order
given; the first refusal stops the rest. The setup and duplicate checks
read the machine folder's index (DIR/<machine>/.index: each run's name,
size, hash and setup), not every earlier run, so an add takes the same
time however many runs the store holds; an index that is missing or
disagrees with the folder's files is rebuilt from them, with a line on
stderr saying why; one that is not a regular file (a named pipe, a
link) is refused, naming it. A file whose goos, goarch or go line
changes half-way is refused: a run is one build's.

report reads the store, finds the change points of every benchmark × unit
× machine series (E-Divisive means with a permutation test; each change
attributed to the first commit that shows it; a step in the last runs
too few to confirm — the test needs 14 points for a step half way — is
reported as a suspected step at the end of the series) and writes:
  html      one self-contained page (works offline and on GitHub Pages):
            the latest night's changes and the changed series first,
            the gate's comparison of any two runs (computed in the page),
            a chart per series with the median, its 95% band and the
            change points, drawn as it scrolls into view, zoomable to a
            range of nights; --out is required
  text      the change points only, one per line: machine, benchmark,
            unit, size in %, first commit and date; then the suspected
            steps; a field with a space or an unprintable character is
            quoted
  markdown  a summary for $GITHUB_STEP_SUMMARY or a pull-request comment
text and markdown go to stdout without --out; every field is escaped for
its format. SIGINT stops report and writes nothing. A store holding a
symbolic link in place of a machine folder or a run is refused.

latest prints the store's latest run of FILE's machine (nothing when the
store has none): what the nightly gate compares with. A --store that is
not a folder is refused, exit 2 and one line.

generate writes a made-up store for measuring the history at scale:
history.YearOfNights, 365 nightly runs × 200 series (6 samples, ±2%
noise, three 8% regressions at nights 91, 182 and 273), the same bytes
for the same flags; --nights and --series change its size (at most 3650
and 2000; the steps stay where they are, those beyond it dropped). See
docs/history.md.`

func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return cli.Usagef("want a subcommand: add, report, latest or generate (headspace history -h)")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fs := cli.NewFlagSet("history", historyUsage, stdout)
		fs.Usage()
		return flag.ErrHelp
	case "add":
		return runHistoryAdd(ctx, args[1:], stdout, stderr)
	case "report":
		return runHistoryReport(ctx, args[1:], stdout)
	case "latest":
		return runHistoryLatest(ctx, args[1:], stdout)
	case "generate":
		return runHistoryGenerate(ctx, args[1:], stdout)
	}
	return cli.Usagef("unknown subcommand %q: want add, report, latest or generate", args[0])
}

func runHistoryAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("history add", historyUsage, stdout)
	store := fs.String("store", "", "the history store `DIR` (a folder committed in git)")
	date := fs.String("date", "", "the run's `date` (RFC 3339) for files that record none; default: the file's modification time")
	partial := fs.Bool("partial", false, "accept partial files (a partial: line: an interrupted run or a partial merge)")
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	files := fs.Args() // FILE... follow the flags
	if *store == "" {
		return cli.Usagef("--store DIR is required")
	}
	if len(files) == 0 {
		return cli.Usagef("want one or more result files to add")
	}
	var when time.Time
	if *date != "" {
		t, err := time.Parse(time.RFC3339, *date)
		if err != nil {
			return cli.Usagef("--date %q: want RFC 3339, e.g. 2026-11-23T03:17:00Z", *date)
		}
		if err := history.CheckDate(t, time.Now()); err != nil {
			return cli.Usagef("--date %v", err)
		}
		when = t
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		run, err := history.Add(ctx, *store, f, history.AddOptions{Date: when, Partial: *partial, Log: stderr})
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return cli.UsageError{Msg: err.Error()}
		}
		fmt.Fprintf(stdout, "added %s: %s, commit %s, %s\n", f, run.Path, run.Commit, run.Date.Format(time.RFC3339))
	}
	return nil
}

func runHistoryReport(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("history report", historyUsage, stdout)
	store := fs.String("store", "", "the history store `DIR`")
	format := fs.String("format", "html", "`format`: html, text or markdown")
	out := fs.String("out", "", "write to `FILE` (atomically); required for html")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if *store == "" {
		return cli.Usagef("--store DIR is required")
	}
	switch *format {
	case "html", "text", "markdown":
	default:
		return cli.Usagef("--format %q: want html, text or markdown", *format)
	}
	if *format == "html" && *out == "" {
		return cli.Usagef("--format html needs --out PAGE.html")
	}
	if *out != "" {
		if err := cli.CheckOutputs(cli.Output{Path: *out, Kind: historyKind(*format)}); err != nil {
			return err
		}
	}
	if fi, err := os.Stat(*store); err != nil || !fi.IsDir() {
		return cli.Usagef("--store %s: not a folder (add a run first: headspace history add --store %s FILE)", *store, *store)
	}
	h, err := history.Load(ctx, *store, history.Options{})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return cli.UsageError{Msg: err.Error()}
	}
	if len(h.Machines) == 0 {
		return cli.Usagef("--store %s holds no runs (headspace history add --store %s FILE)", *store, *store)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	buf, err := renderHistory(ctx, h, *format)
	if err != nil {
		return err
	}
	// Nothing is written once interrupted, not even a complete page.
	if err := ctx.Err(); err != nil {
		return err
	}
	if *out == "" {
		_, err = stdout.Write(buf.Bytes())
		return err
	}
	if err := atomicfile.WriteKindBytes(*out, historyKind(*format), buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

// renderHistory is the history in format: an html page, text or markdown.
func renderHistory(ctx context.Context, h *history.History, format string) (bytes.Buffer, error) {
	var buf bytes.Buffer
	var err error
	switch format {
	case "html":
		err = h.WritePage(ctx, &buf, time.Now())
	case "text":
		err = h.WriteText(&buf)
	case "markdown":
		err = h.WriteMarkdown(&buf)
	}
	return buf, err
}

func runHistoryLatest(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("history latest", historyUsage, stdout)
	store := fs.String("store", "", "the history store `DIR`")
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if *store == "" {
		return cli.Usagef("--store DIR is required")
	}
	if fs.NArg() != 1 {
		return cli.Usagef("want one result file")
	}
	// A store that is not there is a wrong path, not a machine without
	// runs: printing nothing would read as "no run yet".
	if fi, err := os.Stat(*store); err != nil || !fi.IsDir() {
		return cli.Usagef("--store %s: not a folder (add a run first: headspace history add --store %s FILE)", *store, *store)
	}
	m, err := gate.ReadMachine(fs.Arg(0))
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	folder, err := history.MachineFolder(*store, m)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	last, ok, err := history.Latest(*store, folder)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if ok {
		fmt.Fprintln(stdout, last.Path)
	}
	return ctx.Err()
}

// historyKind is what report writes in format (html, text or markdown):
// a report of its own kind, replaced only by another (the output policy
// is internal/atomicfile's).
func historyKind(format string) atomicfile.Kind {
	return atomicfile.Report("history " + format + " report")
}

func runHistoryGenerate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("history generate", historyUsage, stdout)
	store := fs.String("store", "", "the new store `DIR`")
	g := history.YearOfNights()
	fs.IntVar(&g.Nights, "nights", g.Nights, "`N` nightly runs")
	fs.IntVar(&g.Series, "series", g.Series, "`S` benchmark × unit series")
	fs.Uint64Var(&g.Seed, "seed", g.Seed, "the noise's and commits' `seed`")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if *store == "" {
		return cli.Usagef("--store DIR is required")
	}
	if g.Nights < 1 || g.Series < 1 {
		return cli.Usagef("--nights %d --series %d: want at least one of each", g.Nights, g.Series)
	}
	var steps []history.Step
	for _, st := range g.Steps {
		if st.Night < g.Nights && st.Bench < g.Benchmarks() {
			steps = append(steps, st)
		}
	}
	g.Steps = steps
	if err := g.Write(ctx, *store); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return cli.UsageError{Msg: err.Error()}
	}
	fmt.Fprintf(stdout, "wrote %d runs × %d series to %s (%d injected steps)\n", g.Nights, g.Series, *store, len(g.Steps))
	return nil
}
