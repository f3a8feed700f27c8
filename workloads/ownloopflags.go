package workloads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// The bounds of the flags of a user's own training command (analyze,
// ladder, whatif and tune -- COMMAND), by flag name: --loader,
// --first-batch-timeout and --stall-timeout (registerLadder, and the
// own-loop experiments' Flags).
var _ = cli.Declare(map[string]cli.Bound{
	"loader":              {Lo: 1, Hi: 1 << 20},
	"first-batch-timeout": {Lo: 0, Hi: float64(24 * time.Hour)},
	"stall-timeout":       {Lo: 0, Hi: float64(24 * time.Hour)},
})

// ownFlags are the flags of analyze and ladder that apply to a user's own
// training command (after --).
type ownFlags struct {
	loader       int
	firstTimeout time.Duration
	stallTimeout time.Duration
	partial      bool
}

// register defines analyze's command flags: ladder's and --partial.
func (f *ownFlags) register(fs *flag.FlagSet) {
	f.registerLadder(fs)
	fs.BoolVar(&f.partial, "partial", false, "with a command that ends before every step: report and keep what it got, marked partial")
}

// ownOnly are the flags that apply to a user's command; the others are
// the synthetic pipeline's.
var ownOnly = map[string]bool{"loader": true, "first-batch-timeout": true, "stall-timeout": true, "partial": true}

// checkOwnFlags refuses, with a command, the synthetic pipeline's flags
// (not in keep), and without one the command's flags.
func checkOwnFlags(fs *flag.FlagSet, command bool, keep ...string) error {
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		switch {
		case command && !ownOnly[f.Name] && !slices.Contains(keep, f.Name):
			bad = append(bad, "--"+f.Name)
		case !command && ownOnly[f.Name]:
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) == 0 {
		return nil
	}
	if command {
		return cli.Usagef("%s only apply to headspace's own pipeline, not to a training command", strings.Join(bad, ", "))
	}
	return cli.Usagef("%s only apply to a training command given after --", strings.Join(bad, ", "))
}

// OwnLoopError maps the hook's errors to the command's: refusals and a loop
// that never came, stalled or ended early are bad input (exit 2).
func OwnLoopError(err error) error {
	var early *ownloop.EndedEarly
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ownloop.ErrRefused):
		return cli.UsageError{Msg: strings.Replace(err.Error(), ownloop.ErrRefused.Error()+": ", "", 1)}
	case errors.Is(err, ownloop.ErrNoLoader), errors.Is(err, ownloop.ErrStalled), errors.As(err, &early):
		return cli.UsageError{Msg: err.Error()}
	}
	return err
}

// setOwn sets the flags that flags defines from those of theirs names
// that fs has set: an experiment's fields from its command's flags.
func setOwn(fs *flag.FlagSet, flags func(*flag.FlagSet)) error {
	own := flag.NewFlagSet("own", flag.ContinueOnError)
	flags(own)
	var err error
	fs.Visit(func(f *flag.Flag) {
		if own.Lookup(f.Name) != nil && err == nil {
			err = own.Set(f.Name, f.Value.String())
		}
	})
	if err != nil {
		return cli.Usagef("%v", err)
	}
	return nil
}

// registerLadder defines the command flags that ladder and whatif take.
func (f *ownFlags) registerLadder(fs *flag.FlagSet) {
	fs.IntVar(&f.loader, "loader", 1, "with a command: which DataLoader is the training loop's, by the order of first iteration in the main thread (`n`, 1: the first)")
	fs.DurationVar(&f.firstTimeout, "first-batch-timeout", 2*time.Minute, "with a command: how long to wait for its training loop's first batch, and with ranks for any rank's next step (`duration`)")
	fs.DurationVar(&f.stallTimeout, "stall-timeout", 5*time.Minute, "with a command: how long to wait for each step of its training loop after the first batch (`duration`)")
}

// checkTimeouts refuses a bound on the command's waits that is not
// positive.
func (f *ownFlags) checkTimeouts() error {
	if f.firstTimeout <= 0 {
		return cli.Usagef("--first-batch-timeout %v must be positive", f.firstTimeout)
	}
	if f.stallTimeout <= 0 {
		return cli.Usagef("--stall-timeout %v must be positive", f.stallTimeout)
	}
	return nil
}

// hasCommand says args give a training command: arguments after an
// explicit -- (without it, an argument after the flags is a mistake).
func hasCommand(fs *flag.FlagSet, args []string) bool {
	if fs.NArg() == 0 {
		return false
	}
	i := len(args) - fs.NArg() - 1
	return i >= 0 && args[i] == "--"
}

// execOwn runs the training command argv under the hook with settings s
// as experiment name's one unit of work in env (a tick a step), its
// output to log (nil: none). A check that failed (valid, Validate's) or
// a command the hook cannot run is refused (ownloop.ErrRefused) before
// anything starts.
func execOwn(ctx context.Context, env Env, name string, argv []string, valid error, s ownloop.Settings, log io.Writer) (ownloop.Command, *ownloop.Run, error) {
	if valid != nil {
		return ownloop.Command{}, nil, fmt.Errorf("%w: %v", ownloop.ErrRefused, valid)
	}
	cmd, err := ownloop.ParseCommand(argv)
	if err != nil {
		return cmd, nil, err
	}
	env.start(name)
	run, err := ownloop.Exec(ctx, cmd, s, orDiscard(log), func(ownloop.Step) { env.tick() })
	return cmd, run, err
}

// orDiscard is w, or io.Discard where w is nil.
func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// checkOwnRun checks what a run of a training command takes from its
// flags: --loader and the timeouts within their bounds, the command one
// the hook runs.
func checkOwnRun(loader int, firstBatch, stall time.Duration, argv []string) error {
	if err := cli.InRange("--loader", loader, 1, 1<<20); err != nil {
		return err
	}
	of := ownFlags{firstTimeout: firstBatch, stallTimeout: stall}
	if err := of.checkTimeouts(); err != nil {
		return err
	}
	if _, err := ownloop.ParseCommand(argv); err != nil {
		return OwnLoopError(err)
	}
	return nil
}

// firstRecordOf is the first record of the result file at path (nil for
// a file that cannot be read or holds none) and whether layout l reads it
// as its own, for a --from that hands a file to its experiment.
func firstRecordOf(path string, l resultfile.Layout) (*benchfmt.Result, bool) {
	rs, err := resultfile.Read(path)
	if err != nil || len(rs) == 0 {
		return nil, false
	}
	_, err = l.Read(rs[0])
	return rs[0], !errors.Is(err, resultfile.ErrNotOurs)
}
