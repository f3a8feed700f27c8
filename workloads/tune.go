package workloads

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/tune"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Tune is headspace tune: the DataLoader settings of a user's training
// script, searched under the hook guided by the what-if model and
// checked against the script's own (harness/tune; docs/tune.md).
type Tune struct {
	// Argv is the training command, as given after --.
	Argv []string
	// Budget is the whole tune's time, the profile run included.
	Budget time.Duration
	// Steps are timed in each run after its warm-up; Rounds are each
	// candidate's runs in a stage; Pairs the final check's, at most.
	Steps, Rounds, Pairs int
	// MaxWorkers is the largest worker count tried; 0 is
	// tune.MaxWorkers of the machine's cores.
	MaxWorkers int
	// Loader is which DataLoader is the training loop's (ownloop's).
	Loader            int
	FirstBatchTimeout time.Duration
	// Ours, where set, is a tune of our own pipeline (tune --ours) in
	// place of Argv's script: records of the same benchmark, Tune's.
	Ours *TuneOurs
	// cmd is the command's (tunereport.go): its flags and its run.
	cmd tuneCommand
}

// TuneScript is the script of Tune's sizes: a loader with no workers
// whose samples are reads (testdata of harness/ownloop).
const TuneScript = "harness/ownloop/testdata/tunable.py"

// DefaultTune is a tune of TuneScript within 10 minutes.
func DefaultTune() Tune {
	return Tune{Argv: []string{PeerPython, TuneScript}, Budget: 10 * time.Minute, Steps: 20, Rounds: 3, Pairs: 6, Loader: 1, FirstBatchTimeout: 2 * time.Minute}
}

// QuickTune is every code path of a tune: one round, one pair.
func QuickTune() Tune {
	t := DefaultTune()
	t.Budget, t.Steps, t.Rounds, t.Pairs = 2*time.Minute, 8, 1, 1
	return t
}

// Name is the experiment's benchmark name: BenchmarkTune/….
func (Tune) Name() string { return "Tune" }

// Document is "": a command of headspace's own.
func (Tune) Document() string { return "" }

// Settings are the tune's settings: its budget and runs.
func (t Tune) Settings() []resultfile.Config { return t.SettingsFor(0) }

// SettingsFor are the tune's settings of a script of ranks ranks (0:
// one process), whose largest worker count is a rank's cores'.
func (t Tune) SettingsFor(ranks int) []resultfile.Config {
	return []resultfile.Config{
		{Key: "budget", Value: t.Budget.String()},
		{Key: "steps", Value: strconv.Itoa(t.Steps)},
		{Key: "rounds", Value: strconv.Itoa(t.Rounds)},
		{Key: "pairs", Value: strconv.Itoa(t.Pairs)},
		{Key: "max-workers", Value: strconv.Itoa(t.maxWorkers(tune.CoresPerRank(runtime.NumCPU(), ranks)))},
		{Key: "loader", Value: strconv.Itoa(t.Loader)},
	}
}

// maxWorkers is the largest worker count tried on cores cores (a
// rank's, for a node's ranks).
func (t Tune) maxWorkers(cores int) int {
	if t.MaxWorkers > 0 {
		return t.MaxWorkers
	}
	return tune.MaxWorkers(cores)
}

// MinBudget is the least --budget a tune starts with: a run of a
// PyTorch script takes seconds; the budget one candidate needs is
// known once the profile has run (tune.ErrBudget).
const MinBudget = 10 * time.Second

// Validate refuses a tune that cannot run.
func (t Tune) Validate() error {
	switch {
	case len(t.Argv) == 0:
		return fmt.Errorf("no training command")
	case t.Budget < MinBudget:
		return fmt.Errorf("--budget %v is too small for one candidate: a run of a training script takes seconds; give %v or more", t.Budget, MinBudget)
	case t.Steps < 1 || t.Rounds < 1 || t.Pairs < 1:
		return fmt.Errorf("--steps %d, --rounds %d and --pairs %d must be positive", t.Steps, t.Rounds, t.Pairs)
	case t.MaxWorkers < 0:
		return fmt.Errorf("--max-workers %d must not be negative", t.MaxWorkers)
	case t.Loader < 1:
		return fmt.Errorf("--loader %d must be positive", t.Loader)
	case t.FirstBatchTimeout <= 0:
		return fmt.Errorf("--first-batch-timeout %v must be positive", t.FirstBatchTimeout)
	}
	return nil
}

