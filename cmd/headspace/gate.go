package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/harness/preflight"
	"github.com/headspace-bench/headspace/internal/cli"
)

// gate's bounds, beside its flags (internal/cli's table; --quiet-wait's is
// package command's).
var _ = cli.Declare(map[string]cli.Bound{
	"gate rounds":     {Lo: 1, Hi: cli.MaxCount},
	"gate confirm":    {Lo: 0, Hi: cli.MaxCount},
	"gate max-rounds": {Lo: 0, Hi: 10_000},
	"gate threshold":  {Lo: 0, Hi: 1},
	"gate canary":     {Lo: -1, Hi: 10}, // -1 (the default): not a canary; else the head's injected slowdown
})

func init() {
	register(cli.Command{Name: "gate", Summary: "the paired regression gate: build a base revision and run it and this tree alternately", Run: runGate})
}

const gateUsage = `
headspace gate --base REV --out DIR [flags] -- COMMAND [ARGS...]

The paired, interleaved regression gate. It builds headspace at the base
revision REV (in a temporary git worktree, removed afterwards) and from
this working tree (the head, uncommitted changes included), then runs
'headspace COMMAND ARGS...' (a measuring command such as ladder) with
each build alternately: in each round base and head run once, in an order
drawn at random, each adding one run of every point to DIR/base.txt or
DIR/head.txt (COMMAND gets --out and --count; do not pass them). Before
each round it waits up to --quiet-wait for a quiet machine.

It decides on per-round ratios head/base, the round being the unit of
replication: for each benchmark and unit the median ratio with a
bootstrap 95% interval over rounds (Bonferroni over the verdict metrics),
and a verdict: faster, slower, same, not slower (the interval excludes a
slowdown beyond --threshold, and reaches a speed-up beyond it) or not
sure (the interval holds a slowdown beyond --threshold). Each benchmark's verdict
metric is its CPU time per op (cpu-ns/op) where the base's runs kept at
least half a core busy (CPU-bound: median CPU time at least half the wall
time of the run that waited least), else its wall time per op; a CPU-bound
point whose wall time has at least half its rounds (and 5) undisturbed is
judged on its wall time too, and fails if either is slower. A round in
which the sides' run-queue delays caused by other processes (at most the
CPU time they used, other-cores: a side's own threads waiting for each
other are no disturbance) differ by more than 5% of wall time (or, where a
side records no delay, a side stayed disturbed) is left out of that
benchmark's wall-time ratios and replaced (at most --rounds/2 more); CPU
time, which does not count waiting, keeps every round. A first alarm (a verdict metric
slower beyond --threshold with its whole interval on the slower side)
runs --confirm more rounds, and fails only if they agree in direction
(their own median ratio is on the slower side) and all rounds together,
the first stage's included, are slower. It passes only on evidence:
when every verdict metric's interval excludes a slowdown beyond
--threshold. Until then (not sure, or too few undisturbed rounds) it adds
--rounds more rounds at a time, up to --max-rounds in all (8 × --rounds
by default), and there ends asking for a rerun. The report goes to stdout
and DIR/gate.txt, rewritten after every round.

Exits 0 when every verdict metric's interval excludes a slowdown beyond
--threshold (pass), 1 when one is slower (confirmed), 3 when nothing is
slower but the session may not pass: a verdict metric still not sure at
--max-rounds ("not sure: rerun"), or with too few undisturbed rounds
(rerun on a quieter machine), or with fewer rounds than a verdict needs
(an interrupted session, replayed), 2 with one line and nothing
written when REV is not a commit, DIR is a file or already holds a
session, a build fails, or a build cannot run the command (a flag it
lacks: each build is asked with --help before any round, and a command
that fails before the first round completes is refused too), and 130 on
SIGINT: the rounds done stay in DIR, the report marked partial (during
the builds: nothing is left, no worktree, no build folder). --replay DIR decides again on a session's files (all rounds at
once, no confirmation stage, no more rounds: exit 0, 1 or 3 as above),
printing the report; nothing runs. For
files made elsewhere, use 'headspace compare OLD NEW'.`

