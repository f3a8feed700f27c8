package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/blocks/driver"
	"github.com/headspace-bench/headspace/harness/blocks/results"
	"github.com/headspace-bench/headspace/harness/engines/gate"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/disturb"
)

func init() {
	register(command{name: "gate", summary: "the paired regression gate: build a base revision and run it and this tree alternately", run: runGate})
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
and a verdict: faster, slower, same or not sure. Each benchmark's verdict
metric is its CPU time per op (cpu-ns/op) where the base's runs kept at
least half a core busy (CPU-bound: median CPU time at least half the wall
time of the run that waited least), else its wall time per op; a CPU-bound
point whose wall time has at least half its rounds (and 5) undisturbed is
judged on its wall time too, and fails if either is slower. A round in
which the sides' run-queue delays differ by more than 5% of wall time (or,
where a side records none, a side stayed disturbed) is left out of that
benchmark's wall-time ratios and replaced (at most --rounds/2 more); CPU
time, which does not count waiting, keeps every round. A first alarm (a verdict metric
slower beyond --threshold with its whole interval on the slower side)
runs --confirm more rounds, and fails only if they agree in direction
(their own median ratio is on the slower side) and all rounds together,
the first stage's included, are slower. The report goes to stdout and DIR/gate.txt, rewritten after
every round.

