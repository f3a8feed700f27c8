package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// OwnLoopLadder is `headspace ladder -- COMMAND`: the caching ladder on
// a user's own, unmodified training script, run under the hook
// (harness/ownloop): each level of Config a run of the script, levels
// alternated, Count runs a level, steps/s of each (docs/own-loop.md).
type OwnLoopLadder struct {
	// Argv is the training command, as given after --.
	Argv   []string
	Config ownloop.LadderConfig
	// log, if set, receives the script's output and the hook's lines
	// (the command's stderr) in Run; without it they are discarded.
	log io.Writer
	// made, if set, is given Run's outcome once the ladder has ended (an
	// interrupted one's too): the file's lines are then known
	// (ownLadderHandoff).
	made func(OwnLoopLadderOutcome)
}

// OwnLoopScript is the script of the own-loop experiments' sizes: a
// DataLoader of two workers whose samples sleep (testdata of
// harness/ownloop), run by PeerPython (Debian's python3-torch).
const OwnLoopScript = "harness/ownloop/testdata/sleepy.py"

// DefaultOwnLoopLadder is the ladder on OwnLoopScript at the command's
// defaults: host, sample, raw (where the dataset is torchvision-style)
// and none, 20 steps a run, 3 runs a level.
func DefaultOwnLoopLadder() OwnLoopLadder {
	return OwnLoopLadder{Argv: []string{PeerPython, OwnLoopScript, "--getitem-ms", "6", "--step-ms", "2"},
		Config: ownloop.LadderConfig{Levels: []level.Level{level.Host, level.Sample, level.Raw, level.None}, Steps: ownLadderSteps, Count: 3, Loader: 1,
			FirstBatchTimeout: 2 * time.Minute, StallTimeout: 5 * time.Minute, RawIfTorchvision: true}}
}

// QuickOwnLoopLadder is one run a level of 6 steps.
func QuickOwnLoopLadder() OwnLoopLadder {
	l := DefaultOwnLoopLadder()
	l.Config.Steps, l.Config.Count = 6, 1
	return l
}

// Name is "OwnLoopLadder": BenchmarkOwnLoopLadder/level=…/script=…/workers=….
func (OwnLoopLadder) Name() string { return "OwnLoopLadder" }

// Document is "": the ladder of document 003 on the user's own loop.
func (OwnLoopLadder) Document() string { return "" }

// Validate reports the first problem with the ladder.
func (l OwnLoopLadder) Validate() error {
	if len(l.Argv) == 0 {
		return fmt.Errorf("own-loop ladder: no training command")
	}
	return l.Config.Validate()
}

// Settings are the ladder's lines (ownloop.LadderConfigLines); the
// command's lines (the interpreter, torch, the loaders) are known once it
// has run: OwnLoopLadderOutcome.Config.
func (l OwnLoopLadder) Settings() []resultfile.Config { return ownloop.LadderConfigLines(l.Config) }

// OwnLoopLadderOutcome is what the ladder on a command measured: a point
// a run, in the order they ran, and what the report states: the
// command, its Python and torch, the steps a run and the runs a level.
// Decode reads the points back from the records, the rest from the
// file's lines (records read alone leave it zero), and Count as the most
// runs of a level.
type OwnLoopLadderOutcome struct {
	Script                 string // the script's key in the records' names
	Command, Python, Torch string
	Steps, Count           int
	Points                 []ownloop.LadderPoint
	// Device is the device the script trained on, and Config the file's
	// lines (the command's and the ladder's).
	Device string
	Config []resultfile.Config
}

// Measure is MeasureEach with no callback, the script's output
// discarded.
func (l OwnLoopLadder) Measure(ctx context.Context, env Env) (OwnLoopLadderOutcome, error) {
	return l.MeasureEach(ctx, env, io.Discard, nil)
}