func runGate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("gate", gateUsage, stdout)
	base := fs.String("base", "", "the base `revision` (a commit, branch or tag) to compare this tree against")
	out := fs.String("out", "", "`DIR` for base.txt, head.txt and gate.txt (created; must not hold a session)")
	rounds := fs.Int("rounds", gate.DefaultRounds, "rounds of the first stage")
	confirm := fs.Int("confirm", gate.DefaultConfirmRounds, "rounds a first alarm adds to confirm it")
	maxRounds := fs.Int("max-rounds", 0, "the most rounds a session runs before it stops not sure (exit 3); 0: "+fmt.Sprint(gate.DefaultMaxRoundsFactor)+" × --rounds, and never fewer than --rounds plus --confirm")
	threshold := fs.Float64("threshold", gate.DefaultPairedThreshold, "relative `change` of the median ratio a verdict of slower or faster must exceed (0.03 = 3%)")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "`seed` of the rounds' order and the bootstrap (recorded in the report)")
	wait := fs.Duration("quiet-wait", preflight.DefaultQuietWait(), "before each round, wait at most `time` for the machine's CPU pressure to fall below 10% (0: do not wait)")
	headTags := fs.String("head-tags", "", "build `tags` for the head build only (headspace_inject: a calibrated slowdown, see docs/gate.md)")
	replay := fs.String("replay", "", "decide again on a session's `DIR` (its base.txt and head.txt, one run a round) and print the report; nothing runs or is written")
	canary := fs.Float64("canary", -1, "run the session as a canary whose head is slower by `fraction` (0 for A/A; 0.10 with --head-tags headspace_inject and HEADSPACE_INJECT=raw=0.10), and record its outcome in DIR/canary.txt for the history")
	canaries := fs.Bool("canaries", false, "print the false-failure rate and power, with Clopper–Pearson intervals, of every canary session under the `PATH`s given after the flags (canary.txt records, history stores, ci/aa-paired.sh sessions.tsv), each session once however many paths reach it; a record without a failed or rerun value of 0 or 1 is refused; nothing runs")
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if *replay != "" {
		return replayGate(*replay, gate.PairedOptions{Threshold: *threshold, Seed: *seed}, stdout)
	}
	if *canaries {
		return printCanaries(fs.Args(), stdout)
	}
	argv := fs.Args()
	if err := checkGateArgs(*base, *out, argv, *rounds, *confirm, *wait, *canary, *headTags); err != nil {
		return err
	}
	if *maxRounds != 0 && (*maxRounds < *rounds+*confirm || *maxRounds > 10000) {
		return cli.Usagef("--max-rounds %d: want 0 (%d × --rounds) or from --rounds plus --confirm (%d) to 10000", *maxRounds, gate.DefaultMaxRoundsFactor, *rounds+*confirm)
	}
	opt := gate.PairedOptions{Threshold: *threshold, Seed: *seed}
	if err := opt.Validate(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	live := gate.Live{Base: *base, HeadTags: *headTags, Command: argv, Out: *out, QuietWait: *wait,
		Session: gate.Session{Rounds: *rounds, Confirm: *confirm, Max: *maxRounds, Options: opt, Seed: *seed},
		// The gate waits for a quiet machine itself: the runs do not.
		ChildEnv: []string{preflight.EnvQuietWait + "=0"}, Log: stderr}
	if *canary >= 0 {
		live.Canary = canary
	}
	res, runErr := live.Run(ctx)
	return gateOutcome(ctx, stdout, res, runErr, *out)
}

