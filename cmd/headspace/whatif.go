package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/whatif"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/workloads"
)

func init() {
	register(command{name: "whatif", summary: "predict steps/s for other cores, workers and step times; --verify checks it", runs: []workloads.Experiment{workloads.WhatIf{}}, run: runWhatIf})
}

const whatifUsage = `
Profiles the full input pipeline once (--count runs, each cost's median):
each stage's CPU time per sample (the thread CPU clock of every task, on
Linux), the host's own CPU per sample, the upload and the step. From that
profile, or from one saved with --save and read with --stats, a CPU-budget
model predicts steps/s as the smallest of the device's rate, the copy's,
what the cores can feed, and each stage's workers; it prints a table over
--cores, --at-workers and --at-steps (step multipliers: 0.5 is a model twice
as fast), the cores and workers needed to be model-bound, and, at the
profile's own setting, the speed-up each stage would need alone, with the
caching ladder's attribution (predicted from the same costs) beside the
model's. --ladder also runs the caching ladder itself at the profile's
setting and sets the measured ladder's attribution beside the model's: the
ladder blames the stage whose addition costs throughput, the model the stage
that holds the binding resource, and where one stage holds most of the cores
and another tips them over, the two differ.

--verify runs the points of --verify-cores (GOMAXPROCS), --verify-workers and
--verify-steps on this machine and prints predicted against measured steps/s
with the error, the median and the worst, and the likely reason for each
point off by more than 15%. --out keeps every run in Go benchmark format,
--report a Markdown section, --plot a figure of predicted steps/s against
cores with the device's ceiling (and the measured points).

--from FILE rebuilds the report, --plot and the printed tables from a
result file that whatif --out wrote, measuring nothing: the command, the
profile and the grids come from the file's configuration lines, the
checked points and the ladder from its runs (notebooks/whatif.md from
results/whatif-<commit>.txt). A file from before those lines were
recorded is rebuilt from its WhatIf/profile records where every recorded
prediction agrees with them (the command shown as not recorded, the grid
the defaults), and refused otherwise.

--accelerators 1,2,4,8 turns it to a node of accelerators (headspace node,
docs/node.md): one rank alone is profiled (its AU, its CPU per sample, the
other processes' cores), and the model predicts every rank's AU at each N
(the host's cores shared by N ranks, none faster than one alone; the
ranks' memory estimate; the --link's caps), the largest N at --min-au,
the resource that runs out first, and what --target N would take (cores,
Gbit/s, requests/s). --verify measures the node at each N and prints the
error on AU, the median and the worst; --out keeps the runs and the
predictions, --from rebuilds the output, --report and --plot from it.

--data DIR reads a dataset on disk (headspace dataset write, an ImageFolder
or WebDataset shards; docs/real-data.md): the load stage
becomes fetch then decode, each with its statistics; --page-cache and
--max-failures as in headspace ladder.

With a training command after --, as in

    headspace whatif --verify -- python3 train.py

it runs the headspace analysis on that command (40 steps from its loader,
30 cached; docs/own-loop.md) and models its loader from the measured
stages: each worker's time a batch (less its wait for a core), its CPU
time, the loop's own CPU and the step on cached batches. It prints the
workers and cores that would make the model step the bound, the steps/s
predicted there, and the speed-up the slowest stage needs to keep the
script's worker count; --verify runs the script as it is with the
predicted worker count (and with its own) for --steps steps and prints
measured beside predicted with the error; --out records the model and the
checks (BenchmarkWhatIf/model/script=…, BenchmarkWhatIf/check/script=…/
workers=N with steps/s and predicted-steps/s).`

