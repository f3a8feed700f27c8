package gate

// A live paired session: the base revision and the working tree built
// and run alternately on this machine. The statistics are ComparePaired's
// and Session's; this file owns the git worktree, the two builds, the
// child runs, the wait for a quiet machine and the session's folder.

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

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// SessionFiles are the files of a session's folder: each side's runs
// and the report.
var SessionFiles = []string{"base.txt", "head.txt", "gate.txt"}

// Live is a paired session of two builds of the git checkout that holds
// the working directory: Base, built in a temporary worktree, and the
// working tree (the head, uncommitted changes included), each running
// 'headspace Command…' once a round with --out and --count added.
type Live struct {
	// Base is the base revision (a commit, branch or tag).
	Base string
	// HeadTags are build tags for the head build only.
	HeadTags string
	// Command is the measuring command and its flags, without --out,
	// --count or --fresh.
	Command []string
	// Out is the session's folder (created; must not hold a session).
	Out string
	// Session sets the rounds, the options and the seed; Live sets its
	// Run and Done.
	Session Session
	// QuietWait bounds the wait for a quiet machine before each round.
	QuietWait time.Duration
	// Canary, when set, is the head's injected slowdown (0 for A/A), and
	// the session's outcome is recorded in Out/CanaryFile; nil runs no
	// canary.
	Canary *float64
	// ChildEnv is added to every child's environment (both builds' runs
	// and their --help check).
	ChildEnv []string
	// Log receives a line per build and run.
	Log io.Writer
}

// SetupError says why a live session could not start: a base that is
// no commit or does not build, a folder that cannot hold a session, a
// command a build cannot run. Nothing is left behind.
type SetupError struct{ Msg string }

func (e SetupError) Error() string { return e.Msg }

func setupf(format string, args ...any) error { return SetupError{fmt.Sprintf(format, args...)} }

// LiveResult is a live session's result.
type LiveResult struct {
	Outcome
	// BaseName and HeadName name the builds as the report does.
	BaseName, HeadName string
	// Files are each side's results file, by PairSide.
	Files [2]string
}

// CheckOut refuses a folder that cannot hold a new session: one that is
// not a folder, or already holds a session, or whose nearest existing
// parent is not a folder. It touches nothing.
func CheckOut(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return setupf("--out %s is a file: want a folder for base.txt, head.txt and gate.txt", dir)
	case err == nil:
		for _, f := range SessionFiles {
			if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
				return setupf("--out %s already holds a session (%s): use another folder", dir, f)
			}
		}
		return nil
	}
	// Not there (or under a file): the nearest folder above must be one.
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return setupf("--out %s: %s is a file, not a folder", dir, p)
			}
			return nil
		}
		if !os.IsNotExist(err) || filepath.Dir(p) == p {
			return setupf("--out %s: %v", dir, err)
		}
	}
}

