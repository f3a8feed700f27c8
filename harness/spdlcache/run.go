package spdlcache

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/internal/procgroup"
	"github.com/headspace-bench/headspace/internal/summary"
)

// The sides, as the records' peer= names them.
const (
	Ours = "ours"       // the script unchanged under headspace analyze
	SPDL = "spdl-cache" // the script with --spdl-cache: SPDL's CacheDataLoader
)

// Sides are the two, in a report's order.
var Sides = []string{Ours, SPDL}

// DefaultScript is the training script, relative to the repository.
const DefaultScript = "examples/own-loop/train_cachedataloader.py"

// Config is one comparison.
type Config struct {
	Python string // the peers env's python (torch 2, torchvision, spdl)
	Script string // DefaultScript, or one that takes its flags
	Data   string // the ImageFolder the script reads
	// The script's loader and model.
	Workers, Batch, Crop int
	// The cache: SPDL's CacheDataLoader's and the hook's alike.
	NumCaches, ReturnCachesAfter, StepsAfter int
	Count                                    int // rounds
	// FirstBatchTimeout and StallTimeout bound ours' waits (ownloop);
	// a run of SPDL's side is bounded by Timeout in all.
	FirstBatchTimeout, StallTimeout, Timeout time.Duration
}

// Images is how many images the ImageFolder needs: one epoch of
// the script (its loader drops the last partial batch) covers every step
// of a run, and one more.
func (c Config) Images() int { return c.Batch * (c.ReturnCachesAfter + c.StepsAfter + 2) }

// Validate says what cannot run.
func (c Config) Validate() error {
	switch {
	case c.Workers < 0 || c.Batch < 1 || c.Crop < 1:
		return fmt.Errorf("workers %d, batch %d, crop %d: want workers >= 0 and a positive batch and crop", c.Workers, c.Batch, c.Crop)
	case c.NumCaches < 1 || c.ReturnCachesAfter < c.NumCaches:
		return fmt.Errorf("num-caches %d, return-caches-after %d: want 1 <= num-caches <= return-caches-after", c.NumCaches, c.ReturnCachesAfter)
	case c.ReturnCachesAfter < c.minPhase() || c.StepsAfter < c.minPhase():
		return fmt.Errorf("return-caches-after %d, steps-after %d: want at least %d steps in each phase (3 rounds of %d workers' steps, and the first left out)",
			c.ReturnCachesAfter, c.StepsAfter, c.minPhase(), max(1, c.Workers))
	case c.Count < 1:
		return fmt.Errorf("count %d: want at least 1 round", c.Count)
	}
	return nil
}

// minPhase is the fewest steps a phase can have: ours' estimate takes 3
// whole rounds of the workers' steps (ownloop.Analyze), after the first
// step, left out.
func (c Config) minPhase() int { return 1 + 3*max(1, c.Workers) }

// scriptArgs are the script's arguments, both sides'.
func (c Config) scriptArgs() []string {
	return []string{c.Script, "--data", c.Data, "--workers", strconv.Itoa(c.Workers), "--batch", strconv.Itoa(c.Batch), "--crop", strconv.Itoa(c.Crop)}
}

// OursCommand is the command headspace analyze runs: the script as it is.
func (c Config) OursCommand() []string {
	return append([]string{c.Python}, append(c.scriptArgs(), "--epochs", "1")...)
}

// SPDLCommand is SPDL's side's command, its step log at log.
func (c Config) SPDLCommand(log string) []string {
	return append([]string{c.Python}, append(c.scriptArgs(), "--spdl-cache", "--num-caches", strconv.Itoa(c.NumCaches),
		"--return-caches-after", strconv.Itoa(c.ReturnCachesAfter), "--steps-after", strconv.Itoa(c.StepsAfter), "--step-log", log)...)
}

// Run is one run of one side.
type Run struct {
	Side    string
	Workers int
	Round   int // 1-based
	Steps   int // both phases' steps
	// Before and After are the step time from the loader and on cached
	// batches: ours the median of the round means, SPDL's the mean.
	Before, After time.Duration
	// OtherBefore and OtherAfter are the other side's estimator on this
	// run's step times: for ours the means, for SPDL's the median of the
	// round means (zero where the steps are too few for it). They tell
	// the estimators apart from the measurements.
	OtherBefore, OtherAfter time.Duration
	// Ours' 95% intervals of Before and After (zero for SPDL's side, and
	// where too few rounds give none).
	BeforeLo, BeforeHi, AfterLo, AfterHi time.Duration
	// Missing is why a run that failed has no figures.
	Missing string
}

