package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/headspace-bench/headspace/harness/results"
)

func init() {
	register(command{name: "compare", summary: "the regression gate: compare two result files as benchstat does", run: runCompare})
}

const compareUsage = `
headspace compare [flags] OLD NEW

Compares two benchmark-format result files as benchstat does (medians with
95% confidence intervals, Mann–Whitney U test at --alpha) and prints the
table. Exits 1 when any metric with a known direction is significantly
worse by more than --threshold, naming each; 0 otherwise; 2 when an input
cannot be read (with file and line). Directions come from the files'
"Unit … better=" lines and the known units (sec/op lower, steps/s higher).
Metrics with too few samples to judge are said plainly, not passed.`

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compare", compareUsage, stdout)
	threshold := fs.Float64("threshold", 0.05, "relative `change` a significant regression must exceed (0.05 = 5%)")
	alpha := fs.Float64("alpha", 0.05, "significance `level` of the Mann–Whitney U test")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err // Parse has printed the usage
		}
		return usageError{err.Error()}
	}
	if fs.NArg() != 2 {
		return usagef("want two files, OLD and NEW; got %d arguments", fs.NArg())
	}
	if !(*threshold > 0) || !(*alpha > 0 && *alpha < 1) {
		return usagef("--threshold must be > 0 (e.g. 0.001 for any significant slowdown) and --alpha in (0, 1)")
	}
	rep, err := results.CompareFiles(fs.Arg(0), fs.Arg(1), results.GateOptions{Threshold: *threshold, Alpha: *alpha})
	if err != nil {
		return usageError{err.Error()}
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if n := len(rep.Regressions()); n > 0 {
		return exitError{code: 1, msg: plural(n, "regression") + " beyond the threshold"}
	}
	return nil
}
