package command

import (
	"github.com/headspace-bench/headspace/harness/tune"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// tuneCommand is headspace tune, of a script or, with --ours, of our own
// pipeline: the Tune experiment (workloads/tune.go, its flags and report
// workloads/tunereport.go).
func tuneCommand() cli.Command {
	return CommandOf[tune.Result, workloads.Tune]("tune", "find the DataLoader settings that make your training script fastest, and prove them (--ours: headspace's own pipeline's flags)", tuneUsage)
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

--from FILE prints the report again from a file tune --out wrote (a
script's or --ours's), measuring nothing: what a run prints is made from
its records, each failed candidate's reason from the file's tune-failed
lines.

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