Exits 0 when no verdict metric is slower, 1 when one is (confirmed), 3
when nothing is slower but a verdict metric had too few undisturbed
rounds (rerun on a quieter machine), or had fewer rounds than a verdict
needs (an interrupted session, replayed), 2 with one line and nothing
written when REV is not a commit, DIR is a file or already holds a
session, a build fails, or a build cannot run the command (a flag it
lacks: each build is asked with --help before any round, and a command
that fails before the first round completes is refused too), and 130 on
SIGINT: the rounds done stay in DIR, the report marked partial (during
the builds: nothing is left, no worktree, no build folder). --replay DIR decides again on a session's files (all rounds at
once, no confirmation stage), printing the report; nothing runs. For
files made elsewhere, use 'headspace compare OLD NEW'.`

func runGate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gate", gateUsage, stdout)
	base := fs.String("base", "", "the base `revision` (a commit, branch or tag) to compare this tree against")
	out := fs.String("out", "", "`DIR` for base.txt, head.txt and gate.txt (created; must not hold a session)")
	rounds := fs.Int("rounds", gate.DefaultRounds, "rounds of the first stage")
	confirm := fs.Int("confirm", gate.DefaultConfirmRounds, "rounds a first alarm adds to confirm it")
	threshold := fs.Float64("threshold", gate.DefaultPairedThreshold, "relative `change` of the median ratio a verdict of slower or faster must exceed (0.03 = 3%)")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "`seed` of the rounds' order and the bootstrap (recorded in the report)")
	wait := fs.Duration("quiet-wait", defaultQuietWait(), "before each round, wait at most `time` for the machine's CPU pressure to fall below 10% (0: do not wait)")
	headTags := fs.String("head-tags", "", "build `tags` for the head build only (headspace_inject: a calibrated slowdown, see docs/gate.md)")
	replay := fs.String("replay", "", "decide again on a session's `DIR` (its base.txt and head.txt, one run a round) and print the report; nothing runs or is written")
	canary := fs.Float64("canary", -1, "run the session as a canary whose head is slower by `fraction` (0 for A/A; 0.10 with --head-tags headspace_inject and HEADSPACE_INJECT=raw=0.10), and record its outcome in DIR/canary.txt for the history")
	canaries := fs.Bool("canaries", false, "print the false-failure rate and power, with Clopper–Pearson intervals, of every canary session under the `PATH`s given after the flags (canary.txt records, history stores, ci/aa-paired.sh sessions.tsv); nothing runs")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *replay != "" {
		return replayGate(*replay, gate.PairedOptions{Threshold: *threshold, Seed: *seed}, stdout)
	}
	if *canaries {
		return printCanaries(fs.Args(), stdout)
	}
	command := fs.Args()
	switch {
	case *base == "":
		return usagef("--base REV is required")
	case *out == "":
		return usagef("--out DIR is required")
	case len(command) == 0:
		return usagef("want the command to run after --, e.g. -- ladder --levels none,raw --steps 2")
	case *rounds < gate.DefaultMinRounds || *rounds > 1000:
		return usagef("--rounds %d: want %d to 1000 (a verdict needs %d undisturbed rounds)", *rounds, gate.DefaultMinRounds, gate.DefaultMinRounds)
	case *confirm < gate.DefaultMinRounds || *confirm > 1000:
		return usagef("--confirm %d: want %d to 1000", *confirm, gate.DefaultMinRounds)
	case *wait < 0:
		return usagef("--quiet-wait %v: want 0 or more", *wait)
	case *canary != -1 && !(*canary >= 0 && *canary < 10):
		return usagef("--canary %v: want the head's injected slowdown as a fraction in [0, 10) (0 for A/A)", *canary)
	case *canary > 0 && !strings.Contains(*headTags, "headspace_inject"):
		return usagef("--canary %v: a slowed head is built with --head-tags headspace_inject (and HEADSPACE_INJECT set)", *canary)
	}
	for _, a := range command[1:] {
		name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-")
		if strings.HasPrefix(a, "-") && slices.Contains([]string{"out", "count", "fresh"}, name) {
			return usagef("the command's %s is the gate's to set: leave it out", a)
		}
	}
	opt := gate.PairedOptions{Threshold: *threshold, Seed: *seed}
	if err := opt.Validate(); err != nil {
		return usageError{err.Error()}
	}
	if err := checkSessionDir(*out); err != nil {
		return err
	}

	// Both builds, before anything is written.
	top, err := gitOut(ctx, "", "rev-parse", "--show-toplevel")
	if err != nil {
		return usagef("not in a git checkout: %v", err)
	}
	rev, err := gitOut(ctx, top, "rev-parse", "--verify", "--quiet", *base+"^{commit}")
	if err != nil || rev == "" {
		return usagef("--base %s: no such commit in %s", *base, top)
	}
	short := rev[:min(len(rev), 12)]
	tmp, err := os.MkdirTemp("", "headspace-gate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	interrupted := func() error {
		return driver.Interrupted{Kept: "nothing: interrupted before the first round"}
	}
	tree := filepath.Join(tmp, "base")
	if _, err := gitOut(ctx, top, "worktree", "add", "--detach", tree, rev); err != nil {
		if ctx.Err() != nil {
			return interrupted()
		}
		return usagef("--base %s: cannot check it out: %v", *base, err)
	}
	defer gitOut(context.WithoutCancel(ctx), top, "worktree", "remove", "--force", tree)
	bins := [2]string{filepath.Join(tmp, "headspace-base"), filepath.Join(tmp, "headspace-head")}
	fmt.Fprintf(stderr, "gate: building base %s and head\n", short)
	if err := goBuild(ctx, tree, bins[gate.Base], "", tmp); err != nil {
		if ctx.Err() != nil {
			return interrupted()
		}
		return usagef("--base %s (%s) does not build: %v", *base, short, err)
	}
	if err := goBuild(ctx, top, bins[gate.Head], *headTags, tmp); err != nil {
		if ctx.Err() != nil {
			return interrupted()
		}
		return usagef("the head (this tree) does not build: %v", err)
	}
	// Both builds must take the command's flags before any round runs
	// (a flag the base lacks is a setup error, not a partial session).
	for side, name := range [2]string{gate.Base: "--base " + *base + " (" + short + ")", gate.Head: "the head (this tree)"} {
		if err := checkCommand(ctx, bins[side], command); err != nil {
			if ctx.Err() != nil {
				return interrupted()
			}
			return usagef("%s cannot run 'headspace %s': %v", name, strings.Join(command, " "), err)
		}
	}
	headName, _ := gitOut(ctx, top, "rev-parse", "--short=12", "HEAD")
	if dirty, _ := gitOut(ctx, top, "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		headName += "-dirty"
	}
	if *headTags != "" {
		headName += " (tags " + *headTags + ")"
	}

	_, statErr := os.Stat(*out)
	created := os.IsNotExist(statErr)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	files := [2]string{filepath.Join(*out, "base.txt"), filepath.Join(*out, "head.txt")}
	var notes []string
	busy := 0
	s := gate.Session{Rounds: *rounds, Confirm: *confirm, Options: opt, Seed: *seed}
	waited := map[int]bool{}
	s.Run = func(ctx context.Context, round int, side gate.PairSide) ([]*benchfmt.Result, error) {
		if !waited[round] {
			// Once a round, before its first run.
			waited[round] = true
			r, err := disturb.WaitQuiet(ctx, disturb.Quiet{Max: *wait})
			if err != nil {
				return nil, err
			}
			if r.Busy {
				busy++
			}
		}
		fmt.Fprintf(stderr, "gate: round %d: %s\n", round, side)
		// The gate waits for a quiet machine itself: the runs do not.
		env := append(os.Environ(), envQuietWait+"=0")
		if side == gate.Base {
			env = append(env, "HEADSPACE_COMMIT="+short)
		}
		argv := append(slices.Clone(command), "--out", files[side], "--count", fmt.Sprint(round))
		if err := runChild(ctx, bins[side], argv, env); err != nil {
			return nil, err
		}
		return roundResults(files[side], round)
	}
	report := func(o gate.Outcome) error {
		n := slices.Clone(notes)
		n = append(n, fmt.Sprintf("seed %d; results in %s and %s", *seed, files[gate.Base], files[gate.Head]))
		if busy > 0 {
			n = append(n, fmt.Sprintf("%d of %d rounds were taken on a busy machine (the wait for a quiet one ended at its bound)", busy, len(o.Rounds)))
		}
		var buf bytes.Buffer
		if err := o.WriteText(&buf, *base+" ("+short+")", headName, n...); err != nil {
			return err
		}
		return atomicfile.WriteBytes(filepath.Join(*out, "gate.txt"), buf.Bytes())
	}
	var done []gate.Round
	s.Done = func(r gate.Round) error {
		done = append(done, r)
		o := gate.Outcome{Rounds: done, Partial: true, Report: gate.ComparePaired(done, opt)}
		return report(o)
	}
	o, runErr := s.RunSession(ctx)
	if runErr == nil && *canary >= 0 {
		settings := driver.Settings(canaryDevice(command), []results.Config{
			{Key: "canary-base", Value: short},
			{Key: "canary-command", Value: strings.Join(command, " ")},
			{Key: "canary-head-tags", Value: cmp.Or(*headTags, "none")},
			{Key: "canary-inject", Value: cmp.Or(os.Getenv("HEADSPACE_INJECT"), "none")},
		})
		if _, err := driver.Write(driver.Output{Path: filepath.Join(*out, gate.CanaryFile), Benchmarks: []string{gate.CanaryBenchmark}},
			settings, []*benchfmt.Result{gate.CanaryRecord(*canary, o)}, false); err != nil {
			return err
		}
	}
	if runErr != nil && ctx.Err() == nil && len(o.Rounds) == 0 {
		// The command fails before a round completes: a setup error
		// (flag values a build refuses, data it cannot read), exit 2
		// with its reason, and no session left in DIR.
		for _, f := range append(files[:], filepath.Join(*out, "gate.txt")) {
			os.Remove(f)
		}
		if created {
			os.Remove(*out)
		}
		return usagef("the command fails before a round completes: %v", runErr)
	}
	if err := report(o); err != nil {
		return err
	}
	var buf bytes.Buffer
	o.WriteText(&buf, *base+" ("+short+")", headName)
	stdout.Write(buf.Bytes())
	switch {
	case runErr != nil && ctx.Err() != nil:
		return driver.Interrupted{Kept: fmt.Sprintf("%d rounds kept in %s, marked partial", len(o.Rounds), *out)}
	case runErr != nil:
		return runErr
	case o.Failed():
		return exitError{code: 1, msg: fmt.Sprintf("%d verdict metric(s) slower, confirmed", len(o.Report.Slower()))}
	case o.Rerun():
		return exitError{code: gate.ExitDisturbed, msg: "too few undisturbed rounds: rerun on a quieter machine"}
	}
	return nil
}

// roundResults returns the round-th run of every benchmark in the file
// at path: the command adds one run of each point per round.
func roundResults(path string, round int) ([]*benchfmt.Result, error) {
	seen := map[string]int{}
	var out []*benchfmt.Result
	_, err := results.Scan(path, func(r *benchfmt.Result) error {
		seen[string(r.Name)]++
		if seen[string(r.Name)] == round {
			out = append(out, r.Clone())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no run of round %d", path, round)
	}
	return out, nil
}

// runChild runs bin with args and env; SIGINT reaches it when ctx ends,
// and it is killed 1 s later if still running. Its stderr's last line
// names a failure.
func runChild(ctx context.Context, bin string, args, env []string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		lines := strings.Split(strings.TrimSpace(errBuf.String()), "\n")
		return fmt.Errorf("headspace %s: %v: %s", args[0], err, lines[len(lines)-1])
	}
	return nil
}

// checkSessionDir refuses an --out that cannot hold a new session: one
// that is not a folder, or already holds a session, or whose parent is
// not a folder. It runs before anything is built.
func checkSessionDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return usagef("--out %s is a file: want a folder for base.txt, head.txt and gate.txt", dir)
	case err == nil:
		for _, f := range []string{"base.txt", "head.txt", "gate.txt"} {
			if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
				return usagef("--out %s already holds a session (%s): use another folder", dir, f)
			}
		}
		return nil
	}
	// Not there (or under a file): the nearest folder above must be one.
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return usagef("--out %s: %s is a file, not a folder", dir, p)
			}
			return nil
		}
		if !os.IsNotExist(err) || filepath.Dir(p) == p {
			return usagef("--out %s: %v", dir, err)
		}
	}
}

// checkCommand asks bin whether it takes command's flags: the command
// with --help added before any "--" parses every flag given and stops
// there, running nothing. Its error is the refusal's last line.
func checkCommand(ctx context.Context, bin string, command []string) error {
	args := slices.Clone(command)
	at := slices.Index(args, "--")
	if at < 0 {
		at = len(args)
	}
	args = slices.Insert(args, at, "--help")
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), envQuietWait+"=0")
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(errBuf.String()), "\n")
		if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
			return errors.New(last)
		}
		return err
	}
	return nil
}

// goBuild builds ./cmd/headspace in dir into bin; its error is the
// compiler's first line. The go command's work folders go under tmp
// (GOTMPDIR), which the caller removes, so an interrupted build leaves
// none behind; on ctx's end the build gets SIGINT, then SIGKILL 1 s on.
func goBuild(ctx context.Context, dir, bin, tags, tmp string) error {
	args := []string{"build", "-o", bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	work := filepath.Join(tmp, "gotmp")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/headspace")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTMPDIR="+work)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Second
	outb, err := cmd.CombinedOutput()
	if err != nil {
		for _, l := range strings.Split(string(outb), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				return errors.New(l)
			}
		}
		return err
	}
	return nil
}

// gitOut runs git in dir and returns its trimmed output; an error
// carries git's first line of stderr.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	b, err := cmd.Output()
	if err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(errBuf.String()), "\n")
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return strings.TrimSpace(string(b)), nil
}

// replayGate decides on a session's files again: round k is the k-th run
// of every benchmark in DIR/base.txt and DIR/head.txt.
func replayGate(dir string, opt gate.PairedOptions, stdout io.Writer) error {
	if err := opt.Validate(); err != nil {
		return usageError{err.Error()}
	}
	var rounds []gate.Round
	for k := 1; ; k++ {
		r := gate.Round{Index: k, Order: [2]gate.PairSide{gate.Base, gate.Head}}
		for _, side := range []gate.PairSide{gate.Base, gate.Head} {
			rs, err := roundResults(filepath.Join(dir, side.String()+".txt"), k)
			if err != nil && k == 1 {
				return usageError{fmt.Sprintf("--replay %s: %v", dir, err)}
			}
			r.Results[side] = rs
		}
		if len(r.Results[gate.Base]) == 0 || len(r.Results[gate.Head]) == 0 {
			break
		}
		rounds = append(rounds, r)
	}
	rep := gate.ComparePaired(rounds, opt)
	o := gate.Outcome{Rounds: rounds, Report: rep, First: rep}
	if err := o.WriteText(stdout, filepath.Join(dir, "base.txt"), filepath.Join(dir, "head.txt"), "replayed from the files: every round at once, no confirmation stage"); err != nil {
		return err
	}
	switch {
	case o.Failed():
		return exitError{code: 1, msg: fmt.Sprintf("%d verdict metric(s) slower", len(rep.Slower()))}
	case o.Rerun():
		return exitError{code: gate.ExitDisturbed, msg: "too few undisturbed rounds: rerun on a quieter machine"}
	}
	return nil
}

// canaryDevice is the device the gated command names (--device), for the
// canary record's machine lines: "emulated" when it names none.
func canaryDevice(command []string) string {
	for i, a := range command {
		if v, ok := strings.CutPrefix(a, "--device="); ok {
			return v
		}
		if a == "--device" && i+1 < len(command) {
			return command[i+1]
		}
	}
	return "emulated"
}

// printCanaries prints the rates of every canary under paths.
func printCanaries(paths []string, stdout io.Writer) error {
	if len(paths) == 0 {
		return usagef("--canaries: want the paths to read after the flags, e.g. --canaries results/history results/paired-aa-r2")
	}
	cs, err := gate.ReadCanaries(paths...)
	if err != nil {
		return usageError{err.Error()}
	}
	return gate.WriteCanaryText(stdout, cs)
}