// Share is the run's headspace: 1 − After ÷ Before (NaN without a
// Before).
func (r Run) Share() float64 { return share(r.Before, r.After) }

// OtherShare is the run's headspace by the other side's estimator.
func (r Run) OtherShare() float64 { return share(r.OtherBefore, r.OtherAfter) }

func share(before, after time.Duration) float64 {
	if before <= 0 {
		return math.NaN()
	}
	return 1 - float64(after)/float64(before)
}

// phases splits step times i = 0, 1, … into the steps before the switch
// and after it, the first of each left out.
func phases(ts []time.Duration, switchAt int) (before, after []time.Duration) {
	for i, t := range ts {
		switch {
		case i >= 1 && i < switchAt:
			before = append(before, t)
		case i > switchAt:
			after = append(after, t)
		}
	}
	return before, after
}

// SPDLRun is SPDL's side's estimate from the script's step times: the
// mean of each phase.
func SPDLRun(ts []time.Duration, c Config) (Run, error) {
	r := Run{Side: SPDL, Workers: c.Workers, Steps: len(ts)}
	if want := c.ReturnCachesAfter + c.StepsAfter; len(ts) != want {
		return r, fmt.Errorf("the script logged %d steps, want %d (return-caches-after + steps-after)", len(ts), want)
	}
	before, after := phases(ts, c.ReturnCachesAfter)
	r.Before, r.After = meanOf(before), meanOf(after)
	if round := max(1, c.Workers); len(before) >= 3*round && len(after) >= 3*round {
		r.OtherBefore, r.OtherAfter = analysis.RoundEstimate(before, round).Median, analysis.RoundEstimate(after, round).Median
	}
	return r, nil
}

func meanOf(ts []time.Duration) time.Duration {
	xs := make([]float64, len(ts))
	for i, t := range ts {
		xs[i] = float64(t)
	}
	return time.Duration(math.Round(summary.Mean(xs)))
}

// OursRun is ours' estimate from headspace analyze's report, whose
// training loop switched after switchAt steps. An interval too few
// rounds give (infinite) is left zero.
func OursRun(rep analysis.Report, workers, switchAt int) Run {
	r := Run{Side: Ours, Workers: workers, Steps: len(rep.StepTimes), Before: rep.Before.Median, After: rep.After.Median}
	before, after := phases(rep.StepTimes, switchAt)
	r.OtherBefore, r.OtherAfter = meanOf(before), meanOf(after)
	if e := rep.Before; bounded(e) {
		r.BeforeLo, r.BeforeHi = e.Lo, e.Hi
	}
	if e := rep.After; bounded(e) {
		r.AfterLo, r.AfterHi = e.Lo, e.Hi
	}
	return r
}

// bounded says e has a finite interval around its median (an infinite
// bound does not survive the conversion to a time.Duration).
func bounded(e analysis.Estimate) bool { return 0 < e.Lo && e.Lo <= e.Median && e.Median <= e.Hi }