// MeasureEach runs the ladder (ownloop.Ladder), the script's output and
// the hook's lines to log, passing each point to each (if not nil) as it
// is made; it returns what it measured, also before an error (an
// interrupted run's points included).
func (l OwnLoopLadder) MeasureEach(ctx context.Context, env Env, log io.Writer, each func(ownloop.LadderPoint) error) (OwnLoopLadderOutcome, error) {
	o := OwnLoopLadderOutcome{Steps: l.Config.Steps, Count: l.Config.Count}
	if err := l.Validate(); err != nil {
		return o, fmt.Errorf("%w: %v", ownloop.ErrRefused, err)
	}
	cmd, err := ownloop.ParseCommand(l.Argv)
	if err != nil {
		return o, err
	}
	o.Script = cmd.Key()
	env.start(l.Name())
	err = ownloop.Ladder(ctx, cmd, l.Config, log, func(p ownloop.LadderPoint) error {
		if len(o.Points) == 0 {
			o.Config = append(ownloop.CommandConfig(cmd, p.From), l.Settings()...)
			o.Device, o.Command = p.From.Device(), configValue(o.Config, "command")
			o.Python, o.Torch = p.From.Start.Python, p.From.Start.Torch
		}
		o.Points = append(o.Points, p)
		if each != nil {
			return each(p)
		}
		return nil
	})
	return o, err
}

// configValue is key's value in config, "" where it has none.
func configValue(config []resultfile.Config, key string) string {
	for _, c := range config {
		if c.Key == key {
			return c.Value
		}
	}
	return ""
}

// Run runs the ladder (MeasureEach) and returns its records
// (OwnLoopLadderCodec), each passed to env.Result as its run finishes,
// so that an interrupted ladder keeps the runs it finished.
func (l OwnLoopLadder) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	var script string
	if cmd, err := ownloop.ParseCommand(l.Argv); err == nil {
		script = cmd.Key()
	}
	log := l.log
	if log == nil {
		log = io.Discard
	}
	var recs []*benchfmt.Result
	o, err := l.MeasureEach(ctx, env, log, func(p ownloop.LadderPoint) error {
		recs = append(recs, ownLoopPointRecord(script, p))
		return env.result(recs[len(recs)-1])
	})
	if l.made != nil {
		l.made(o)
	}
	return recs, err
}

// Flags binds the ladder's flags to its fields, their defaults the
// fields' values: --steps, --warmup, --count, --loader and the timeouts
// (ladder -- COMMAND sets the ladder from ladder's flags of those names
// and --levels: ownLadderConfig).
func (l *OwnLoopLadder) Flags(fs *flag.FlagSet) {
	c := &l.Config
	fs.IntVar(&c.Steps, "steps", c.Steps, "measured training `steps` per run")
	fs.IntVar(&c.Warmup, "warmup", c.Warmup, "`steps` run before measuring (0: the automatic warm-up)")
	fs.IntVar(&c.Count, "count", c.Count, "`runs` of each level")
	fs.IntVar(&c.Loader, "loader", c.Loader, "which DataLoader is the training loop's, by the order of first iteration in the main thread (`n`)")
	fs.DurationVar(&c.FirstBatchTimeout, "first-batch-timeout", c.FirstBatchTimeout, "how long to wait for the training loop's first batch (`duration`)")
	fs.DurationVar(&c.StallTimeout, "stall-timeout", c.StallTimeout, "how long to wait for each step after the first batch (`duration`)")
}

// Codec is OwnLoopLadderCodec.
func (OwnLoopLadder) Codec() Codec[OwnLoopLadderOutcome] { return OwnLoopLadderCodec }

var _ Typed[OwnLoopLadderOutcome] = OwnLoopLadder{}

// Report prints the ladder's table: the command, its Python and torch,
// then steps/s a level with its interval, its ratio to the top and the
// step time each stage adds (ownloop.WriteLadder); the same after a run
// (an interrupted one's too) and from its file; nothing where no run
// finished.
func (OwnLoopLadder) Report(o OwnLoopLadderOutcome, w io.Writer) error {
	if len(o.Points) == 0 {
		return nil // no run finished: nothing to show
	}
	if o.Command == "" {
		return fmt.Errorf("own-loop ladder: nothing to report (records read without their file's configuration lines)")
	}
	fmt.Fprintf(w, "command: %s\n", o.Command)
	fmt.Fprintf(w, "python %s, torch %s; %d steps a run after the warm-up, %d runs a level\n\n", o.Python, o.Torch, o.Steps, o.Count)
	ownloop.WriteLadder(w, o.Points)
	return nil
}