// Measure runs the tune: of our own pipeline where Ours is set
// (TuneOurs.MeasureEach), else of the script (MeasureEach), its output
// discarded. Run as a command, it prints the profile's line and each
// run's on the command's stderr, with the script's output.
func (t Tune) Measure(ctx context.Context, env Env) (tune.Result, error) {
	res, _, err := t.measure(ctx, env)
	return res, err
}

// measure is Measure, and whether its profile ended.
func (t Tune) measure(ctx context.Context, env Env) (res tune.Result, profiled bool, err error) {
	r := t.cmd.run
	if r == nil {
		r = &tuneRun{stderr: io.Discard}
	} else {
		env.Start = nil // the command prints each run's line itself
	}
	if t.Ours != nil {
		res, err = t.Ours.MeasureEach(ctx, env, func(p tune.Profile) {
			r.profiled = true
			r.logOursProfile(p)
		}, func(x tune.Run) { r.logRun(x, x.Setting.Flags()) })
	} else {
		res, err = t.MeasureEach(ctx, env, r.stderr, func(run *ownloop.Run, p tune.Profile) {
			r.profiled, r.own = true, run
			r.logProfile(p)
		}, func(x tune.Run) { r.logRun(x, x.Setting.Args()) })
	}
	r.res = res
	return res, r.profiled, err
}

// MeasureEach runs the tune: the profile (the headspace analysis of the
// script as it is, 40 steps from its loader and 30 cached, as whatif's),
// handed to profiled with its run, then the search and the final check
// (tune.Searcher), each run handed to each as it ends. The script's
// output goes to log. It returns what it measured, with the context's
// error where it was interrupted, and tune.ErrBudget, after the profile,
// where the budget cannot hold one candidate and its check.
func (t Tune) MeasureEach(ctx context.Context, env Env, log io.Writer, profiled func(*ownloop.Run, tune.Profile), each func(tune.Run)) (tune.Result, error) {
	start := time.Now()
	if err := t.Validate(); err != nil {
		return tune.Result{}, fmt.Errorf("%w: %v", ownloop.ErrRefused, err)
	}
	cmd, err := ownloop.ParseCommand(t.Argv)
	if err != nil {
		return tune.Result{}, err
	}
	s := ownloop.Settings{Mode: "analyze", Loader: t.Loader, NumCaches: 10, ReturnCachesAfter: 40, StepsAfter: 30, FirstBatchTimeout: t.FirstBatchTimeout}
	env.start("profile")
	run, err := ownloop.Exec(ctx, cmd, s, log, nil)
	if err != nil {
		return tune.Result{Script: cmd.Key()}, fmt.Errorf("the profile run: %w", err)
	}
	if ld, ok := run.Target(); ok && ld.Wrapped {
		return tune.Result{Script: cmd.Key()}, fmt.Errorf("%w: the profile run: the training loop is an iterable given to headspace_hook.wrap() (%s), not a DataLoader: it has no loader settings to tune", ownloop.ErrRefused, ld.Kind)
	}
	// A node's ranks: the profile is the slowest rank's (the ranks step
	// at its pace), its model on the cores a rank has.
	cores, ranks := runtime.NumCPU(), len(run.Ranks)
	var rep ownloop.Report
	if ranks > 0 {
		nr, err := ownloop.AnalyzeRanks(cmd, s, run, 1)
		if err != nil {
			return tune.Result{Script: cmd.Key()}, fmt.Errorf("the profile run: %w", err)
		}
		rep, cores = nr.Ranks[nr.Slowest], tune.CoresPerRank(cores, ranks)
	} else if rep, err = ownloop.Analyze(cmd, s, run, 1); err != nil {
		return tune.Result{Script: cmd.Key()}, fmt.Errorf("the profile run: %w", err)
	}
	var steps time.Duration
	for _, st := range rep.Run.Steps {
		steps += st.Time
	}
	p := tune.Profile{Own: tune.FromLoader(rep.Loader.Own), Before: tunePerSec(rep.Before.Median), Cached: tunePerSec(rep.After.Median),
		Startup: max(0, run.Wall-steps), CUDA: run.Start.CUDA, Iterable: rep.Loader.Measured.Iterable, Ranks: ranks}
	if w, err := ownloop.NewWhatIf(rep); err == nil {
		w.Cores = cores
		p.Model = &w
	}
	if profiled != nil {
		profiled(run, p)
	}
	sr := tune.Searcher{Config: tune.Config{Budget: t.Budget, Steps: t.Steps, Rounds: t.Rounds, Pairs: t.Pairs, Cores: cores,
		MaxWorkers: t.maxWorkers(cores), Fork: runtime.GOOS != "windows"}, Profile: p, Start: start,
		Run: func(ctx context.Context, c tune.Setting) (ownloop.Timed, error) {
			env.start("tune " + c.Args())
			ls := c.Loader()
			return ownloop.RunAt(ctx, cmd, t.Loader, &ls, t.Steps, t.FirstBatchTimeout, log)
		}, Each: each}
	res, err := sr.Tune(ctx)
	res.Script = cmd.Key()
	return res, err
}

