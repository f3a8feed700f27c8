package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// OwnLoopWhatIf is `headspace whatif -- COMMAND`: the headspace
// analysis of a user's own, unmodified training script under the hook
// (harness/ownloop; 40 steps from its loader, 30 on 10 cached batches),
// a CPU-budget model of its training loader from the measured stages
// (ownloop.WhatIf), what it would take to make the model step the bound
// and, with Verify, the script run as it is at its own worker count and
// at the predicted one, VerifySteps steps each (docs/own-loop.md).
type OwnLoopWhatIf struct {
	// Argv is the training command, as given after --.
	Argv []string
	// Loader is the training loop's DataLoader, by the order of first
	// iteration (1: the first).
	Loader                          int
	FirstBatchTimeout, StallTimeout time.Duration
	Verify                          bool
	VerifySteps                     int
	// log, if set, receives the script's output and the hook's lines
	// (the command's stderr); without it they are discarded.
	log io.Writer
	// made, if set, is given the outcome once the model is made, before
	// the checks: the file's lines are then known (runOwnWhatIf).
	made func(OwnLoopWhatIfOutcome)
}

// DefaultOwnLoopWhatIf is the what-if of OwnLoopScript at the command's
// defaults (Flags): the first loader, not verified (20 steps a check
// with --verify).
func DefaultOwnLoopWhatIf() OwnLoopWhatIf {
	return OwnLoopWhatIf{Argv: []string{PeerPython, OwnLoopScript, "--getitem-ms", "6", "--step-ms", "2"}, Loader: 1,
		FirstBatchTimeout: 2 * time.Minute, StallTimeout: 5 * time.Minute, VerifySteps: ownLadderSteps}
}

// QuickOwnLoopWhatIf is verified, 6 steps a check: every code path.
func QuickOwnLoopWhatIf() OwnLoopWhatIf {
	w := DefaultOwnLoopWhatIf()
	w.Verify, w.VerifySteps = true, 6
	return w
}

// Flags binds the what-if's flags to its fields, their defaults the
// fields' values: --loader, --first-batch-timeout, --stall-timeout,
// --verify and --steps (whatif -- COMMAND sets them from whatif's flags
// of those names: ownWhatIf).
func (w *OwnLoopWhatIf) Flags(fs *flag.FlagSet) {
	fs.IntVar(&w.Loader, "loader", w.Loader, "which DataLoader is the training loop's, by the order of first iteration in the main thread (`n`)")
	fs.DurationVar(&w.FirstBatchTimeout, "first-batch-timeout", w.FirstBatchTimeout, "how long to wait for the training loop's first batch (`duration`)")
	fs.DurationVar(&w.StallTimeout, "stall-timeout", w.StallTimeout, "how long to wait for each step after the first batch (`duration`)")
	fs.BoolVar(&w.Verify, "verify", w.Verify, "run the script as it is at its own and the predicted worker count")
	fs.IntVar(&w.VerifySteps, "steps", w.VerifySteps, "`steps` of each check")
}

// Name is "OwnLoopWhatIf": BenchmarkOwnLoopWhatIf/model/script=… and the
// rest (OwnLoopWhatIfCodec).
func (OwnLoopWhatIf) Name() string { return "OwnLoopWhatIf" }

// Document is "": headspace's own.
func (OwnLoopWhatIf) Document() string { return "" }

// Validate reports the first problem with the what-if.
func (w OwnLoopWhatIf) Validate() error {
	switch {
	case len(w.Argv) == 0:
		return fmt.Errorf("own-loop what-if: no training command")
	case w.Loader < 1:
		return fmt.Errorf("own-loop what-if: loader %d: want 1 or more", w.Loader)
	case w.FirstBatchTimeout <= 0 || w.StallTimeout <= 0:
		return fmt.Errorf("own-loop what-if: timeouts %v and %v: want both positive", w.FirstBatchTimeout, w.StallTimeout)
	case w.VerifySteps < 1:
		return fmt.Errorf("own-loop what-if: %d steps a check: want 1 or more", w.VerifySteps)
	}
	return nil
}

