package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/tune"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Command is headspace tune.
func (Tune) Command() cli.Command {
	return cli.Command{Name: "tune", Summary: "find the DataLoader settings that make your training script fastest, and prove them (--ours: headspace's own pipeline's flags)", Runs: []string{"Tune"}, Run: runTune}
}

const tuneUsage = `
Finds the settings of your script's training DataLoader (num_workers,
prefetch_factor, pin_memory, persistent_workers, the workers' start
method) that make it fastest, and proves them (docs/tune.md). Your script
is not edited: headspace's hook applies each candidate to the loader.

It first runs the headspace analysis of the script as it is (40 steps
from its loader, 30 cached; docs/own-loop.md) and its what-if model.
The search starts from the model's pick (the fewest workers it predicts
within 3% of its best), then its neighbours on the worker ladder (the
script's own setting runs in the profile and the final check), then, at
the best, persistent workers, twice the prefetch,
pinned memory (with CUDA) and fork (where the loader does not fork): each
candidate a short run of --steps steps after its warm-up, the candidates
of a stage alternated round by round, --rounds runs each. A candidate
whose run fails (too many workers for the memory) is recorded as failed
with its reason, and the search goes on. No round starts that --budget
cannot hold beside the final check: --pairs paired runs, alternated, of
the script's own settings and the best. A setting that measures slower
than the script's own there is never recommended.

It prints each candidate's steps/s with its interval, then the line to
paste (DataLoader(..., num_workers=6, prefetch_factor=4,
persistent_workers=True)), steps/s before and after from the final check
with their intervals, and the share of the headspace recovered; where
nothing helps, why (model-bound, or the cores spent), the stage in the
way and what it would take. --out records every run (BenchmarkTune/
script=…/stage=…/workers=…/prefetch=…/pin=…/persistent=…/start=…), so
compare and history take them.

A script that starts ranks (-- torchrun --nproc_per_node N train.py,
python -m torch.distributed.run, or its own torch.multiprocessing.spawn;
one node) is tuned per rank: each candidate goes to every rank's training
loader, its steps/s are the slowest rank's (the ranks step in lockstep),
the profile and the model's pick are the slowest rank's on a rank's share
of the cores (the machine's cores over the ranks), the line to paste goes
in every rank's DataLoader, and the records carry ranks=N. A rank that
fails at a candidate fails that candidate, with its reason.

A --budget under 10s, or too small for one candidate and its check once
the profile has run, is refused with one line (exit 2). SIGINT stops the
script, its ranks and their workers, prints the best so far, writes
--out with every run so far (marked partial) and exits 130.

With --ours ladder or --ours remote (and no command) the same search runs
over headspace's own pipeline, as in

    headspace tune --ours ladder --workers 1 --prefetch 1 --raw-size 256 --crop 128

its candidates' flags --workers, --prefetch and, with data in a bucket,
--fetch-concurrency: the what-if model (headspace whatif's) of a run at the
given setting picks the workers, Little's law on its requests the fetch
concurrency, then each axis's neighbours and twice the prefetch; each
candidate a run of the caching ladder at --level (none: the whole
pipeline) of --steps steps after --warmup. --ours ladder takes the
ladder's pipeline flags (--data s3://… with --fetch-concurrency too);
--ours remote is remote's pipeline against the local S3 server it starts
(ci/versitygw.sh), a --format dataset of --samples behind a link of --rtt,
and takes --prefetch and --fetch-concurrency. It prints the flags to pass
(--workers 6 --prefetch 4), before and after from the final check with
their intervals and the share of the headspace recovered, or "keep your
own" and what binds; --out records BenchmarkTune/pipeline=…/level=…/
stage=…/workers=…/prefetch=…/fetch=…. A --budget under 5s is refused
(exit 2), as above once the profile has run.`