func tunePerSec(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(time.Second) / float64(d)
}

// Run runs the tune (Measure) and returns its records, an interrupted
// tune's too: none where it failed, or was interrupted before its
// profile ended (nothing was measured), or its budget cannot hold one
// candidate and its check once the profile has run (a usage error, as
// the hook's refusals are: OwnLoopError).
func (t Tune) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	res, profiled, err := t.measure(ctx, env)
	switch {
	case errors.Is(err, tune.ErrBudget):
		return nil, cli.Usagef("--budget %v is too small: %v", t.Budget, err)
	case err != nil && !(profiled && errors.Is(err, context.Canceled)):
		return nil, OwnLoopError(err)
	}
	return typedRecords(TuneCodec, res, env, err)
}

// Codec is TuneCodec.
func (Tune) Codec() Codec[tune.Result] { return TuneCodec }

var _ Typed[tune.Result] = Tune{}

// tuneKeys are the keys of a Tune record's name: the script, the stage
// (profile, search, check, best) and the setting (tuneScriptKeys); or
// for our pipeline its command and level, the stage and the setting
// (tuneOursKeys); bound= on a profile's where the model was made; ranks=N
// on every record of a script that starts N ranks (each rank's loader at
// the setting).
var (
	tuneScriptKeys = []string{"script", "stage", "workers", "prefetch", "pin", "persistent", "start"}
	tuneOursKeys   = []string{"pipeline", "level", "stage", "workers", "prefetch", "fetch"}
	tuneKeys       = slices.Compact(slices.Sorted(slices.Values(append(append(slices.Clone(tuneScriptKeys), tuneOursKeys...), "bound", "ranks"))))
)

// TuneCodec is a tune's records codec, in order: the profile
// (BenchmarkTune/script=…/stage=profile/<the script's own setting>, with
// the what-if model's inputs and the stage in the way, bound=, where the
// model was made), each run of the search and the check
// (stage=search|check/<its setting>: steps/s, ns/op and wall-ns; failed
// 1 where it failed), and the best (stage=best/<its setting>: the runs,
// how the search stopped). A run's failure's reason is not a record's:
// the command prints it and records it in the file's tune-failed lines,
// which Decode reads it back from where the records carry them.
var TuneCodec = Codec[tune.Result]{
	Experiment: "Tune",
	Keys:       map[string][]string{"Tune": tuneKeys},
	Optional:   map[string][]string{"Tune": {"script", "pin", "persistent", "start", "pipeline", "level", "fetch", "bound", "ranks"}}, // decodeTune checks the one kind's or the other's
	encode:     encodeTune,
	decode:     decodeTune,
}

// tuneName is the name of a record of r at stage for setting s.
func tuneName(r tune.Result, stage string, s tune.Setting) string {
	s = s.Normal()
	if p := r.Profile; p.Ours() {
		return fmt.Sprintf("Tune/pipeline=%s/level=%s/stage=%s/workers=%d/prefetch=%d/fetch=%d", p.Pipeline, r.Script, stage, s.Workers, s.Prefetch, s.Fetch)
	}
	script := r.Script
	start := s.Start
	if start == "" {
		start = "default"
	}
	name := fmt.Sprintf("Tune/script=%s/stage=%s/workers=%d/prefetch=%d/pin=%t/persistent=%t/start=%s", script, stage, s.Workers, s.Prefetch, s.Pin, s.Persistent, start)
	if r.Profile.Ranks > 0 {
		// A node's ranks: every rank's loader at the setting.
		name += "/ranks=" + strconv.Itoa(r.Profile.Ranks)
	}
	return name
}