func runWhatIf(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := workloads.Sized[workloads.WhatIf](workloads.Default)
	fs := newFlagSet("whatif", whatifUsage, stdout)
	var pf pipelineFlags
	pf.register(fs)
	// The profile and its check run many times: smaller defaults than the
	// ladder's document-sized ones.
	for name, v := range map[string]string{"batch": fmt.Sprint(def.Pipeline.Batch), "raw-size": fmt.Sprint(def.Pipeline.Dataset.Width),
		"crop": fmt.Sprint(def.Pipeline.Transforms.Crop), "step": def.Step.String()} {
		f := fs.Lookup(name)
		if err := f.Value.Set(v); err != nil {
			return err
		}
		f.DefValue = v
	}
	impl := fs.String("transforms", def.Pipeline.Impl, "transform `implementation`: naive or fast")
	placement := fs.String("placement", "host", "`placement` of ConvertColor and Scale: host or device")
	workers := fs.Int("workers", def.Pipeline.Workers, "the profile's loader `workers`")
	cores := fs.Int("profile-cores", 0, "GOMAXPROCS of the profiling run (default: the process's)")
	steps := fs.Int("steps", def.Train.Steps, "measured training `steps` per run")
	warmup := fs.Int("warmup", def.Train.Warmup, "`steps` run before measuring")
	count := fs.Int("count", def.Count, "`runs` of the profile and of each checked point")
	stats := fs.String("stats", "", "read the profile from `file` (saved with --save) instead of running it")
	save := fs.String("save", "", "save the profile to `file` (JSON, written atomically)")
	atCores := fs.String("cores", "1,2,4,8,16", "comma-separated core `counts` of the table")
	atWorkers := fs.String("at-workers", "1,2,4,8,16", "comma-separated worker `counts` of the table")
	atSteps := fs.String("at-steps", "0.5,1,2", "comma-separated step `multipliers` of the table")
	runLadder := fs.Bool("ladder", false, "also run the caching ladder at the profile's setting and set its attribution beside the model's")
	verify := fs.Bool("verify", false, "run the --verify-* points and set measured beside predicted")
	vCores := fs.String("verify-cores", joinInts(def.Verify.Cores), "comma-separated GOMAXPROCS `counts` to check")
	vWorkers := fs.String("verify-workers", joinInts(def.Verify.Workers), "comma-separated worker `counts` to check")
	vSteps := fs.String("verify-steps", joinFloats(def.Verify.StepScales), "comma-separated step `multipliers` to check")
	out := fs.String("out", "", "benchmark-format result `file` of the runs (written atomically)")
	force := fs.Bool("force", false, "let --out replace a results file holding more results")
	report := fs.String("report", "", "write the what-if section in Markdown to `file` (atomically)")
	plotPath := fs.String("plot", "", "write predicted steps/s against cores to `file` (.png or .svg)")
	from := fs.String("from", "", "rebuild --report, --plot and the tables from the results `file` a whatif --out wrote, measuring nothing")
	accFlag := fs.String("accelerators", "", "comma-separated accelerator `counts`: predict each rank's AU in a node of N accelerators from one rank alone (docs/node.md); --verify measures each")
	minAU := fs.Float64("min-au", node.DefaultMinAU, "with --accelerators: an accelerator is kept busy at this `AU` or more")
	target := fs.Int("target", 0, "with --accelerators: say what a node of `N` accelerators would take (default: the largest of --accelerators)")
	var of ownFlags
	of.registerLadder(fs)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if hasCommand(fs, args) {
		return runOwnWhatIf(ctx, fs, &of, *verify, *steps, *out, *force, stdout, stderr)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkOwnFlags(fs, false); err != nil {
		return err
	}
	if *accFlag != "" || (*from != "" && whatif.IsNodeFile(*from)) {
		a := whatIfNode{pf: &pf, workers: *workers, impl: *impl, steps: *steps, warmup: *warmup, count: *count,
			minAU: *minAU, minAUSet: pf.data.set("min-au"), target: *target, verify: *verify, out: *out, report: *report, plotPath: *plotPath,
			from: *from, force: *force, command: "headspace " + commandLine("whatif", args)}
		if *from == "" {
			var err error
			if a.accelerators, err = parseInts("--accelerators", *accFlag); err != nil {
				return err
			}
		}
		defer pf.data.close()
		return runWhatIfNode(ctx, a, stdout, stderr)
	}
	if *from != "" {
		return rebuildWhatIf(fs, *from, *report, *plotPath, stdout)
	}
	defer pf.data.close() // the --link, if one was started
	w := def
	var err error
	if _, err := parseList("--transforms", *impl, transforms.Names); err != nil {
		return err
	}
	pls, err := parsePlacements(*placement)
	if err != nil {
		return err
	}
	if len(pls) != 1 {
		return usagef("--placement: one placement, not %d", len(pls))
	}
	switch {
	case *workers <= 0:
		return usagef("--workers %d must be positive", *workers)
	case *cores < 0:
		return usagef("--profile-cores %d must not be negative", *cores)
	case *steps <= 0:
		return usagef("--steps %d must be positive", *steps)
	case *warmup < 0:
		return usagef("--warmup %d must not be negative", *warmup)
	case *count <= 0:
		return usagef("--count %d must be positive", *count)
	case *stats != "" && *save != "":
		return usagef("--save writes a profile this run measures; with --stats none is measured")
	case *stats != "" && *runLadder:
		return usagef("--ladder runs the pipeline the profile measured; with --stats there is none to run")
	}
	if w.Pipeline, err = pf.config(ctx, *workers, *impl); err != nil {
		return err
	}
	w.Pipeline.Placement = pls[0]
	w.Step, w.Cores, w.Train.Steps, w.Train.Warmup, w.Count = pf.step, *cores, *steps, *warmup, *count
	var g whatif.Grid
	if g.Cores, err = parseInts("--cores", *atCores); err != nil {
		return err
	}
	if g.Workers, err = parseInts("--at-workers", *atWorkers); err != nil {
		return err
	}
	if g.StepScales, err = parseFloats("--at-steps", *atSteps); err != nil {
		return err
	}
	if w.Verify.Cores, err = parseInts("--verify-cores", *vCores); err != nil {
		return err
	}
	if w.Verify.Workers, err = parseInts("--verify-workers", *vWorkers); err != nil {
		return err
	}
	if w.Verify.StepScales, err = parseFloats("--verify-steps", *vSteps); err != nil {
		return err
	}
	if *plotPath != "" && !strings.HasSuffix(*plotPath, ".png") && !strings.HasSuffix(*plotPath, ".svg") {
		return usagef("--plot %q: want a .png or .svg file", *plotPath)
	}
	if err := w.Validate(); err != nil {
		return usageError{err.Error()}
	}
	for _, n := range w.Verify.Workers {
		if err := inRange("--verify-workers", n, 1, loader.MaxWorkers); err != nil {
			return err
		}
	}
	for _, n := range w.Verify.Cores {
		if err := inRange("--verify-cores", n, 1, 4096); err != nil {
			return err
		}
	}
	resultsOut := driver.Output{Path: *out, Benchmarks: []string{"WhatIf", "Ladder"}, Force: *force, Beside: true}
	if err := firstErr(checkOutputs(output{*save, whatif.FileKind}, output{*report, whatifReport}, figure(*plotPath)),
		driver.Check(resultsOut)); err != nil {
		return err
	}
	if !pf.scalable() && *verify && slices.ContainsFunc(w.Verify.StepScales, func(m float64) bool { return m != 1 }) {
		return usagef("--device %s: the step cannot be scaled; use --verify-steps 1", pf.dev)
	}
	env := workloads.Env{}
	if env.Device, err = pf.device(ctx); err != nil {
		return err
	}
	if *stats != "" {
		p, err := whatif.Read(*stats)
		if err != nil {
			return usageError{err.Error()}
		}
		w.Profiled = &p
	}
	w.WithLadder = *runLadder
	if !*verify {
		w.Verify = whatif.Grid{}
	}

	// What the run measures is printed as it comes: the profile and its
	// predictions first, then the ladder's attribution; the checks after
	// the run, which may be interrupted.
	var (
		p        whatif.Profile
		checks   []whatif.Check
		gotCheck bool
		printErr error
	)
	keep := func(err error) {
		if printErr == nil {
			printErr = err
		}
	}
	env.Details.Profile = func(prof whatif.Profile) {
		p = prof
		if *save != "" && w.Profiled == nil {
			keep(p.Write(*save))
		}
		keep(whatif.WriteProfile(stdout, p))
		fmt.Fprintln(stdout)
		keep(whatif.WriteTable(stdout, p, g))
		keep(whatif.WriteNeeds(stdout, p, whatif.Scenario{}))
	}
	var ladderMed workloads.WhatIfLadder
	env.Details.WhatIfLadder = func(med workloads.WhatIfLadder) {
		ladderMed = med
		r := p.ReadLadder(med)
		fmt.Fprintf(stdout, "\nthe caching ladder at the profile's setting (%s each):\n", plural(w.Count, "run"))
		keep(whatif.WriteLadder(stdout, r))
	}
	env.Details.Checks = func(c []whatif.Check) { checks, gotCheck = c, true }
	s := driver.Begin(nil, stderr, w.Runs(), func(*benchfmt.Result) error { return printErr })
	env.Start, env.Result = s.Start, s.Result
	recs, runErr := w.Run(ctx, env)
	if err := s.End(runErr); err != nil {
		return err
	}
	if s.Interrupted() && !gotCheck {
		return runErr // before the checks: nothing to keep
	}
	if printErr != nil {
		return printErr
	}
	if *verify {
		fmt.Fprintf(stdout, "\nverification on this machine (%s each):\n\n", plural(w.Count, "run"))
		if err := whatif.WriteChecks(stdout, p, checks); err != nil {
			return err
		}
	}
	// An interrupted verification is partial: its files say so, and a
	// complete file already at a path is kept, the partial one written
	// beside it (atomicfile.PartialPath, resultfile.Replace.Partial).
	partial := s.Interrupted()
	// The report holds the points with runs, as the file does.
	checks = slices.DeleteFunc(checks, func(c whatif.Check) bool { return len(c.Runs) == 0 })
	rep := workloads.WhatIfReport{Command: "headspace whatif " + strings.Join(args, " "), Profile: p, Grid: g, Verify: w.Verify,
		Impl: w.Pipeline.Impl, Checks: checks, Ladder: ladderMed, Partial: partial}
	if *out != "" && len(recs) > 0 {
		// Everything the report states goes into the file, so that
		// --from rebuilds it (workloads.ReadWhatIf).
		lines, err := workloads.WhatIfReportSettings(rep)
		if err != nil {
			return err
		}
		wrote, err := s.Write(resultsOut, driver.Settings(pf.dev, w.Settings(), lines), recs)
		if err != nil {
			return err
		}
		keptNote(stdout, *out, wrote)
		fmt.Fprintf(stdout, "\nresults: %s%s\n", wrote, map[bool]string{true: " (partial: interrupted)"}[partial])
	}
	if err := writeWhatIfOutputs(stdout, rep, *report, *plotPath); err != nil {
		return err
	}
	return s.Err("the table shows the points checked before it")
}

// writeWhatIfOutputs draws r's plot (with a path) and writes its
// Markdown report (with a path); a partial run's go beside complete ones
// (atomicfile.PartialPath).
func writeWhatIfOutputs(stdout io.Writer, r workloads.WhatIfReport, report, plotPath string) error {
	p := r.Profile
	if plotPath != "" {
		path := plotPath
		if r.Partial {
			path = atomicfile.PartialPath(path)
		}
		if err := whatif.SavePlot(path, p, r.Grid.Workers, slices.Max(r.Grid.Cores), 1, r.Checks); err != nil {
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
	err := atomicfile.WriteKind(path, whatifReport, func(f io.Writer) error {
		if r.Partial {
			fmt.Fprintf(f, "> **Partial run**: interrupted after %d of %d verification points; the table below holds only those.\n\n",
				len(r.Checks), len(r.Verify.Cores)*len(r.Verify.Workers)*len(r.Verify.StepScales))
		}
		if err := whatif.WriteMarkdown(f, p, r.Grid, r.Checks, r.Command); err != nil {
			return err
		}
		if r.Ladder == nil {
			return nil
		}
		title := fmt.Sprintf("%s transforms, %d workers, %d cores", r.Impl, p.Workers, p.Cores)
		return whatif.WriteLadderMarkdown(f, title, p.ReadLadder(r.Ladder))
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", path)
	return nil
}

// rebuildWhatIf is whatif --from: the tables, the report and the plot
// rebuilt from a results file (workloads.ReadWhatIf), measuring nothing.
// The flags that set a measurement or a table are refused with it: the
// file's own settings are the report's.
func rebuildWhatIf(fs *flag.FlagSet, from, report, plotPath string, stdout io.Writer) error {
	if err := fromOnly(fs, "report", "plot"); err != nil {
		return err
	}
	if plotPath != "" && !strings.HasSuffix(plotPath, ".png") && !strings.HasSuffix(plotPath, ".svg") {
		return usagef("--plot %q: want a .png or .svg file", plotPath)
	}
	if err := checkOutputs(output{report, whatifReport}, figure(plotPath)); err != nil {
		return err
	}
	r, err := workloads.ReadWhatIf(from)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return usagef("--from %s: no such file", from)
		}
		return usagef("--from: %v", err)
	}
	p := r.Profile
	if err := firstErr(whatif.WriteProfile(stdout, p), writeLine(stdout), whatif.WriteTable(stdout, p, r.Grid), whatif.WriteNeeds(stdout, p, whatif.Scenario{})); err != nil {
		return err
	}
	if r.Ladder != nil {
		fmt.Fprintf(stdout, "\nthe caching ladder at the profile's setting:\n")
		if err := whatif.WriteLadder(stdout, p.ReadLadder(r.Ladder)); err != nil {
			return err
		}
	}
	if len(r.Checks) > 0 {
		fmt.Fprintf(stdout, "\nverification:\n\n")
		if err := whatif.WriteChecks(stdout, p, r.Checks); err != nil {
			return err
		}
	}
	return writeWhatIfOutputs(stdout, r, report, plotPath)
}

// writeLine writes an empty line.
func writeLine(w io.Writer) error { _, err := fmt.Fprintln(w); return err }

// whatifReport is what whatif --report writes, for the output policy.
var whatifReport = atomicfile.Report("what-if report")

// parseFloats parses a comma-separated list of positive numbers.
func parseFloats(what, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, usagef("%s: %q is not a number", what, f)
		}
		if !(v > 0) {
			return nil, usagef("%s: %v must be positive", what, v)
		}
		if v > 1e6 {
			return nil, usagef("%s: %v is too large (at most 1e6)", what, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// joinFloats writes numbers as a comma-separated list.
func joinFloats(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}