// analysis is the analysis the model is made from: 40 steps from the
// loader, then 30 on 10 cached batches.
func (w OwnLoopWhatIf) analysis() ownloop.Settings {
	return ownloop.Settings{Mode: "analyze", Loader: w.Loader, NumCaches: 10, ReturnCachesAfter: 40, StepsAfter: 30, FirstBatchTimeout: w.FirstBatchTimeout, StallTimeout: w.StallTimeout}
}

// Settings are the steps of each check and the analysis's steps; the
// command's lines (the interpreter, torch, the loaders) and the
// verdict's names are known once it has run: OwnLoopWhatIfOutcome.Config.
func (w OwnLoopWhatIf) Settings() []resultfile.Config {
	s := w.analysis()
	return []resultfile.Config{{Key: "verify-steps", Value: strconv.Itoa(w.VerifySteps)}, {Key: "num-caches", Value: strconv.Itoa(s.NumCaches)},
		{Key: "return-caches-after", Value: strconv.Itoa(s.ReturnCachesAfter)}, {Key: "steps-after", Value: strconv.Itoa(s.StepsAfter)}}
}

// OwnLoopWhatIfOutcome is what the what-if on a command measured: its
// report whole, the script's key in the records' names, the device the
// script trained on, and the file's lines (the command's, Settings and
// the report's names: ownLoopWhatIfLines).
type OwnLoopWhatIfOutcome struct {
	Script string
	Report ownloop.WhatIfReport
	Device string
	Config []resultfile.Config
}

// Measure runs the analysis (ownloop.Exec, ownloop.Analyze or, for a
// node's ranks, AnalyzeRanks), makes the model and, with Verify, runs
// the checks; it returns what it measured, the checks made before an
// error included.
func (w OwnLoopWhatIf) Measure(ctx context.Context, env Env) (OwnLoopWhatIfOutcome, error) {
	var o OwnLoopWhatIfOutcome
	s := w.analysis()
	cmd, run, err := execOwn(ctx, env, w.Name(), w.Argv, w.Validate(), s, w.log)
	if err != nil {
		return o, err
	}
	rep, nr, err := analyzeOwnLoop(cmd, s, run)
	if err != nil {
		return o, err
	}
	if o.Report, err = ownloop.NewWhatIfReport(cmd, rep, nr); err != nil {
		return o, err
	}
	o.Script, o.Device, o.Report.VerifySteps = cmd.Key(), run.Device(), w.VerifySteps
	o.Config = ownLoopWhatIfLines(append(ownloop.CommandConfig(cmd, run), w.Settings()...), o.Report)
	if w.made != nil {
		w.made(o)
	}
	if !w.Verify {
		return o, nil
	}
	return o, o.Report.Verify(ctx, cmd, rep, w.VerifySteps, w.FirstBatchTimeout, w.StallTimeout, orDiscard(w.log), func(n int) { env.start(fmt.Sprintf("verify at %d workers", n)) })
}

// analyzeOwnLoop is the analysis of run (1 step for the time saved,
// which the what-if does not state): a node's ranks' (AnalyzeRanks),
// whose slowest rank's the model is, or one process's.
func analyzeOwnLoop(cmd ownloop.Command, s ownloop.Settings, run *ownloop.Run) (ownloop.Report, *ownloop.NodeReport, error) {
	if len(run.Ranks) == 0 {
		rep, err := ownloop.Analyze(cmd, s, run, 1)
		return rep, nil, err
	}
	nr, err := ownloop.AnalyzeRanks(cmd, s, run, 1)
	if err != nil {
		return ownloop.Report{}, nil, err
	}
	return nr.Ranks[nr.Slowest], &nr, nil
}

// ownLoopWhatIfLines are lines with the report's names, which no
// record's figure holds: the verdict's class and stage and the model's
// slowest stage.
func ownLoopWhatIfLines(lines []resultfile.Config, r ownloop.WhatIfReport) []resultfile.Config {
	return append(lines, resultfile.Config{Key: "verdict", Value: string(r.Class)}, resultfile.Config{Key: "verdict-stage", Value: r.Stage},
		resultfile.Config{Key: "model-stage", Value: r.Model.Stage})
}

// Run runs the what-if (Measure) and returns its records
// (OwnLoopWhatIfCodec).
func (w OwnLoopWhatIf) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[OwnLoopWhatIfOutcome](ctx, w, env)
}