// tuneStops are the values of the best record's stopped unit.
var tuneStops = []string{"done", "budget", "interrupted"}

func encodeTune(r tune.Result) []*benchfmt.Result {
	p := r.Profile
	name := tuneName(r, "profile", p.Own)
	vals := []benchfmt.Value{{Value: p.Before, Unit: "steps/s"}, {Value: p.Cached, Unit: "cached-steps/s"},
		{Value: float64(p.Startup), Unit: "startup-ns"}, {Value: tuneFlag(p.CUDA), Unit: "cuda"}, {Value: float64(r.Pick), Unit: "pick-workers"}}
	if p.Ours() {
		// Our pipeline's: the model's pick and the bound it names, its
		// inputs in headspace whatif's records.
		vals = append(vals[:3], benchfmt.Value{Value: float64(r.Pick), Unit: "pick-workers"})
		if r.FetchPick > 0 {
			vals = append(vals, benchfmt.Value{Value: float64(r.FetchPick), Unit: "pick-fetch"})
		}
		if p.Limit != "" {
			name += "/bound=" + strings.ReplaceAll(p.Limit, " ", "+")
		}
	}
	if p.Iterable {
		vals = append(vals, benchfmt.Value{Value: 1, Unit: "iterable"})
	}
	if m := p.Model; m != nil {
		name += "/bound=" + strings.ReplaceAll(m.Stage, " ", "+")
		vals = append(vals, benchfmt.Value{Value: float64(m.Step), Unit: "step-ns"}, benchfmt.Value{Value: float64(m.PerBatch), Unit: "batch-ns/worker"},
			benchfmt.Value{Value: float64(m.FreePerBatch), Unit: "free-batch-ns/worker"}, benchfmt.Value{Value: float64(m.CPUPerBatch), Unit: "batch-cpu-ns"},
			benchfmt.Value{Value: float64(m.MainCPUPerStep), Unit: "main-cpu-ns/step"}, benchfmt.Value{Value: float64(m.StageTime), Unit: "stage-ns/batch"},
			benchfmt.Value{Value: float64(m.Workers), Unit: "model-workers"}, benchfmt.Value{Value: float64(m.Cores), Unit: "cores"})
	}
	out := []*benchfmt.Result{{Name: benchfmt.Name(resultfile.BenchName(name, 1)), Iters: 1, Values: vals}}
	for _, run := range r.Runs {
		rec := &benchfmt.Result{Name: benchfmt.Name(resultfile.BenchName(tuneName(r, run.Stage, run.Setting), 1)), Iters: max(1, run.Steps)}
		if run.Failed {
			rec.Values = []benchfmt.Value{{Value: 1, Unit: "failed"}, {Value: float64(run.Wall), Unit: "wall-ns"}}
		} else {
			rec.Values = []benchfmt.Value{{Value: 1e9 / run.StepsPerSec, Unit: "ns/op"}, {Value: run.StepsPerSec, Unit: "steps/s"}, {Value: float64(run.Wall), Unit: "wall-ns"}}
		}
		out = append(out, rec)
	}
	stop := 0
	for i, s := range tuneStops {
		if s == r.Stopped {
			stop = i
		}
	}
	out = append(out, &benchfmt.Result{Name: benchfmt.Name(resultfile.BenchName(tuneName(r, "best", r.Best), 1)), Iters: 1,
		Values: []benchfmt.Value{{Value: float64(len(r.Runs)), Unit: "runs"}, {Value: float64(stop), Unit: "stopped"}}})
	return out
}