// ownLoopPointRecord is point p's record, of the script keyed script:
// BenchmarkOwnLoopLadder/level=…/script=…/workers=…, its steps as
// iterations, the mean step time (ns/op), steps/s and, where the batch
// size is known, samples/s.
func ownLoopPointRecord(script string, p ownloop.LadderPoint) *benchfmt.Result {
	vals := []benchfmt.Value{{Value: float64(p.StepTime), Unit: "ns/op"}, {Value: p.StepsPerSec(), Unit: "steps/s"}}
	if p.BatchSize > 0 {
		vals = append(vals, benchfmt.Value{Value: p.StepsPerSec() * float64(p.BatchSize), Unit: "samples/s"})
	}
	return &benchfmt.Result{Name: benchfmt.Name(fmt.Sprintf("BenchmarkOwnLoopLadder/level=%s/script=%s/workers=%d", p.Level, script, p.Workers)),
		Iters: p.Steps, Values: vals}
}

// OwnLoopLadderCodec is an OwnLoopLadder's records codec: a record a run
// (ownLoopPointRecord), in the order they ran. A record of a level the
// ladder on a command does not run, of another script than the first
// record's, of no steps, or whose figures are not positive and finite
// does not decode; nor does one of another experiment (the synthetic
// ladder's BenchmarkLadder/…, whose records have no script).
var OwnLoopLadderCodec = Codec[OwnLoopLadderOutcome]{
	Experiment: "OwnLoopLadder",
	Keys:       map[string][]string{"OwnLoopLadder": {"level", "script", "workers"}},
	encode: func(o OwnLoopLadderOutcome) []*benchfmt.Result {
		return recordsOf(o.Points, func(p ownloop.LadderPoint) *benchfmt.Result { return ownLoopPointRecord(o.Script, p) })
	},
	decode: decodeOwnLoopLadder,
}

// decodeOwnLoopLadder reads the points back, each its run's number of
// its level, and the report's lines from the file's.
func decodeOwnLoopLadder(recs []Record) (OwnLoopLadderOutcome, error) {
	var o OwnLoopLadderOutcome
	runs := map[level.Level]int{}
	for _, r := range recs {
		name := at(r.Result)
		l, err := level.Parse(r.Keys["level"])
		if err != nil || !slices.Contains(ownloop.Levels, l) {
			return o, fmt.Errorf("%s: level %q: not a level of the ladder on a command", name, r.Keys["level"])
		}
		if o.Script == "" {
			o.Script = r.Keys["script"]
		} else if r.Keys["script"] != o.Script {
			return o, fmt.Errorf("%s: script %q, the records before %q", name, r.Keys["script"], o.Script)
		}
		workers, err := r.count("workers", false)
		if err != nil {
			return o, err
		}
		ns, err := r.Value("ns/op")
		if err != nil {
			return o, err
		}
		sps, err := r.Value("steps/s")
		if err != nil {
			return o, err
		}
		if r.Iters < 1 || !(ns > 0) || math.IsInf(ns, 0) || !(sps > 0) || math.IsInf(sps, 0) {
			return o, fmt.Errorf("%s: %d steps of %v ns/op, %v steps/s: want a step or more, each figure positive and finite", name, r.Iters, ns, sps)
		}
		p := ownloop.LadderPoint{Level: l, Run: runs[l], Steps: r.Iters, StepTime: time.Duration(math.Round(ns)), Workers: workers}
		if samples, ok := resultfile.Value(r.Result, "samples/s"); ok {
			p.BatchSize = int(math.Round(samples / sps))
		}
		runs[l]++
		o.Count = max(o.Count, runs[l])
		o.Points = append(o.Points, p)
	}
	if cfg := fileSettings(recs[0].Result); len(cfg) > 0 {
		o.Config = cfg
		o.Command, o.Python, o.Torch = configValue(cfg, "command"), configValue(cfg, "python"), configValue(cfg, "torch")
		var err error
		if o.Steps, err = strconv.Atoi(configValue(cfg, "steps")); err != nil || o.Steps < 1 {
			return o, fmt.Errorf("%s: steps %q: want the steps a run, a positive count", filePart(recs[0].Result), configValue(cfg, "steps"))
		}
	}
	return o, nil
}

// ownLadderFlags are ladder's own flags that a command run keeps.
type ownLadderFlags struct {
	levels               string
	steps, warmup, count int
	out                  string
}