// Codec is OwnLoopWhatIfCodec.
func (OwnLoopWhatIf) Codec() Codec[OwnLoopWhatIfOutcome] { return OwnLoopWhatIfCodec }

var _ Typed[OwnLoopWhatIfOutcome] = OwnLoopWhatIf{}

// Report prints the what-if (ownloop.WhatIfReport.WriteText): the same
// bytes after a run and from its file.
func (OwnLoopWhatIf) Report(o OwnLoopWhatIfOutcome, w io.Writer) error {
	if o.Report.Command == "" {
		return fmt.Errorf("own-loop what-if: nothing to report (records read without their file's configuration lines)")
	}
	o.Report.WriteText(w)
	return nil
}

// OwnLoopWhatIfCodec is an OwnLoopWhatIf's records codec (record format
// of issue 53; the what-if's records were BenchmarkWhatIf/model and
// /check before, without the report's figures):
//   - BenchmarkOwnLoopWhatIf/model/script=S: the analysis's steps with the
//     loader (loader-step-ns) and on cached batches (step-ns, the model's
//     bound), a worker's time a batch as measured and with a core of its
//     own, its CPU, the loop's own CPU a step, the slowest stage's time a
//     batch, the script's workers, the machine's cores, and what it would
//     take (need-workers, need-cores);
//   - for a node's ranks, BenchmarkOwnLoopWhatIf/node/script=S/ranks=N
//     (the slowest rank, the spread, the workers a rank needs and the
//     node model's profile of a rank) and BenchmarkOwnLoopWhatIf/rank/
//     script=S/rank=R (its AU);
//   - BenchmarkOwnLoopWhatIf/check/script=S/workers=N a check of
//     --verify: steps/s measured and predicted-steps/s.
//
// The report's names are the file's lines (ownLoopWhatIfLines): records
// read alone decode without them, and Report refuses them.
var OwnLoopWhatIfCodec = Codec[OwnLoopWhatIfOutcome]{
	Experiment: "OwnLoopWhatIf",
	Keys: map[string][]string{"OwnLoopWhatIf/model": {"script"}, "OwnLoopWhatIf/node": {"script", "ranks"},
		"OwnLoopWhatIf/rank": {"script", "rank"}, "OwnLoopWhatIf/check": {"script", "workers"}},
	Order:  []string{"OwnLoopWhatIf/model", "OwnLoopWhatIf/node", "OwnLoopWhatIf/rank", "OwnLoopWhatIf/check"},
	encode: encodeOwnLoopWhatIf,
	decode: decodeOwnLoopWhatIf,
}

// ownLoopWhatIfName is the name of a record of the what-if of script.
func ownLoopWhatIfName(part, script string) string {
	return "BenchmarkOwnLoopWhatIf/" + part + "/script=" + script
}