// checkGateArgs refuses, as a usage error, a live session's missing or
// out-of-range settings and a command that sets what the gate sets.
func checkGateArgs(base, out string, command []string, rounds, confirm int, wait time.Duration, canary float64, headTags string) error {
	switch {
	case base == "":
		return cli.Usagef("--base REV is required")
	case out == "":
		return cli.Usagef("--out DIR is required")
	case len(command) == 0:
		return cli.Usagef("want the command to run after --, e.g. -- ladder --levels none,raw --steps 2")
	case rounds < gate.DefaultMinRounds || rounds > 1000:
		return cli.Usagef("--rounds %d: want %d to 1000 (a verdict needs %d undisturbed rounds)", rounds, gate.DefaultMinRounds, gate.DefaultMinRounds)
	case confirm < gate.DefaultMinRounds || confirm > 1000:
		return cli.Usagef("--confirm %d: want %d to 1000", confirm, gate.DefaultMinRounds)
	case wait < 0:
		return cli.Usagef("--quiet-wait %v: want 0 or more", wait)
	case canary != -1 && !(canary >= 0 && canary < 10):
		return cli.Usagef("--canary %v: want the head's injected slowdown as a fraction in [0, 10) (0 for A/A)", canary)
	case canary > 0 && !strings.Contains(headTags, "headspace_inject"):
		return cli.Usagef("--canary %v: a slowed head is built with --head-tags headspace_inject (and HEADSPACE_INJECT set)", canary)
	}
	for _, a := range command[1:] {
		name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-")
		if strings.HasPrefix(a, "-") && slices.Contains([]string{"out", "count", "fresh"}, name) {
			return cli.Usagef("the command's %s is the gate's to set: leave it out", a)
		}
	}
	return nil
}

// gateOutcome prints a live session's report and maps its outcome to the
// gate's exit: 2 for a setup error, 130 when interrupted, 1 when slower,
// ExitDisturbed when it must be rerun.
func gateOutcome(ctx context.Context, stdout io.Writer, res gate.LiveResult, runErr error, out string) error {
	var setup gate.SetupError
	switch {
	case errors.As(runErr, &setup):
		return cli.UsageError{Msg: setup.Msg}
	case runErr != nil && ctx.Err() != nil && res.Files[gate.Base] == "":
		return driver.Interrupted{Kept: "nothing: interrupted before the first round"}
	case runErr != nil && res.Files[gate.Base] == "":
		return runErr
	}
	var buf bytes.Buffer
	res.WriteText(&buf, res.BaseName, res.HeadName)
	stdout.Write(buf.Bytes())
	switch {
	case runErr != nil && ctx.Err() != nil:
		return driver.Interrupted{Kept: fmt.Sprintf("%d rounds kept in %s, marked partial", len(res.Rounds), out)}
	case runErr != nil:
		return runErr
	case res.Failed():
		return exitError{code: 1, msg: fmt.Sprintf("%d verdict metric(s) slower, confirmed", len(res.Report.Slower()))}
	}
	return rerunExit(res.Outcome)
}

// rerunExit is the exit of a finished session that found nothing slower:
// nil when it passes, ExitDisturbed with why it may not.
func rerunExit(o gate.Outcome) error {
	switch {
	case o.Unsure():
		return exitError{code: gate.ExitDisturbed, msg: fmt.Sprintf("not sure: rerun (%d verdict metric(s) may be slower by more than the threshold after %d rounds)", len(o.Report.Unsure()), len(o.Rounds))}
	case o.Rerun():
		return exitError{code: gate.ExitDisturbed, msg: "too few undisturbed rounds: rerun on a quieter machine"}
	}
	return nil
}

// replayGate decides on a session's files again: round k is the k-th run
// of every benchmark in DIR/base.txt and DIR/head.txt.
func replayGate(dir string, opt gate.PairedOptions, stdout io.Writer) error {
	if err := opt.Validate(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	rounds, err := gate.ReplayRounds(dir)
	if err != nil {
		return cli.UsageError{Msg: fmt.Sprintf("--replay %s: %v", dir, err)}
	}
	rep := gate.ComparePaired(rounds, opt)
	o := gate.Outcome{Rounds: rounds, Report: rep, First: rep}
	if err := o.WriteText(stdout, filepath.Join(dir, "base.txt"), filepath.Join(dir, "head.txt"), "replayed from the files: every round at once, no confirmation stage"); err != nil {
		return err
	}
	if o.Failed() {
		return exitError{code: 1, msg: fmt.Sprintf("%d verdict metric(s) slower", len(rep.Slower()))}
	}
	return rerunExit(o)
}

// printCanaries prints the rates of every canary under paths.
func printCanaries(paths []string, stdout io.Writer) error {
	if len(paths) == 0 {
		return cli.Usagef("--canaries: want the paths to read after the flags, e.g. --canaries results/store results/paired-aa-r2")
	}
	cs, err := gate.ReadCanaries(paths...)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return gate.WriteCanaryText(stdout, cs)
}