// ownLadderSteps is the default of --steps for a command: the synthetic
// ladder's 4 steps are too few for a loader's bursts.
const ownLadderSteps = 20

// ownLadderHandoff is `headspace ladder -- COMMAND`: OwnLoopLadder, the
// ladder that ladder's flags set (ownLadderConfig), handed to the command
// layer to run the one way into out (driver.Run, each run recorded as it
// finishes, the file read back through its codec, its Report); an
// interrupted ladder's table shows the runs finished before it.
func ownLadderHandoff(fs *flag.FlagSet, of *ownFlags, lf ownLadderFlags, stderr io.Writer) (*Handoff, error) {
	if err := checkOwnFlags(fs, true, "levels", "steps", "warmup", "count", "out"); err != nil {
		return nil, err
	}
	c, err := ownLadderConfig(fs, of, lf)
	if err != nil {
		return nil, err
	}
	if _, err := ownloop.ParseCommand(fs.Args()); err != nil {
		return nil, OwnLoopError(err)
	}
	var made OwnLoopLadderOutcome
	e := &OwnLoopLadder{Argv: fs.Args(), Config: c, log: stderr, made: func(o OwnLoopLadderOutcome) { made = o }}
	const kept = "the table shows the runs finished before it"
	s := Setup{Units: c.Count * len(c.Levels), Device: func() string { return made.Device }, Lines: func() []resultfile.Config { return made.Config },
		Partial: kept, End: func(w io.Writer, o driver.Outcome) error {
			if len(made.Points) == 0 {
				return o.Err("")
			}
			if lf.out != "" {
				cli.KeptNote(w, lf.out, o.Path)
				fmt.Fprintf(w, "results: %s (go tool benchstat -col /level %s)\n", o.Path, o.Path)
			}
			return o.Err(kept)
		}}
	return &Handoff{Experiment: e, Setup: s, Out: driver.Output{Path: lf.out}, Errors: OwnLoopError}, nil
}

// ownLadderConfig is the ladder on a command that the flags set,
// checked.
func ownLadderConfig(fs *flag.FlagSet, of *ownFlags, lf ownLadderFlags) (ownloop.LadderConfig, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c := ownloop.LadderConfig{Levels: []level.Level{level.Host, level.Sample, level.Raw, level.None}, Steps: lf.steps, Count: lf.count, Loader: of.loader, FirstBatchTimeout: of.firstTimeout, StallTimeout: of.stallTimeout}
	if !set["steps"] {
		c.Steps = ownLadderSteps
	}
	if set["warmup"] {
		c.Warmup = lf.warmup
	}
	c.RawIfTorchvision = lf.levels == ""
	if lf.levels != "" {
		ls, err := level.ParseList(lf.levels)
		if err != nil {
			return c, cli.Usagef("--levels: %v", err)
		}
		c.Levels = ls
	}
	if err := cli.FirstErr(cli.InRange("--steps", c.Steps, 1, cli.MaxSteps), cli.InRange("--count", c.Count, 1, 1000), cli.InRange("--loader", of.loader, 1, 1<<20)); err != nil {
		return c, err
	}
	if set["warmup"] && lf.warmup < 1 {
		return c, cli.Usagef("--warmup %d must be at least 1 with a command (leave it out for the automatic warm-up)", lf.warmup)
	}
	if err := of.checkTimeouts(); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, OwnLoopError(err)
	}
	return c, nil
}

// IsOwnLoopLadderFile says the result file at path is one of ladder --
// COMMAND --out (its first record OwnLoopLadder's), for ladder --from.
func IsOwnLoopLadderFile(path string) bool {
	rs, err := resultfile.Read(path)
	return err == nil && len(rs) > 0 && strings.HasPrefix(string(rs[0].Name), "OwnLoopLadder/")
}

// ownLadderFrom is ladder --from of a file of ladder -- COMMAND: its
// table rebuilt through OwnLoopLadderCodec, the file's figures and lines
// alone, by the command layer.
func ownLadderFrom(fs *flag.FlagSet, from string) (*Handoff, error) {
	if err := cli.FromOnly(fs); err != nil {
		return nil, err
	}
	e := Sized[OwnLoopLadder](Default)
	return &Handoff{Experiment: &e, From: from, Name: "ladder -- COMMAND"}, nil
}