// encodeOwnLoopWhatIf is o's records (OwnLoopWhatIfCodec); none where
// it has no model (a run stopped before it: no script's key).
func encodeOwnLoopWhatIf(o OwnLoopWhatIfOutcome) []*benchfmt.Result {
	r, m := o.Report, o.Report.Model
	if o.Script == "" {
		return nil
	}
	v := func(x float64, unit string) benchfmt.Value { return benchfmt.Value{Value: x, Unit: unit} }
	d := func(x time.Duration, unit string) benchfmt.Value { return v(float64(x), unit) }
	out := []*benchfmt.Result{{Name: benchfmt.Name(ownLoopWhatIfName("model", o.Script)), Iters: 1, Values: []benchfmt.Value{
		d(m.Step, "step-ns"), d(r.Before, "loader-step-ns"), d(m.PerBatch, "batch-ns/worker"), d(m.FreePerBatch, "free-batch-ns/worker"),
		d(m.CPUPerBatch, "batch-cpu-ns"), d(m.MainCPUPerStep, "main-cpu-ns/step"), d(m.StageTime, "stage-ns/batch"),
		v(float64(m.Workers), "workers"), v(float64(m.Cores), "cores"), v(float64(m.NeedWorkers()), "need-workers"), v(m.NeedCores(), "need-cores")}}}
	if n := r.Node; n != nil {
		vals := []benchfmt.Value{v(float64(n.Slowest), "slowest-rank"), v(n.Spread, "spread-%"), v(float64(n.NeedWorkers), "need-workers")}
		if p := n.Model; n.HasModel {
			vals = append(vals, v(p.Cores, "model-cores"), v(float64(p.Batch), "model-batch"), v(float64(p.Workers), "model-workers"),
				d(p.Step, "model-step-ns"), v(p.AU, "model-au"), d(p.CPUPerSample, "model-cpu-ns/sample"))
		}
		out = append(out, &benchfmt.Result{Name: benchfmt.Name(fmt.Sprintf("%s/ranks=%d", ownLoopWhatIfName("node", o.Script), len(n.AU))), Iters: 1, Values: vals})
		for rank, au := range n.AU {
			out = append(out, &benchfmt.Result{Name: benchfmt.Name(fmt.Sprintf("%s/rank=%d", ownLoopWhatIfName("rank", o.Script), rank)), Iters: 1, Values: []benchfmt.Value{v(au, "au")}})
		}
	}
	for _, c := range r.Checks {
		out = append(out, &benchfmt.Result{Name: benchfmt.Name(fmt.Sprintf("%s/workers=%d", ownLoopWhatIfName("check", o.Script), c.Workers)), Iters: 1,
			Values: []benchfmt.Value{v(c.Measured, "steps/s"), v(c.Predicted, "predicted-steps/s")}})
	}
	return out
}

// decodeOwnLoopWhatIf reads the what-if back: the model from its
// record, a node's answer and the checks from theirs, in the order a run
// makes them, the rest from the file's lines. Records of two scripts, a
// second model, a node's without each of its ranks', or a figure that is
// negative, NaN or infinite do not decode.
func decodeOwnLoopWhatIf(recs []Record) (OwnLoopWhatIfOutcome, error) {
	var o OwnLoopWhatIfOutcome
	if recs[0].Benchmark != "OwnLoopWhatIf/model" {
		return o, fmt.Errorf("%s: the what-if's records begin with its model's", at(recs[0].Result))
	}
	o.Script = recs[0].Keys["script"]
	ranks := 0
	for i, rec := range recs {
		if rec.Keys["script"] != o.Script {
			return o, fmt.Errorf("%s: script %q, the records before %q", at(rec.Result), rec.Keys["script"], o.Script)
		}
		if err := finiteValues(rec); err != nil {
			return o, err
		}
		var err error
		switch rec.Benchmark {
		case "OwnLoopWhatIf/model":
			if i > 0 {
				return o, fmt.Errorf("%s: a second model", at(rec.Result))
			}
			err = decodeOwnLoopModel(rec, &o.Report)
		case "OwnLoopWhatIf/node":
			o.Report.Node, ranks, err = decodeOwnLoopNode(rec)
		case "OwnLoopWhatIf/rank":
			err = decodeOwnLoopRank(rec, o.Report.Node)
		case "OwnLoopWhatIf/check":
			err = decodeOwnLoopCheck(rec, &o.Report)
		}
		if err != nil {
			return o, err
		}
	}
	if n := o.Report.Node; n != nil && len(n.AU) != ranks {
		return o, fmt.Errorf("%s: the records of %d of its %d ranks", at(recs[0].Result), len(n.AU), ranks)
	}
	if cfg := fileSettings(recs[0].Result); len(cfg) > 0 {
		return o, settleOwnLoopWhatIf(&o, cfg, recs[0].Result)
	}
	return o, nil
}

// finiteValues refuses a record with a value that is negative, NaN or
// infinite.
func finiteValues(rec Record) error {
	for _, v := range rec.Values {
		if !(v.Value >= 0) || math.IsInf(v.Value, 0) {
			return fmt.Errorf("%s: %v %s: want a figure 0 or more, finite", at(rec.Result), v.Value, v.Unit)
		}
	}
	return nil
}

// ownLoopModelUnits are the units of the model's record that the report
// reads, in the order of decodeOwnLoopModel.
var ownLoopModelUnits = []string{"step-ns", "loader-step-ns", "batch-ns/worker", "free-batch-ns/worker", "batch-cpu-ns", "main-cpu-ns/step", "stage-ns/batch", "workers", "cores"}