// Run builds both sides and runs the session. On a setup failure it
// returns a SetupError and leaves nothing; when ctx ends it returns
// ctx's error with the rounds done (Partial; none during the builds, and
// then nothing left behind: no worktree, no build folder); the report
// is in Out/gate.txt, rewritten after every round.
func (l Live) Run(ctx context.Context) (LiveResult, error) {
	var res LiveResult
	if err := CheckOut(l.Out); err != nil {
		return res, err
	}
	top, rev, err := l.baseCommit(ctx)
	if err != nil {
		return res, err
	}
	short := rev[:min(len(rev), 12)]
	res.BaseName = l.Base + " (" + short + ")"
	tmp, err := os.MkdirTemp("", "headspace-gate-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "base")
	// Removed whatever happens, even when adding it failed half-way.
	defer gitOut(context.WithoutCancel(ctx), top, "worktree", "remove", "--force", tree)
	bins, err := l.build(ctx, top, rev, tree, tmp)
	if err != nil {
		return res, cmp.Or(ctx.Err(), err)
	}
	res.HeadName = l.headName(ctx, top)

	_, statErr := os.Stat(l.Out)
	created := os.IsNotExist(statErr)
	if err := os.MkdirAll(l.Out, 0o755); err != nil {
		return res, err
	}
	res.Files = [2]string{filepath.Join(l.Out, "base.txt"), filepath.Join(l.Out, "head.txt")}
	busy := 0
	s := l.Session
	s.Run = l.runner(res.Files, bins, short, &busy)
	report := func(o Outcome) error { return l.writeReport(res, o, busy) }
	var done []Round
	s.Done = func(r Round) error {
		done = append(done, r)
		return report(Outcome{Rounds: done, Partial: true, Report: ComparePaired(done, s.Options)})
	}
	o, runErr := s.RunSession(ctx)
	res.Outcome = o
	if runErr == nil && l.Canary != nil {
		if err := l.writeCanary(ctx, short, o); err != nil {
			return res, err
		}
	}
	if runErr != nil && ctx.Err() == nil && len(o.Rounds) == 0 {
		return res, l.unmake(created, runErr)
	}
	if err := report(o); err != nil {
		return res, err
	}
	return res, runErr
}

// unmake is a command that fails before a round completes: a setup error
// (flag values a build refuses, data it cannot read), with its reason,
// and no session left in the folder (the folder itself removed if the
// gate created it).
func (l Live) unmake(created bool, runErr error) error {
	for _, f := range SessionFiles {
		os.Remove(filepath.Join(l.Out, f))
	}
	if created {
		os.Remove(l.Out)
	}
	return setupf("the command fails before a round completes: %v", runErr)
}

// baseCommit is the top of the git checkout the gate runs in and the
// commit --base names there.
func (l Live) baseCommit(ctx context.Context) (top, rev string, err error) {
	top, err = gitOut(ctx, "", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", setupf("not in a git checkout: %v", err)
	}
	rev, err = gitOut(ctx, top, "rev-parse", "--verify", "--quiet", l.Base+"^{commit}")
	if err != nil || rev == "" {
		return "", "", setupf("--base %s: no such commit in %s", l.Base, top)
	}
	return top, rev, nil
}

// runner runs one side of a round: it waits, once a round, for a quiet
// machine (counting in busy the rounds that waited in vain), then runs
// that side's build of the command with --out its file and --count the
// round, and reads the round's results back. The base's runs record its
// commit, short.
func (l Live) runner(files [2]string, bins [2]string, short string, busy *int) func(context.Context, int, PairSide) ([]*benchfmt.Result, error) {
	waited := map[int]bool{}
	return func(ctx context.Context, round int, side PairSide) ([]*benchfmt.Result, error) {
		if !waited[round] {
			// Once a round, before its first run.
			waited[round] = true
			r, err := disturb.WaitQuiet(ctx, disturb.Quiet{Max: l.QuietWait})
			if err != nil {
				return nil, err
			}
			if r.Busy {
				*busy++
			}
		}
		fmt.Fprintf(l.Log, "gate: round %d: %s\n", round, side)
		env := append(os.Environ(), l.ChildEnv...)
		if side == Base {
			env = append(env, "HEADSPACE_COMMIT="+short)
		}
		argv := append(slices.Clone(l.Command), "--out", files[side], "--count", fmt.Sprint(round))
		if err := runChild(ctx, bins[side], argv, env); err != nil {
			return nil, err
		}
		return roundResults(files[side], round)
	}
}

// writeReport writes the session so far as DIR/gate.txt, atomically, with
// its seed, its files and how many of its rounds waited in vain for a
// quiet machine.
func (l Live) writeReport(res LiveResult, o Outcome, busy int) error {
	n := []string{fmt.Sprintf("seed %d; results in %s and %s", l.Session.Seed, res.Files[Base], res.Files[Head])}
	if busy > 0 {
		n = append(n, fmt.Sprintf("%d of %d rounds were taken on a busy machine (the wait for a quiet one ended at its bound)", busy, len(o.Rounds)))
	}
	var buf bytes.Buffer
	if err := o.WriteText(&buf, res.BaseName, res.HeadName, n...); err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(l.Out, "gate.txt"), buf.Bytes())
}

