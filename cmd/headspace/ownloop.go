package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/blocks/driver"
	"github.com/headspace-bench/headspace/harness/engines/ownloop"
)

// ownFlags are the flags of analyze and ladder that apply to a user's own
// training command (after --).
type ownFlags struct {
	loader       int
	firstTimeout time.Duration
	partial      bool
}

func (f *ownFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.loader, "loader", 1, "with a command: which DataLoader is the training loop's, by the order of first iteration in the main process (`n`, 1: the first)")
	fs.DurationVar(&f.firstTimeout, "first-batch-timeout", 2*time.Minute, "with a command: how long to wait for its training loop's first batch (`duration`)")
	fs.BoolVar(&f.partial, "partial", false, "with a command that ends before every step: report and keep what it got, marked partial")
}

// ownAnalyzeFlags are analyze's own flags that a command run keeps.
type ownAnalyzeFlags struct {
	numCaches, after, stepsAfter, total int
	out, plot                           string
	force                               bool
}

// ownOnly are the flags that apply to a user's command; the others are
// the synthetic pipeline's.
var ownOnly = map[string]bool{"loader": true, "first-batch-timeout": true, "partial": true}

// checkOwnFlags refuses, with a command, the synthetic pipeline's flags
// (not in keep), and without one the command's flags.
func checkOwnFlags(fs *flag.FlagSet, command bool, keep ...string) error {
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		switch {
		case command && !ownOnly[f.Name] && !contains(keep, f.Name):
			bad = append(bad, "--"+f.Name)
		case !command && ownOnly[f.Name]:
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) == 0 {
		return nil
	}
	if command {
		return usagef("%s only apply to headspace's own pipeline, not to a training command", strings.Join(bad, ", "))
	}
	return usagef("%s only apply to a training command given after --", strings.Join(bad, ", "))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ownError maps the hook's errors to the command's: refusals and a loop
// that never came or ended early are bad input (exit 2).
func ownError(err error) error {
	var early *ownloop.EndedEarly
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ownloop.ErrRefused):
		return usageError{strings.TrimPrefix(err.Error(), ownloop.ErrRefused.Error()+": ")}
	case errors.Is(err, ownloop.ErrNoLoader), errors.As(err, &early):
		return usageError{err.Error()}
	}
	return err
}

// runOwnAnalyze is `headspace analyze -- COMMAND`.
func runOwnAnalyze(ctx context.Context, fs *flag.FlagSet, of *ownFlags, af ownAnalyzeFlags, stdout, stderr io.Writer) error {
	if err := checkOwnFlags(fs, true, "num-caches", "return-caches-after", "steps-after", "total-steps", "out", "plot", "force"); err != nil {
		return err
	}
	if err := firstErr(inRange("--num-caches", af.numCaches, 1, maxBatches), inRange("--return-caches-after", af.after, 1, maxSteps),
		inRange("--steps-after", af.stepsAfter, 1, maxSteps), inRange("--total-steps", af.total, 1, 1<<40), inRange("--loader", of.loader, 1, 1<<20)); err != nil {
		return err
	}
	if af.after < af.numCaches {
		return usagef("--return-caches-after %d is less than --num-caches %d: some caches would never be filled", af.after, af.numCaches)
	}
	if of.firstTimeout <= 0 {
		return usagef("--first-batch-timeout %v must be positive", of.firstTimeout)
	}
	cmd, err := ownloop.ParseCommand(fs.Args())
	if err != nil {
		return ownError(err)
	}
	resultsOut := driver.Output{Path: af.out, Benchmarks: ownloop.Benchmarks, Force: af.force, Beside: true}
	plotBase := strings.TrimSuffix(strings.TrimSuffix(af.plot, ".png"), ".svg")
	if err := firstErr(checkOutputs(figure(prefixed(plotBase, ".png")), figure(prefixed(plotBase, ".svg"))), driver.Check(resultsOut)); err != nil {
		return err
	}
	s := ownloop.Settings{Mode: "analyze", Loader: of.loader, NumCaches: af.numCaches, ReturnCachesAfter: af.after, StepsAfter: af.stepsAfter, FirstBatchTimeout: of.firstTimeout}
	sess := driver.Begin(nil, stderr, s.Total(), nil)
	run, err := ownloop.Exec(ctx, cmd, s, stderr, func(ownloop.Step) { sess.Tick() })
	sess.Finish()
	var early *ownloop.EndedEarly
	partial := false
	switch {
	case errors.As(err, &early) && of.partial:
		partial = true
	case err != nil:
		return ownError(err)
	}
	rep, err := ownloop.Analyze(cmd, s, run, af.total)
	if err != nil {
		if partial {
			return usagef("%v; %v", early, err)
		}
		return err
	}
	rep.WriteText(stdout)
	if af.plot != "" {
		for _, ext := range []string{".png", ".svg"} {
			if err := rep.Save(plotBase + ext); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "\nplot: %s.png, %s.svg\n", plotBase, plotBase)
	}
	if af.out != "" {
		wrote, err := driver.Write(resultsOut, driver.Settings(rep.Device, rep.ConfigLines()), rep.Records(), partial)
		if err != nil {
			return err
		}
		keptNote(stdout, af.out, wrote)
		fmt.Fprintf(stdout, "results: %s (go tool benchstat -col /phase %s)\n", wrote, wrote)
	}
	return nil
}