func runTune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	t := Sized[Tune](Default)
	fs := cli.NewFlagSet("tune", tuneUsage, stdout)
	var of ownFlags
	of.registerLadder(fs)
	var out string
	var force bool
	fs.DurationVar(&t.Budget, "budget", t.Budget, "the whole tune's `duration`, the profile run and the final check included")
	fs.IntVar(&t.Steps, "steps", t.Steps, "`steps` timed in each run, after its warm-up")
	fs.IntVar(&t.Rounds, "rounds", t.Rounds, "`runs` of each candidate in a stage, alternated round by round")
	fs.IntVar(&t.Pairs, "pairs", t.Pairs, "paired `runs` of the final check, at most (the budget may hold fewer)")
	fs.IntVar(&t.MaxWorkers, "max-workers", 0, "the largest `num_workers` (with --ours, --workers) tried (default: twice the cores, 8 to 32)")
	fs.StringVar(&out, "out", "", "benchmark-format result `file` of every run (written atomically)")
	fs.BoolVar(&force, "force", false, "let --out replace a results file holding more results")
	var ours tuneOursFlags
	ours.register(fs)
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if ours.ours != "" {
		return runTuneOurs(ctx, fs, args, &ours, t, out, force, stdout, stderr)
	}
	if err := ours.check(fs); err != nil {
		return err
	}
	if !hasCommand(fs, args) {
		return cli.Usagef("give the training command after --: headspace tune [--budget DURATION] [--out FILE] -- python3 train.py")
	}
	t.Argv, t.Loader, t.FirstBatchTimeout = fs.Args(), of.loader, of.firstTimeout
	if err := t.Validate(); err != nil {
		return cli.Usagef("%v", err)
	}
	cmd, err := ownloop.ParseCommand(t.Argv)
	if err != nil {
		return OwnLoopError(err)
	}
	var run *ownloop.Run
	var res tune.Result
	settings := func() []resultfile.Config {
		return driver.Settings(run.Device(), ownloop.CommandConfig(cmd, run), t.SettingsFor(len(run.Ranks)), TuneFailures(res))
	}
	o, err := driver.Run(ctx, driver.Job{Progress: stderr, Settings: settings,
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			var err error
			res, err = t.MeasureEach(ctx, Env{}, stderr, func(r *ownloop.Run, p tune.Profile) {
				run = r
				logTuneProfile(stderr, p)
			}, func(r tune.Run) { logTuneRun(stderr, r, r.Setting.Args()) })
			h.Finish()
			return tuneMeasured(res, err, run != nil, t.Budget, OwnLoopError, stdout)
		}}, tuneOutput(out, force))
	return tuneEnded(o, err, run != nil, "before the profile run ended: nothing was measured", out, stdout)
}

// logTuneProfile is the script's profile's line on stderr.
func logTuneProfile(stderr io.Writer, p tune.Profile) {
	node := ""
	if p.Ranks > 0 {
		node = fmt.Sprintf(" (%d ranks: the slowest rank's)", p.Ranks)
	}
	fmt.Fprintf(stderr, "tune: profile%s: %.2f steps/s with the loader (%s), %.2f on cached batches\n", node, p.Before, p.Own.Normal().Args(), p.Cached)
}

// logTuneRun is r's line on stderr, its setting shown as setting (the
// script's arguments, or our pipeline's flags).
func logTuneRun(stderr io.Writer, r tune.Run, setting string) {
	if r.Failed {
		fmt.Fprintf(stderr, "tune: %s %s: failed: %s\n", r.Stage, setting, r.Reason)
		return
	}
	fmt.Fprintf(stderr, "tune: %s %s: %.2f steps/s (%.1fs)\n", r.Stage, setting, r.StepsPerSec, r.Wall.Seconds())
}

// tuneOutput is a tune's --out: written whole, its records Tune's.
func tuneOutput(out string, force bool) driver.Output {
	return driver.Output{Path: out, Benchmarks: []string{"Tune"}, Force: force, Beside: true}
}

// tuneMeasured is the end of a tune's Measure, given what MeasureEach
// returned and whether its profile ended: a budget too small for one
// candidate is a usage error, an interruption before the profile ended
// measured nothing, another error is wrap's; else the best so far (an
// interrupted tune's too) on stdout and res's records, with err.
func tuneMeasured(res tune.Result, err error, profiled bool, budget time.Duration, wrap func(error) error, stdout io.Writer) ([]*benchfmt.Result, error) {
	switch {
	case errors.Is(err, tune.ErrBudget):
		return nil, cli.Usagef("--budget %v is too small: %v", budget, err)
	case !profiled && errors.Is(err, context.Canceled):
		return nil, err // nothing measured
	case err != nil && !errors.Is(err, context.Canceled):
		return nil, wrap(err)
	}
	res.WriteText(stdout) // an interrupted tune's too: the best so far
	return TuneCodec.Encode(res), err
}

// tuneEnded is a tune command's end, given driver.Run's outcome o and
// error err and whether the profile ended (else an interruption says
// notYet): the results line, and the error that exits 130 where it was
// interrupted.
func tuneEnded(o driver.Outcome, err error, profiled bool, notYet, out string, stdout io.Writer) error {
	if err != nil && !o.Interrupted {
		return err
	}
	if o.Interrupted && !profiled {
		return driver.Interrupted{Kept: notYet}
	}
	if out != "" && o.Path != "" {
		cli.KeptNote(stdout, out, o.Path)
		fmt.Fprintf(stdout, "results: %s\n", o.Path)
	}
	return o.Err("the best so far is above")
}