// ReadStepLog reads the script's --step-log: one JSON object a line,
// {"step": i, "ns": t}, the steps in order from 0, each time positive.
func ReadStepLog(r io.Reader) ([]time.Duration, error) {
	var ts []time.Duration
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s struct {
			Step *int   `json:"step"`
			NS   *int64 `json:"ns"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case s.Step == nil || s.NS == nil:
			return nil, fmt.Errorf("line %d: want {\"step\": i, \"ns\": t}", line)
		case *s.Step != len(ts):
			return nil, fmt.Errorf("line %d: step %d, want %d", line, *s.Step, len(ts))
		case *s.NS <= 0:
			return nil, fmt.Errorf("line %d: step %d took %d ns, want a positive time", line, *s.Step, *s.NS)
		}
		ts = append(ts, time.Duration(*s.NS))
	}
	return ts, sc.Err()
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lastLine is t's last non-blank line.
func (t *tail) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// runScript runs argv in a process group of its own, killed as a group
// when ctx ends, and returns its stdout; a failure keeps the last line
// of its stderr.
func runScript(ctx context.Context, argv []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = procgroup.Group()
	cmd.Cancel = func() error { return procgroup.Kill(cmd.Process) }
	cmd.WaitDelay = time.Second
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	var stdout bytes.Buffer
	stderr := &tail{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	if err != nil && ctx.Err() == nil {
		if last := stderr.lastLine(); last != "" {
			err = fmt.Errorf("%w: %s", err, last)
		}
	}
	return stdout.Bytes(), err
}

// Check runs the script's --check: its "key: value" lines (the python,
// torch, torchvision and spdl versions).
func Check(ctx context.Context, c Config) ([][2]string, error) {
	out, err := runScript(ctx, []string{c.Python, c.Script, "--check"})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s %s --check: %w", c.Python, c.Script, err)
	}
	var kv [][2]string
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && k != "" && !strings.ContainsAny(k, " \t") {
			kv = append(kv, [2]string{k, strings.TrimSpace(v)})
		}
	}
	if len(kv) == 0 {
		return nil, fmt.Errorf("%s %s --check printed no versions", c.Python, c.Script)
	}
	return kv, nil
}

// RunSPDL runs SPDL's side once.
func RunSPDL(ctx context.Context, c Config) (Run, error) {
	dir, err := os.MkdirTemp("", "headspace-spdlcache-")
	if err != nil {
		return Run{}, err
	}
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "steps.jsonl")
	rctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	if _, err := runScript(rctx, c.SPDLCommand(log)); err != nil {
		if ctx.Err() != nil {
			return Run{}, ctx.Err()
		}
		if rctx.Err() != nil {
			return Run{}, fmt.Errorf("the script with --spdl-cache ran past %v", c.Timeout)
		}
		return Run{}, fmt.Errorf("the script with --spdl-cache: %w", err)
	}
	f, err := os.Open(log)
	if err != nil {
		return Run{}, fmt.Errorf("the script's step log: %w", err)
	}
	defer f.Close()
	ts, err := ReadStepLog(f)
	if err != nil {
		return Run{}, fmt.Errorf("the script's step log: %w", err)
	}
	return SPDLRun(ts, c)
}

// RunOurs runs headspace analyze's side once: the script under the hook,
// its output to out.
func RunOurs(ctx context.Context, c Config, out io.Writer) (Run, error) {
	cmd, err := ownloop.ParseCommand(c.OursCommand())
	if err != nil {
		return Run{}, err
	}
	s := ownloop.Settings{Mode: "analyze", Loader: 1, NumCaches: c.NumCaches, ReturnCachesAfter: c.ReturnCachesAfter, StepsAfter: c.StepsAfter,
		FirstBatchTimeout: c.FirstBatchTimeout, StallTimeout: c.StallTimeout}
	run, err := ownloop.Exec(ctx, cmd, s, out, nil)
	if err != nil {
		return Run{}, err
	}
	rep, err := ownloop.Analyze(cmd, s, run, 1)
	if err != nil {
		return Run{}, err
	}
	return OursRun(rep.Report, c.Workers, c.ReturnCachesAfter), nil
}

// Sweep runs both sides Count times, the order rotated each round
// (ours first in odd rounds), calling each after every run. A side's run
// that fails is a Run with Missing set and the sweep goes on; the
// context's end stops it with what it has.
func Sweep(ctx context.Context, c Config, out io.Writer, each func(Run)) ([]Run, error) {
	var runs []Run
	for round := 1; round <= c.Count; round++ {
		order := Sides
		if round%2 == 0 {
			order = []string{SPDL, Ours}
		}
		for _, side := range order {
			var r Run
			var err error
			if side == Ours {
				t := &tail{max: 8 << 10}
				r, err = RunOurs(ctx, c, io.MultiWriter(out, t))
				var failed *ownloop.ScriptFailed
				if errors.As(err, &failed) {
					err = fmt.Errorf("%w: %s", err, t.lastLine())
				}
			} else {
				r, err = RunSPDL(ctx, c)
			}
			if ctx.Err() != nil {
				return runs, ctx.Err()
			}
			if err != nil {
				r = Run{Side: side, Workers: c.Workers, Missing: oneLine(err.Error())}
			}
			r.Round = round
			runs = append(runs, r)
			if each != nil {
				each(r)
			}
		}
	}
	return runs, nil
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