func tuneFlag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// tuneSetting is the setting a record's name gives: a script's, or
// where it names a pipeline, ours.
func tuneSetting(rec Record) (tune.Setting, error) {
	var s tune.Setting
	var err error
	ours := rec.Keys["pipeline"] != ""
	want, other := tuneScriptKeys, tuneOursKeys
	if ours {
		want, other = other, want
	}
	for _, k := range want {
		if rec.Keys[k] == "" {
			return s, fmt.Errorf("%s: a record of Tune without its key %s", fullName(rec.Result), k)
		}
	}
	for _, k := range other {
		if rec.Keys[k] != "" && !slices.Contains(want, k) {
			return s, fmt.Errorf("%s: a record of Tune with the keys of a script's and our pipeline's (%s)", fullName(rec.Result), k)
		}
	}
	if s.Workers, err = rec.count("workers", false); err != nil {
		return s, err
	}
	if s.Prefetch, err = rec.count("prefetch", false); err != nil {
		return s, err
	}
	if ours {
		if !slices.Contains(TuneOursPipelines, rec.Keys["pipeline"]) {
			return s, fmt.Errorf("%s: pipeline %q: want %s", fullName(rec.Result), rec.Keys["pipeline"], strings.Join(TuneOursPipelines, " or "))
		}
		s.Fetch, err = rec.count("fetch", false)
		return s, err
	}
	for key, to := range map[string]*bool{"pin": &s.Pin, "persistent": &s.Persistent} {
		if *to, err = strconv.ParseBool(rec.Keys[key]); err != nil {
			return s, fmt.Errorf("%s: %s %q: want true or false", fullName(rec.Result), key, rec.Keys[key])
		}
	}
	if s.Start = rec.Keys["start"]; s.Start == "default" {
		s.Start = ""
	}
	return s, nil
}

func decodeTune(recs []Record) (tune.Result, error) {
	var r tune.Result
	for i, rec := range recs {
		s, err := tuneSetting(rec)
		if err != nil {
			return r, err
		}
		r.Script = cmp.Or(rec.Keys["script"], rec.Keys["level"])
		if i > 0 && rec.Keys["pipeline"] != r.Profile.Pipeline {
			return r, fmt.Errorf("%s: a record of Tune of another pipeline than its profile's (%q)", fullName(rec.Result), r.Profile.Pipeline)
		}
		ranks, err := tuneRanks(rec)
		if err != nil {
			return r, err
		}
		if i > 0 && ranks != r.Profile.Ranks {
			return r, fmt.Errorf("%s: a record of Tune of %d ranks after a profile of %d", fullName(rec.Result), ranks, r.Profile.Ranks)
		}
		stage := rec.Keys["stage"]
		switch {
		case stage == "profile" && i == 0 && rec.Keys["pipeline"] != "":
			if r.Profile, r.Pick, r.FetchPick, err = decodeTuneOursProfile(rec, s); err != nil {
				return r, err
			}
		case stage == "profile" && i == 0:
			if r.Profile, r.Pick, err = decodeTuneProfile(rec, s); err != nil {
				return r, err
			}
			r.Profile.Ranks = ranks
		case (stage == tune.Search || stage == tune.Check) && i > 0:
			run, err := decodeTuneRun(rec, s, stage)
			if err != nil {
				return r, err
			}
			r.Runs = append(r.Runs, run)
		case stage == "best" && i == len(recs)-1 && i > 0:
			v, err := rec.valuesIn("runs", "stopped")
			if err != nil {
				return r, err
			}
			if int(v[0]) != len(r.Runs) || v[1] < 0 || int(v[1]) >= len(tuneStops) {
				return r, fmt.Errorf("%s: %v runs and stopped %v, after %d runs", fullName(rec.Result), v[0], v[1], len(r.Runs))
			}
			r.Best, r.Stopped = s, tuneStops[int(v[1])]
			tuneReasons(&r, fileSettings(rec.Result))
			return r, nil
		default:
			return r, fmt.Errorf("%s: a record of Tune at stage %q out of the order a tune makes its records in (profile, search and check runs, best)", fullName(rec.Result), stage)
		}
	}
	return r, fmt.Errorf("Tune: no best record after %d records: the file is cut short", len(recs))
}

