package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/headspace-bench/headspace/history"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

func init() {
	register(command{name: "history", summary: "a results history across commits and machines: add runs, report change points as a page", run: runHistory})
}

const historyUsage = `
headspace history add --store DIR [--date RFC3339] FILE...
headspace history report --store DIR [--format html|text|markdown] [--out PAGE]

add puts result files into the store DIR (created if missing), each under
its machine (the key headspace baseline uses: device, GPU, CPU, cores),
its date (its date: line, else the file's time) and its commit:
DIR/<machine>/<date>-<commit>.txt. The add is atomic and never replaces a
file. It refuses, with exit 2 and one line, a file with no results or no
commit, a file already in the store, and a file whose setup differs from
its machine's series, naming the keys. Files are added in the order given;
the first refusal stops the rest.

report reads the store, finds the change points of every benchmark × unit
× machine series (E-Divisive means with a permutation test; each change
attributed to the first commit that shows it) and writes:
  html      one self-contained page (works offline and on GitHub Pages):
            the latest night's changes, compare's table for any two runs,
            a chart per series with the median, its 95% band and the
            change points; --out is required
  text      the change points only, one per line: machine, benchmark,
            unit, size in %, first commit and date
  markdown  a summary for $GITHUB_STEP_SUMMARY or a pull-request comment
text and markdown go to stdout without --out. See docs/history.md.`

func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: add or report (headspace history -h)")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fs := newFlagSet("history", historyUsage, stdout)
		fs.Usage()
		return flag.ErrHelp
	case "add":
		return runHistoryAdd(ctx, args[1:], stdout)
	case "report":
		return runHistoryReport(ctx, args[1:], stdout)
	}
	return usagef("unknown subcommand %q: want add or report", args[0])
}

func runHistoryAdd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("history add", historyUsage, stdout)
	store := fs.String("store", "", "the history store `DIR` (a folder committed in git)")
	date := fs.String("date", "", "the run's `date` (RFC 3339) for files that record none; default: the file's modification time")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	files := fs.Args() // FILE... follow the flags
	if *store == "" {
		return usagef("--store DIR is required")
	}
	if len(files) == 0 {
		return usagef("want one or more result files to add")
	}
	var when time.Time
	if *date != "" {
		t, err := time.Parse(time.RFC3339, *date)
		if err != nil {
			return usagef("--date %q: want RFC 3339, e.g. 2026-11-23T03:17:00Z", *date)
		}
		when = t
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		run, err := history.Add(*store, f, when)
		if err != nil {
			return usageError{err.Error()}
		}
		fmt.Fprintf(stdout, "added %s: %s, commit %s, %s\n", f, run.Path, run.Commit, run.Date.Format(time.RFC3339))
	}
	return nil
}

func runHistoryReport(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("history report", historyUsage, stdout)
	store := fs.String("store", "", "the history store `DIR`")
	format := fs.String("format", "html", "`format`: html, text or markdown")
	out := fs.String("out", "", "write to `FILE` (atomically); required for html")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *store == "" {
		return usagef("--store DIR is required")
	}
	switch *format {
	case "html", "text", "markdown":
	default:
		return usagef("--format %q: want html, text or markdown", *format)
	}
	if *format == "html" && *out == "" {
		return usagef("--format html needs --out PAGE.html")
	}
	if *out != "" {
		if err := checkOutputs(output{*out, historyKind(*format)}); err != nil {
			return err
		}
	}
	if fi, err := os.Stat(*store); err != nil || !fi.IsDir() {
		return usagef("--store %s: not a folder (add a run first: headspace history add --store %s FILE)", *store, *store)
	}
	h, err := history.Load(*store, history.Options{})
	if err != nil {
		return usageError{err.Error()}
	}
	if len(h.Machines) == 0 {
		return usagef("--store %s holds no runs (headspace history add --store %s FILE)", *store, *store)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var buf bytes.Buffer
	switch *format {
	case "html":
		err = h.WritePage(&buf, time.Now())
	case "text":
		err = h.WriteText(&buf)
	case "markdown":
		err = h.WriteMarkdown(&buf)
	}
	if err != nil {
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

// historyKind is what report writes in format (html, text or markdown):
// a report of its own kind, replaced only by another (the output policy
// is internal/atomicfile's).
func historyKind(format string) atomicfile.Kind {
	return atomicfile.Report("history " + format + " report")
}