// decodeOwnLoopModel reads the model and the analysis's steps into r. A
// record of the format before issue 53 (BenchmarkWhatIf/model, renamed)
// lacks the report's figures: its report cannot be rebuilt.
func decodeOwnLoopModel(rec Record, r *ownloop.WhatIfReport) error {
	if _, ok := resultfile.Value(rec.Result, "loader-step-ns"); !ok {
		return fmt.Errorf("%s: no value in loader-step-ns: a what-if recorded before its records held its report (issue 53), which cannot be rebuilt: run the command again", at(rec.Result))
	}
	v, err := rec.valuesIn(ownLoopModelUnits...)
	if err != nil {
		return err
	}
	ns := func(x float64) time.Duration { return time.Duration(math.Round(x)) }
	m := &r.Model
	m.Step, r.Before, m.PerBatch, m.FreePerBatch, m.CPUPerBatch, m.MainCPUPerStep, m.StageTime = ns(v[0]), ns(v[1]), ns(v[2]), ns(v[3]), ns(v[4]), ns(v[5]), ns(v[6])
	m.Workers, m.Cores = int(v[7]), int(v[8])
	r.After = m.Step
	if m.Step <= 0 || m.Cores < 1 {
		return fmt.Errorf("%s: a step of %v on %d cores: want both positive", at(rec.Result), m.Step, m.Cores)
	}
	return nil
}

// decodeOwnLoopNode reads a node's answer and its number of ranks.
func decodeOwnLoopNode(rec Record) (*ownloop.NodeWhatIf, int, error) {
	ranks, err := rec.count("ranks", true)
	if err != nil {
		return nil, 0, err
	}
	v, err := rec.valuesIn("slowest-rank", "spread-%", "need-workers")
	if err != nil {
		return nil, 0, err
	}
	n := &ownloop.NodeWhatIf{Slowest: int(v[0]), Spread: v[1], NeedWorkers: int(v[2])}
	if n.Slowest >= ranks {
		return nil, 0, fmt.Errorf("%s: slowest rank %d of %d ranks", at(rec.Result), n.Slowest, ranks)
	}
	if _, ok := resultfile.Value(rec.Result, "model-step-ns"); !ok {
		return n, ranks, nil // the slowest rank's stages were not timed
	}
	p, err := rec.valuesIn("model-cores", "model-batch", "model-workers", "model-step-ns", "model-au", "model-cpu-ns/sample")
	if err != nil {
		return nil, 0, err
	}
	n.HasModel = true
	n.Model = node.Profile{Cores: p[0], OtherThreads: -1, Batch: int(p[1]), Workers: int(p[2]), Step: time.Duration(math.Round(p[3])), AU: p[4],
		CPUPerSample: time.Duration(math.Round(p[5]))}
	if err := n.Model.Validate(); err != nil {
		return nil, 0, fmt.Errorf("%s: the node model: %v", at(rec.Result), err)
	}
	return n, ranks, nil
}

// decodeOwnLoopRank reads a rank's AU into the node's, in the order of
// the ranks.
func decodeOwnLoopRank(rec Record, n *ownloop.NodeWhatIf) error {
	r, err := rec.count("rank", false)
	if err != nil {
		return err
	}
	if n == nil || r != len(n.AU) {
		return fmt.Errorf("%s: rank %d: want the ranks in order after the node's record", at(rec.Result), r)
	}
	au, err := rec.Value("au")
	if err != nil {
		return err
	}
	n.AU = append(n.AU, au)
	return nil
}

// decodeOwnLoopCheck reads a check of --verify.
func decodeOwnLoopCheck(rec Record, r *ownloop.WhatIfReport) error {
	workers, err := rec.count("workers", true)
	if err != nil {
		return err
	}
	v, err := rec.valuesIn("steps/s", "predicted-steps/s")
	if err != nil {
		return err
	}
	if !(v[0] > 0) {
		return fmt.Errorf("%s: %v steps/s measured: want a positive figure", at(rec.Result), v[0])
	}
	r.Checks = append(r.Checks, ownloop.Check{Workers: workers, Measured: v[0], Predicted: v[1]})
	return nil
}