// decodeTuneRun is the run of a search or check record, at setting s of
// stage: its steps/s and wall time, or (failed=1) its wall time alone.
func decodeTuneRun(rec Record, s tune.Setting, stage string) (tune.Run, error) {
	run := tune.Run{Setting: s, Stage: stage}
	if f, ok := resultfile.Value(rec.Result, "failed"); ok && f == 1 {
		run.Failed = true
		v, err := rec.Value("wall-ns")
		run.Wall = time.Duration(math.Round(v))
		return run, err
	}
	v, err := rec.valuesIn("steps/s", "wall-ns")
	if err != nil {
		return run, err
	}
	run.StepsPerSec, run.Wall, run.Steps = v[0], time.Duration(math.Round(v[1])), rec.Iters
	return run, nil
}

// tuneRanks is a record's ranks= (0 where absent: one process); our
// pipeline's records have none.
func tuneRanks(rec Record) (int, error) {
	v, ok := rec.Keys["ranks"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || rec.Keys["pipeline"] != "" {
		return 0, fmt.Errorf("%s: ranks %q: want a count of 1 or more, on a script's record", fullName(rec.Result), v)
	}
	return n, nil
}

// decodeTuneOursProfile is our pipeline's profile record: its rates,
// the model's picks and bound.
func decodeTuneOursProfile(rec Record, own tune.Setting) (p tune.Profile, pick, fetchPick int, err error) {
	v, err := rec.valuesIn("steps/s", "cached-steps/s", "startup-ns", "pick-workers")
	if err != nil {
		return p, 0, 0, err
	}
	p = tune.Profile{Own: own, Pipeline: rec.Keys["pipeline"], Before: v[0], Cached: v[1], Startup: time.Duration(math.Round(v[2])),
		Limit: strings.ReplaceAll(rec.Keys["bound"], "+", " ")}
	if f, ok := resultfile.Value(rec.Result, "pick-fetch"); ok {
		fetchPick = int(f)
	}
	return p, int(v[3]), fetchPick, nil
}

func decodeTuneProfile(rec Record, own tune.Setting) (tune.Profile, int, error) {
	v, err := rec.valuesIn("steps/s", "cached-steps/s", "startup-ns", "cuda", "pick-workers")
	if err != nil {
		return tune.Profile{}, 0, err
	}
	p := tune.Profile{Own: own, Before: v[0], Cached: v[1], Startup: time.Duration(math.Round(v[2])), CUDA: v[3] == 1}
	if it, ok := resultfile.Value(rec.Result, "iterable"); ok { // absent before it was recorded: a map-style dataset
		p.Iterable = it == 1
	}
	if bound, ok := rec.Keys["bound"]; ok {
		m, err := rec.valuesIn("step-ns", "batch-ns/worker", "free-batch-ns/worker", "batch-cpu-ns", "main-cpu-ns/step", "stage-ns/batch", "model-workers", "cores")
		if err != nil {
			return p, 0, err
		}
		d := func(x float64) time.Duration { return time.Duration(math.Round(x)) }
		p.Model = &ownloop.WhatIf{Step: d(m[0]), PerBatch: d(m[1]), FreePerBatch: d(m[2]), CPUPerBatch: d(m[3]), MainCPUPerStep: d(m[4]),
			StageTime: d(m[5]), Workers: int(m[6]), Cores: int(m[7]), Stage: strings.ReplaceAll(bound, "+", " ")}
	}
	return p, int(v[4]), nil
}

// tuneReasons sets the reason of each of r's failed runs from the
// file's tune-failed lines (TuneFailures), where settings, the lines the
// records carry, hold them: a file's, or a run's given the file's
// settings. The reason is as the line holds it, on one line.
func tuneReasons(r *tune.Result, settings []resultfile.Config) {
	n := 0
	for i, run := range r.Runs {
		if !run.Failed {
			continue
		}
		n++
		line := setting(settings, "tune-failed-"+strconv.Itoa(n))
		if reason, ok := strings.CutPrefix(line, run.Setting.Args()+": "); ok {
			r.Runs[i].Reason = reason
		}
	}
}

// TuneFailures are the configuration lines of a tune's failed runs: the
// setting and the reason of each, in order (tune-failed-1, …).
func TuneFailures(r tune.Result) []resultfile.Config {
	var out []resultfile.Config
	for _, run := range r.Runs {
		if run.Failed {
			reason := strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(run.Reason) // one line
			out = append(out, resultfile.Config{Key: "tune-failed-" + strconv.Itoa(len(out)+1), Value: run.Setting.Args() + ": " + reason})
		}
	}
	return out
}
