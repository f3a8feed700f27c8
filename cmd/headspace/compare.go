package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/history"
	"github.com/headspace-bench/headspace/internal/cli"
)

// compare's and baseline's bounds, beside their flags (internal/cli's table).
var _ = cli.Declare(map[string]cli.Bound{
	"compare threshold":    {Lo: 0, Hi: 1},
	"compare alpha":        {Lo: 0, Hi: 1},
	"compare min-coverage": {Lo: 0, Hi: 1},
})

func init() {
	register(cli.Command{Name: "compare", Summary: "the regression gate: compare two result files as benchstat does", Run: runCompare})
	register(cli.Command{Name: "baseline", Summary: "print the baseline path of the machine a result file comes from", Run: runBaseline})
}

const compareUsage = `
headspace compare [flags] OLD NEW

Compares two benchmark-format result files as benchstat does (medians with
95% confidence intervals, Mann–Whitney U test) and prints the table. The
p-values of all the metrics compared are adjusted by Benjamini–Hochberg, so
--alpha is the false discovery rate: two runs of the same code raise no
alarm however many metrics the files hold. With --history DIR (a store of
earlier runs, see headspace history), a change must also exceed 3 times
the metric's spread between this machine's earlier runs. Exits 1 when any
metric with a known direction is significantly worse by more than
--threshold, naming each on its own line (with --history the table shows each
metric's spread between runs, run-to-run); 3 when there is none but a
metric would be one on runs that stayed disturbed (a "disturbed" value,
written by the ladder when a point's run-queue delay caused by other
processes stayed beyond its threshold: see docs/gate.md): a disturbed
point is never called a regression, the report asks for a rerun; 0
otherwise. Run conditions (run-delay-%, cpu-pressure-%, other-cores,
reruns, disturbed) are shown, never judged,
and a side measured on a machine that never got quiet (machine-busy) is
said first.
Exits 2, with one line and no verdict, when an input cannot be read (with
file and line), when either side holds no results, when no metric could
be compared, when a benchmark both files hold has a result without a
finite value of its headline metric (the first unit its results record,
passing over a leading ns/op: steps/s for the ladder), when NEW holds fewer than --min-coverage of OLD's benchmarks,
or when the files come from different machines or devices (device, gpu,
cpu, cores, goos, goarch; a file with no cpu: or cores: line names no
machine and counts as another one) unless --cross-machine is given (the
report then says so first). Each known unit's direction comes from
headspace's own unit table (steps/s higher, any time lower, …): a file
whose "Unit … better=" line says otherwise is refused, naming the unit.
Other units take the files' Unit lines. Metrics with too few samples to
judge are said plainly, not passed.`

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("compare", compareUsage, stdout)
	def := gate.DefaultOptions()
	threshold := fs.Float64("threshold", def.Threshold, "relative `change` in [0, 1) a significant regression must exceed (0.05 = 5%; 0: any)")
	alpha := fs.Float64("alpha", def.Alpha, "false discovery `rate` over the metrics tested (Benjamini–Hochberg), in (0, 1)")
	coverage := fs.Float64("min-coverage", def.MinCoverage, "`share` of OLD's benchmarks NEW must hold, in [0, 1]")
	cross := fs.Bool("cross-machine", false, "compare files from different machines or devices (the report says so first)")
	hist := fs.String("history", "", "a history store `DIR` (headspace history): a change must also exceed 3 × its metric's spread between NEW's machine's runs there")
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cli.Usagef("want two files, OLD and NEW; got %d arguments", fs.NArg())
	}
	opt := gate.Options{Threshold: *threshold, Alpha: *alpha, MinCoverage: *coverage, CrossMachine: *cross}
	if err := opt.Validate(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if *hist != "" {
		m, err := gate.ReadMachine(fs.Arg(1))
		if err != nil {
			return cli.UsageError{Msg: err.Error()}
		}
		if fi, err := os.Stat(*hist); err != nil || !fi.IsDir() {
			return cli.Usagef("--history %s: not a history store folder", *hist)
		}
		folder, err := history.MachineFolder(*hist, m)
		if err != nil {
			return cli.UsageError{Msg: err.Error()}
		}
		if opt.Spread, err = history.Spread(ctx, *hist, folder); err != nil {
			if ctx.Err() != nil {
				return err
			}
			return cli.UsageError{Msg: err.Error()}
		}
	}
	rep, err := gate.CompareFiles(fs.Arg(0), fs.Arg(1), opt)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if err := rep.Evidence(opt.MinCoverage); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if n := len(rep.Regressions()); n > 0 {
		return exitError{code: 1, msg: report.Plural(n, "regression") + " beyond the threshold"}
	}
	if n := len(rep.Disturbed()); n > 0 {
		return exitError{code: gate.ExitDisturbed, msg: report.Plural(n, "metric") + " worse beyond the threshold on disturbed runs: rerun on a quiet machine"}
	}
	return nil
}

const baselineUsage = `
headspace baseline FILE

Prints the path of the baseline that FILE gates against: results/baseline/
named after the device, the CPU model and the cores FILE was recorded with
(e.g. results/baseline/emulated-amd-epyc-2c.txt). A baseline belongs to one
machine; ci/gate.sh and make baseline use this path.`

func runBaseline(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("baseline", baselineUsage, stdout)
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cli.Usagef("want one result file; got %d arguments", fs.NArg())
	}
	path, err := gate.BaselinePath(fs.Arg(0))
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	_, err = fmt.Fprintln(stdout, path)
	return err
}
