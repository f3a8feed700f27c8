package workloads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/whatif"
	"github.com/headspace-bench/headspace/internal/cli"
)

// whatIfFlags are whatif's flags; out, force and from are command.CommandOf's,
// read once the flags are parsed (TakeCommand).
type whatIfFlags struct {
	pf                                   pipelineFlags
	of                                   ownFlags
	impl, placement                      string
	workers                              *loader.Workers
	cores, steps, warmup, count          int
	stats, save                          string
	atCores, atWorkers, atSteps          string
	ladder, verify                       bool
	vCores, vWorkers, vSteps             string
	out                                  string
	force                                bool
	report, plotPath, from, accelerators string
	minAU                                float64
	target                               int
}

// whatIfCommand is what headspace whatif's flags set beside the
// experiment, and a run's output: the printer of the profile and the
// ladder as they come, the outcome so far, and the report once made.
type whatIfCommand struct {
	f       whatIfFlags
	command string // the command line as the report states it
	ctx     context.Context
	pr      *whatif.Printer // nil with --from
	last    WhatIfOutcome
	verify  whatif.Grid
	impl    string
	rep     *WhatIfReport
	err     error // the report's lines not made (Setup.Lines)
	handoff *Handoff
}

// The bounds of whatif's own flags.
var _ = cli.Declare(map[string]cli.Bound{
	"whatif min-au":        {Lo: 0, Hi: 1},
	"whatif target":        {Lo: 0, Hi: 4096},
	"whatif profile-cores": {Lo: 0, Hi: 4096},
})

// register defines f's flags on fs, with def's defaults.
func (f *whatIfFlags) register(fs *flag.FlagSet, def WhatIf) {
	f.pf.register(fs)
	// The profile and its check run many times: smaller defaults than the
	// ladder's document-sized ones.
	for name, v := range map[string]string{"batch": fmt.Sprint(def.Pipeline.Batch), "raw-size": fmt.Sprint(def.Pipeline.Dataset.Width),
		"crop": fmt.Sprint(def.Pipeline.Transforms.Crop), "step": def.Step.String()} {
		fl := fs.Lookup(name)
		if err := fl.Value.Set(v); err != nil {
			panic(fmt.Sprintf("whatif: the default --%s %s: %v", name, v, err)) // the experiment's own, which its flag takes
		}
		fl.DefValue = v
	}
	fs.StringVar(&f.impl, "transforms", def.Pipeline.Impl, "transform `implementation`: naive or fast")
	fs.StringVar(&f.placement, "placement", "host", "`placement` of ConvertColor and Scale: host or device")
	f.workers = loader.WorkersFlag(fs, false, "the profile's loader `workers`", def.Pipeline.Workers)
	fs.IntVar(&f.cores, "profile-cores", 0, "GOMAXPROCS of the profiling run (default: the process's)")
	fs.IntVar(&f.steps, "steps", def.Train.Steps, "measured training `steps` per run")
	fs.IntVar(&f.warmup, "warmup", def.Train.Warmup, "`steps` run before measuring")
	fs.IntVar(&f.count, "count", def.Count, "`runs` of the profile and of each checked point")
	fs.StringVar(&f.stats, "stats", "", "read the profile from `file` (saved with --save) instead of running it")
	fs.StringVar(&f.save, "save", "", "save the profile to `file` (JSON, written atomically)")
	fs.StringVar(&f.atCores, "cores", "1,2,4,8,16", "comma-separated core `counts` of the table")
	fs.StringVar(&f.atWorkers, "at-workers", "1,2,4,8,16", "comma-separated worker `counts` of the table")
	fs.StringVar(&f.atSteps, "at-steps", "0.5,1,2", "comma-separated step `multipliers` of the table")
	fs.BoolVar(&f.ladder, "ladder", false, "also run the caching ladder at the profile's setting and set its attribution beside the model's")
	fs.BoolVar(&f.verify, "verify", false, "run the --verify-* points and set measured beside predicted")
	fs.StringVar(&f.vCores, "verify-cores", joinInts(def.Verify.Cores), "comma-separated GOMAXPROCS `counts` to check")
	fs.StringVar(&f.vWorkers, "verify-workers", joinInts(def.Verify.Workers), "comma-separated worker `counts` to check")
	fs.StringVar(&f.vSteps, "verify-steps", joined(def.Verify.StepScales, formatFloat), "comma-separated step `multipliers` to check")
	fs.StringVar(&f.report, "report", "", "write the what-if section in Markdown to `file` (atomically)")
	fs.StringVar(&f.plotPath, "plot", "", "write predicted steps/s against cores to `file` (.png or .svg)")
	fs.StringVar(&f.accelerators, "accelerators", "", "comma-separated accelerator `counts`: predict each rank's AU in a node of N accelerators from one rank alone (docs/node.md); --verify measures each")
	fs.Float64Var(&f.minAU, "min-au", node.DefaultMinAU, "with --accelerators: an accelerator is kept busy at this `AU` or more")
	fs.IntVar(&f.target, "target", 0, "with --accelerators: say what a node of `N` accelerators would take (default: the largest of --accelerators)")
	f.of.registerLadder(fs)
}