// build checks rev out at tree and builds both sides into tmp, then asks
// each whether it takes the command's flags (a flag the base lacks is a
// setup error, not a partial session). Its errors are SetupErrors.
func (l Live) build(ctx context.Context, top, rev, tree, tmp string) ([2]string, error) {
	short := rev[:min(len(rev), 12)]
	bins := [2]string{filepath.Join(tmp, "headspace-base"), filepath.Join(tmp, "headspace-head")}
	if _, err := gitOut(ctx, top, "worktree", "add", "--detach", tree, rev); err != nil {
		return bins, setupf("--base %s: cannot check it out: %v", l.Base, err)
	}
	fmt.Fprintf(l.Log, "gate: building base %s and head\n", short)
	if err := goBuild(ctx, tree, bins[Base], "", tmp); err != nil {
		return bins, setupf("--base %s (%s) does not build: %v", l.Base, short, err)
	}
	if err := goBuild(ctx, top, bins[Head], l.HeadTags, tmp); err != nil {
		return bins, setupf("the head (this tree) does not build: %v", err)
	}
	for side, name := range [2]string{Base: "--base " + l.Base + " (" + short + ")", Head: "the head (this tree)"} {
		if err := l.checkCommand(ctx, bins[side]); err != nil {
			return bins, setupf("%s cannot run 'headspace %s': %v", name, strings.Join(l.Command, " "), err)
		}
	}
	return bins, nil
}

// headName names the head build as the report does: its commit, -dirty
// with uncommitted changes, and its tags.
func (l Live) headName(ctx context.Context, top string) string {
	name, _ := gitOut(ctx, top, "rev-parse", "--short=12", "HEAD")
	if dirty, _ := gitOut(ctx, top, "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		name += "-dirty"
	}
	if l.HeadTags != "" {
		name += " (tags " + l.HeadTags + ")"
	}
	return name
}

// writeCanary records the session's outcome as a canary record.
func (l Live) writeCanary(ctx context.Context, base string, o Outcome) error {
	device := "emulated"
	for i, a := range l.Command {
		if v, ok := strings.CutPrefix(a, "--device="); ok {
			device = v
		} else if a == "--device" && i+1 < len(l.Command) {
			device = l.Command[i+1]
		}
	}
	settings := driver.Settings(device, []resultfile.Config{
		{Key: "canary-base", Value: base},
		{Key: "canary-command", Value: strings.Join(l.Command, " ")},
		{Key: "canary-head-tags", Value: cmp.Or(l.HeadTags, "none")},
		{Key: "canary-inject", Value: cmp.Or(os.Getenv("HEADSPACE_INJECT"), "none")},
	})
	_, err := driver.Run(ctx, driver.Job{Settings: func() []resultfile.Config { return settings }, Measure: func(context.Context, *driver.Hooks) ([]*benchfmt.Result, error) {
		return []*benchfmt.Result{CanaryRecord(*l.Canary, o)}, nil
	}}, driver.Output{Path: filepath.Join(l.Out, CanaryFile), Benchmarks: []string{CanaryBenchmark}})
	return err
}

// ReplayRounds reads a session's rounds back from its folder: round k
// is the k-th run of every benchmark in base.txt and head.txt, up to the
// last round both sides completed.
func ReplayRounds(dir string) ([]Round, error) {
	var rounds []Round
	for k := 1; ; k++ {
		r := Round{Index: k, Order: [2]PairSide{Base, Head}}
		for _, side := range []PairSide{Base, Head} {
			rs, err := roundResults(filepath.Join(dir, side.String()+".txt"), k)
			if err != nil && k == 1 {
				return nil, err
			}
			r.Results[side] = rs
		}
		if len(r.Results[Base]) == 0 || len(r.Results[Head]) == 0 {
			return rounds, nil
		}
		rounds = append(rounds, r)
	}
}

// roundResults returns the round-th run of every benchmark in the file
// at path: the command adds one run of each point per round.
func roundResults(path string, round int) ([]*benchfmt.Result, error) {
	seen := map[string]int{}
	var out []*benchfmt.Result
	_, err := resultfile.Scan(path, func(r *benchfmt.Result) error {
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

// checkCommand asks bin whether it takes the command's flags: the
// command with --help added before any "--" parses every flag given and
// stops there, running nothing. Its error is the refusal's last line.
func (l Live) checkCommand(ctx context.Context, bin string) error {
	args := slices.Clone(l.Command)
	at := slices.Index(args, "--")
	if at < 0 {
		at = len(args)
	}
	args = slices.Insert(args, at, "--help")
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), l.ChildEnv...)
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
