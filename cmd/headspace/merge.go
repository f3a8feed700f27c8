package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/merge"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

func init() {
	register(cli.Command{Name: "merge", Summary: "join the shard files of one sweep (--shard i/n) into one result file", Run: runMerge})
}

const mergeUsage = `
headspace merge --out FILE SHARD...

Joins the result files of one sweep run in shards (headspace ladder
--shard i/n --out SHARD, one per Slurm array task or Kubernetes index)
into FILE, the file a single-process run of the sweep would have written:
the same points and the same configuration lines, without those that
describe the sharding. The shards record their sweep, so merge knows
every point it should find.

It refuses, exit 1 with one line naming the keys, files or points:
shards whose configuration differs (another machine: cpu, cores, device;
another setup: steps, batch, …; another commit); a point measured in two
files or more often than the sweep's count; a result that is no point of
the sweep; and missing points or points short of runs, listed with their
shard, unless --partial is given, which writes what there is and records
the points it lacks in a "partial:" configuration line.

FILE is written atomically, and only over a results file (the output
policy of every --out). See docs/cluster.md.`

func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("merge", mergeUsage, stdout)
	out := fs.String("out", "", "merged result `file` (written atomically; only over a results file)")
	partial := fs.Bool("partial", false, "merge what there is when points are missing, and record them in a \"partial:\" configuration line")
	// Flags may follow the shard files (a shell glob, then --partial).
	var paths []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err // Parse has printed the usage
			}
			return cli.UsageError{Msg: err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	switch {
	case *out == "":
		return cli.Usagef("--out is required")
	case len(paths) == 0:
		return cli.Usagef("no shard files: want headspace merge --out FILE SHARD...")
	}
	for _, p := range paths {
		if same(p, *out) {
			return cli.Usagef("--out %s is one of the shard files", *out)
		}
	}
	var m *merge.Merged
	_, err := driver.Run(ctx, driver.Job{Settings: func() []resultfile.Config { return m.Config }, Measure: func(ctx context.Context, _ *driver.Hooks) ([]*benchfmt.Result, error) {
		shards := make([]merge.Shard, 0, len(paths))
		for _, p := range paths {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			rs, err := resultfile.Read(p)
			if err != nil {
				return nil, fmt.Errorf("reading shard: %s", firstLineOf(err))
			}
			shards = append(shards, merge.Shard{Path: p, Results: rs})
		}
		var err error
		if m, err = merge.Merge(shards, workloads.SweepPlan, *partial); err != nil {
			return nil, err
		}
		return m.Results, nil
	}}, driver.Output{Path: *out, Benchmarks: []string{"Ladder", "Node"}})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "merged %s of %s from %s into %s\n", report.Plural(len(m.Results), "result"), report.Plural(m.Points, "point"), report.Plural(len(paths), "shard file"), *out)
	if len(m.Incomplete) > 0 {
		fmt.Fprintf(stdout, "partial: %d of %d points missing or short of runs (recorded in the file's %q line)\n", len(m.Incomplete), m.Points, merge.PartialKey)
	}
	return nil
}

// same reports whether paths a and b name one file, by their cleaned
// absolute paths.
func same(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// firstLineOf is err's message up to its first line break (a file with
// several syntax errors reports one a line).
func firstLineOf(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