// settleOwnLoopWhatIf reads the report's lines from its file's: the
// command, the verdict's class and stage, the model's slowest stage, the
// steps a check and, for a node, its launcher.
func settleOwnLoopWhatIf(o *OwnLoopWhatIfOutcome, cfg []resultfile.Config, first *benchfmt.Result) error {
	o.Config, o.Device = cfg, configValue(cfg, "device")
	r := &o.Report
	r.Command, r.Class, r.Stage, r.Model.Stage = configValue(cfg, "command"), analysis.Class(configValue(cfg, "verdict")), configValue(cfg, "verdict-stage"), configValue(cfg, "model-stage")
	if r.Command == "" || r.Class == "" {
		return fmt.Errorf("%s: no command or verdict line: not a file of whatif -- COMMAND --out", filePart(first))
	}
	if r.Node != nil {
		r.Node.Launcher = configValue(cfg, "launcher")
	}
	var err error
	if r.VerifySteps, err = strconv.Atoi(configValue(cfg, "verify-steps")); err != nil || r.VerifySteps < 1 {
		return fmt.Errorf("%s: verify-steps %q: want the steps a check, a positive count", filePart(first), configValue(cfg, "verify-steps"))
	}
	return nil
}

// ownWhatIfHandoff is `headspace whatif -- COMMAND`: OwnLoopWhatIf,
// its fields set by whatif's flags of its names (ownWhatIf), handed to
// the command layer to run the one way into out (driver.Run, the file
// read back through its codec, its Report).
func ownWhatIfHandoff(fs *flag.FlagSet, out driver.Output, stderr io.Writer) (*Handoff, error) {
	if err := checkOwnFlags(fs, true, "verify", "steps", "out", "force"); err != nil {
		return nil, err
	}
	if err := driver.Check(out); err != nil {
		return nil, err
	}
	e, err := ownWhatIf(fs)
	if err != nil {
		return nil, err
	}
	var made OwnLoopWhatIfOutcome
	e.log, e.made = stderr, func(o OwnLoopWhatIfOutcome) { made = o }
	s := Setup{Units: e.analysis().Total(), Device: func() string { return made.Device }, Lines: func() []resultfile.Config { return made.Config }}
	return &Handoff{Experiment: e, Setup: s, Out: out, Errors: OwnLoopError}, nil
}

// ownWhatIf is OwnLoopWhatIf at its Default size with the flags of its
// Flags that fs has set, and the command after --, checked: --steps,
// --loader and the timeouts within their bounds, the command one the
// hook runs.
func ownWhatIf(fs *flag.FlagSet) (*OwnLoopWhatIf, error) {
	e := Sized[OwnLoopWhatIf](Default)
	if err := setOwn(fs, e.Flags); err != nil {
		return nil, err
	}
	e.Argv = fs.Args()
	if err := cli.InRange("--steps", e.VerifySteps, 1, cli.MaxSteps); err != nil {
		return nil, err
	}
	if err := checkOwnRun(e.Loader, e.FirstBatchTimeout, e.StallTimeout, e.Argv); err != nil {
		return nil, err
	}
	return &e, nil
}

// IsOwnLoopWhatIfFile says the result file at path is one of whatif --
// COMMAND --out (its first record OwnLoopWhatIf's, or the what-if's
// before issue 53: BenchmarkWhatIf/model), for whatif --from.
func IsOwnLoopWhatIfFile(path string) bool {
	first, ours := firstRecordOf(path, OwnLoopWhatIfCodec.Layout())
	return ours || first != nil && positional(first.Name) == "/model"
}

// ownWhatIfFrom is whatif --from of a file of whatif -- COMMAND: its
// report rebuilt through OwnLoopWhatIfCodec, the file's figures and
// lines alone, by the command layer.
func ownWhatIfFrom(fs *flag.FlagSet, from string) (*Handoff, error) {
	if err := cli.FromOnly(fs); err != nil {
		return nil, err
	}
	e := Sized[OwnLoopWhatIf](Default)
	return &Handoff{Experiment: &e, From: from, Name: "whatif -- COMMAND"}, nil
}