// Flags are whatif's: their defaults DefaultWhatIf's.
func (w *WhatIf) Flags(fs *flag.FlagSet) {
	w.cmd = &whatIfCommand{}
	w.cmd.f.register(fs, *w)
}

// TakeCommand runs whatif -- COMMAND and --from of its file
// (OwnLoopWhatIf, ownWhatIfHandoff) and whatif --accelerators, or --from
// of a node what-if's file (NodeWhatIf, whatifnodereport.go); the what-if
// itself is command.CommandOf's to run.
func (w *WhatIf) TakeCommand(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (bool, error) {
	c := w.cmd
	f := &c.f
	f.out, f.from = fs.Lookup("out").Value.String(), fs.Lookup("from").Value.String()
	f.force = fs.Lookup("force").Value.String() == "true"
	c.command = "headspace whatif " + strings.Join(args, " ")
	if hasCommand(fs, args) {
		var err error
		c.handoff, err = ownWhatIfHandoff(fs, driver.Output{Path: f.out, Force: f.force}, stderr)
		return true, err
	}
	if err := cli.ParseFlags(fs, args); err != nil {
		return true, err
	}
	if err := checkOwnFlags(fs, false); err != nil {
		return true, err
	}
	if f.accelerators == "" && f.pf.data.Set("accelerators") {
		// Without it the plain what-if would run, which was not asked.
		return true, cli.Usagef("--accelerators \"\": want comma-separated accelerator counts")
	}
	if f.accelerators != "" || (f.from != "" && IsNodeWhatIfFile(f.from)) {
		defer f.pf.data.Close() // the --link, if one was started
		return true, f.runNode(ctx, "headspace "+cli.CommandLine("whatif", args), stdout, stderr)
	}
	if f.from != "" && IsOwnLoopWhatIfFile(f.from) {
		var err error
		c.handoff, err = ownWhatIfFrom(fs, f.from)
		return true, err
	}
	return false, nil
}

// HandedOff is what TakeCommand handed to the command layer to run in
// the what-if's place (whatif -- COMMAND, and --from of its file), or
// nil.
func (w *WhatIf) HandedOff() *Handoff { return w.cmd.handoff }

// Outputs checks --plot's and --report's files, the flags --from takes.
func (w *WhatIf) Outputs() ([]string, error) {
	f := &w.cmd.f
	if err := checkPlot(f.plotPath); err != nil {
		return nil, err
	}
	return []string{"report", "plot"}, cli.CheckOutputs(cli.Output{Path: f.report, Kind: whatif.ReportKind}, cli.Figure(f.plotPath))
}

// Prepare checks the flags into the experiment (its grids, a --stats
// profile), opens the device, and prints the profile, its table and the
// ladder's attribution as the run makes them (Each); the report's lines
// join the file's settings once the run has ended (Setup.Lines), and
// End prints the results line and the files the report wrote.
func (w *WhatIf) Prepare(ctx context.Context, stdout, stderr io.Writer) (Setup, error) {
	c := w.cmd
	f := &c.f
	s := Setup{Close: func() { f.pf.data.Close() }} // the --link, if one was started
	e, err := f.experiment(ctx, *w)
	if err != nil {
		return s, err
	}
	g, err := f.grids(&e)
	if err != nil {
		return s, err
	}
	if s.Env, err = f.check(ctx, &e); err != nil {
		return s, err
	}
	// --stats and --save together were refused: a profile read is not
	// saved.
	c.ctx, c.verify, c.impl = ctx, e.Verify, e.Pipeline.Impl
	c.pr = &whatif.Printer{W: stdout, Grid: g, Runs: e.Count, Save: f.save}
	e.Each = func(o WhatIfOutcome) error {
		c.last = o
		c.pr.Show(o.Profile, o.Ladder)
		return c.pr.Err()
	}
	*w = e
	dev := f.pf.dev
	s.Device, s.Units = func() string { return dev }, e.Runs()
	s.Lines = func() []resultfile.Config {
		lines := e.Settings()
		if f.out == "" || c.last.Profile == nil || c.interrupted() && c.last.Checks == nil {
			return lines
		}
		// Everything the report states goes into the file, so that
		// --from rebuilds it (WhatIfCodec).
		rep, err := WhatIfReportSettings(c.report())
		if err != nil {
			c.err = fmt.Errorf("whatif: the report's lines of %s: %w", f.out, err) // End returns it
		}
		return append(lines, rep...)
	}
	s.Partial, s.End, s.Empty = "the table shows the points checked before it", c.end, true // End says it
	return s, nil
}

// interrupted says whether the run was interrupted (SIGINT).
func (c *whatIfCommand) interrupted() bool { return errors.Is(c.ctx.Err(), context.Canceled) }

// report is the run's report as printed, once the run has ended: an
// interrupted verification's is partial, its files written beside
// complete ones.
func (c *whatIfCommand) report() WhatIfReport {
	if c.rep == nil {
		rep := c.pr.Report(c.last.Checks)
		rep.Command, rep.Verify, rep.Impl, rep.Partial = c.command, c.verify, c.impl, c.interrupted()
		c.rep = &rep
	}
	return *c.rep
}

// Report prints, after a run, the checks (the profile, its table and the
// ladder were printed as they came): nothing of a run interrupted before
// them. From --from's file it prints what the run printed, and writes
// the report and the plot.
func (w *WhatIf) Report(o WhatIfOutcome, out io.Writer) error {
	c := w.cmd
	if c.pr == nil {
		if o.Report == nil {
			return cli.Usagef("--from: %s: no %s line (headspace whatif --out records them; the report cannot be rebuilt without them)", c.f.from, strings.Join(reportLines, ", "))
		}
		if err := o.Report.WriteText(out); err != nil {
			return err
		}
		return o.Report.WriteFiles(out, c.f.report, c.f.plotPath)
	}
	if c.last.Checks == nil && c.interrupted() || !c.f.verify {
		return nil
	}
	return c.pr.WriteChecks(c.last.Checks)
}

// end ends a run's output: the results line, then the report's and the
// plot's (the partial ones of an interrupted verification).
func (c *whatIfCommand) end(w io.Writer, o driver.Outcome) error {
	if o.Interrupted && c.last.Checks == nil {
		return o.Err("") // interrupted before the checks: nothing kept
	}
	if c.err != nil {
		return c.err
	}
	if o.Path != "" {
		cli.KeptNote(w, c.f.out, o.Path)
		fmt.Fprintf(w, "\nresults: %s%s\n", o.Path, map[bool]string{true: " (partial: interrupted)"}[o.Interrupted])
	}
	if err := c.report().WriteFiles(w, c.f.report, c.f.plotPath); err != nil {
		return err
	}
	return o.Err("the table shows the points checked before it")
}

// experiment is the what-if experiment f sets, before its grids: the
// pipeline (its transforms and placement) and the runs, checked.
func (f *whatIfFlags) experiment(ctx context.Context, def WhatIf) (WhatIf, error) {
	w := def
	if _, err := cli.ParseList("--transforms", f.impl, transforms.Names); err != nil {
		return w, err
	}
	pls, err := loader.ParsePlacements(f.placement)
	if err != nil {
		return w, err
	}
	if len(pls) != 1 {
		return w, cli.Usagef("--placement: one placement, not %d", len(pls))
	}
	switch {
	case f.workers.N() < 1 || f.workers.N() > loader.MaxWorkers:
		return w, cli.InRange("--workers", f.workers.N(), 1, loader.MaxWorkers)
	case f.cores < 0:
		return w, cli.Usagef("--profile-cores %d must not be negative", f.cores)
	case f.steps <= 0:
		return w, cli.Usagef("--steps %d must be positive", f.steps)
	case f.warmup < 0:
		return w, cli.Usagef("--warmup %d must not be negative", f.warmup)
	case f.count <= 0:
		return w, cli.Usagef("--count %d must be positive", f.count)
	case f.pf.dev == "emulated" && f.pf.step <= 0:
		return w, cli.Usagef("--step %v: the emulated device needs a positive step (the model's steps/s divide by it)", f.pf.step)
	case f.stats != "" && f.save != "":
		return w, cli.Usagef("--save writes a profile this run measures; with --stats none is measured")
	case f.stats != "" && f.ladder:
		return w, cli.Usagef("--ladder runs the pipeline the profile measured; with --stats there is none to run")
	}
	if w.Pipeline, err = f.pf.config(ctx, f.workers.N(), f.impl); err != nil {
		return w, err
	}
	w.Pipeline.Placement = pls[0]
	w.Step, w.Cores, w.Train.Steps, w.Train.Warmup, w.Count = f.pf.step, f.cores, f.steps, f.warmup, f.count
	return w, nil
}

// grids parses the table's grid (returned) and the points to verify
// (into w.Verify).
func (f *whatIfFlags) grids(w *WhatIf) (whatif.Grid, error) {
	g, err := parseGridFlags("--cores", f.atCores, "--at-workers", f.atWorkers, "--at-steps", f.atSteps)
	if err != nil {
		return g, err
	}
	w.Verify, err = parseGridFlags("--verify-cores", f.vCores, "--verify-workers", f.vWorkers, "--verify-steps", f.vSteps)
	return g, err
}

// parseGridFlags parses a grid from its flags' names and values.
func parseGridFlags(cores, coresV, workers, workersV, steps, stepsV string) (g whatif.Grid, err error) {
	if g.Cores, err = cli.ParseInts(cores, coresV); err != nil {
		return g, err
	}
	if g.Workers, err = cli.ParseInts(workers, workersV); err != nil {
		return g, err
	}
	g.StepScales, err = parseFloats(steps, stepsV)
	return g, err
}

// check refuses what w (its grids set) cannot run or write, opens the
// device, reads a --stats profile into w, and returns the run's
// environment.
func (f *whatIfFlags) check(ctx context.Context, w *WhatIf) (Env, error) {
	env := Env{}
	if err := w.Validate(); err != nil {
		return env, cli.UsageError{Msg: err.Error()}
	}
	for _, n := range w.Verify.Workers {
		if err := cli.InRange("--verify-workers", n, 1, loader.MaxWorkers); err != nil {
			return env, err
		}
	}
	for _, n := range w.Verify.Cores {
		if err := cli.InRange("--verify-cores", n, 1, 4096); err != nil {
			return env, err
		}
	}
	if err := cli.CheckOutputs(cli.Output{Path: f.save, Kind: whatif.FileKind}); err != nil {
		return env, err
	}
	if !f.pf.scalable() && f.verify && slices.ContainsFunc(w.Verify.StepScales, func(m float64) bool { return m != 1 }) {
		return env, cli.Usagef("--device %s: the step cannot be scaled; use --verify-steps 1", f.pf.dev)
	}
	var err error
	if env.Device, err = f.pf.device(ctx); err != nil {
		return env, err
	}
	if f.stats != "" {
		p, err := whatif.Read(f.stats)
		if err != nil {
			return env, cli.UsageError{Msg: err.Error()}
		}
		w.Profiled = &p
	}
	w.WithLadder = f.ladder
	if !f.verify {
		w.Verify = whatif.Grid{}
	}
	return env, nil
}

// checkPlot refuses a --plot path that is neither .png nor .svg.
func checkPlot(path string) error {
	if path != "" && !strings.HasSuffix(path, ".png") && !strings.HasSuffix(path, ".svg") {
		return cli.Usagef("--plot %q: want a .png or .svg file", path)
	}
	return nil
}

// parseFloats parses a comma-separated list of positive numbers.
func parseFloats(what, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, cli.Usagef("%s: %q is not a number", what, f)
		}
		if !(v > 0) {
			return nil, cli.Usagef("%s: %v must be positive", what, v)
		}
		if v > 1e6 {
			return nil, cli.Usagef("%s: %v is too large (at most 1e6)", what, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// formatFloat writes v in the fewest digits that read back as v.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
