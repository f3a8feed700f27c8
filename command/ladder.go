package command

import (
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// ladderCommand is headspace ladder; ladder -- COMMAND runs OwnLoopLadder.
func ladderCommand() cli.Command {
	c := CommandOf[workloads.LadderOutcome, workloads.Ladder]("ladder", "run the caching ladder: steps/s with data cached at each stage", ladderUsage)
	c.Runs = append(c.Runs, workloads.OwnLoopLadder{}.Name())
	return c
}

const ladderUsage = `
Runs the document's training loop with data cached at each level of the
caching ladder (none, encoded, raw, sample, host, device) for each worker count,
transform implementation, placement and pinning, prints steps/s per level
with each level's ratio to the device-cached upper bound and the stage each
drop is attributed to, and writes the same figures in Go benchmark format
(benchstat reads it), with the step-time percentiles.

With --placement device the batches carry the masked crop as uint8 and the
device runs ConvertColor and Scale (the document's "postpone int8 to float32
datatype conversions to the GPU"): a quarter of the bytes to upload, plus a
conversion kernel per step, which the emulated device times at the assumed
--convert-gbps. --pinned true,false compares pinned and pageable uploads.

With --data DIR the samples come from a dataset on disk (headspace dataset
write): the load stage is fetch (read the file or shard member) then decode,
and the level encoded, between none and raw, keeps one sample's file bytes
so each step decodes but reads nothing: none→encoded is attributed to
fetching, encoded→raw to decoding. Without --data, encoded is refused (the
synthetic fill has nothing encoded). --page-cache cold evicts the dataset's
files before each run (Linux), warm reads them once first; --max-failures N
skips and counts up to N unreadable samples (metric failures). Levels that
fetch record read-MB/s, the bytes fetched over the fetch stage's time.

Every run records its CPU time per step (cpu-ns/op), its run-queue delay
and the machine's CPU pressure as percentages of its wall time
(run-delay-%, cpu-pressure-%) and, where hardware counters can be read,
instructions/op. A run whose run-queue delay exceeds --max-run-delay of
its wall time is disturbed: it is repeated up to --reruns times, the least
disturbed attempt kept (reruns N), and marked "disturbed 1" if it stays
disturbed; the gate never calls a disturbed point a regression. With
--out, the sweep first waits up to --quiet-wait for the machine's CPU
pressure to fall below 10% (on the progress line); a machine that never
gets quiet is recorded in the file's machine-busy line (docs/gate.md).

With --shard i/n the run takes every n-th point from the i-th, and --out
records the sweep it is a shard of (sweep, sweep-levels, …, shards), so
'headspace merge' can join the shard files and check that none is missing
(docs/cluster.md runs them as Slurm arrays and Kubernetes Indexed Jobs).

An existing --out file of the same setup is resumed: points that already
have --count results are skipped. Only the build that made it resumes it:
a file whose commit: line differs (another revision, or a dirty tree
edited since: docs/results.md) is refused with exit 2; --fresh replaces
it. SIGINT stops the sweep, prints the table
of what was measured and exits 130; the file keeps every finished run.
--from FILE prints the table of a file --out wrote, measuring nothing (a
--data run's dataset line aside: the file does not hold it).

With a training command after --, as in

    headspace ladder --levels host,sample,raw,none --steps 20 --count 3 \
        --out results/train-ladder.txt -- python3 train.py

it runs that command, unmodified, once per level and run under headspace's
hook (docs/own-loop.md): host keeps the first collated batch and feeds it
every step (the loader runs once); sample makes the dataset return one
cached processed sample (collate and the workers' transfer still run); raw,
for a torchvision-style dataset (ImageFolder, DatasetFolder: a .loader and
a .transform), caches the loaded item and still applies the transform, and
for a map-style dataset with a .transform and no .loader (CIFAR10, MNIST,
most datasets of one's own) replays what __getitem__ handed its .transform,
fetching nothing, the transform still applied; none runs the script as it
is; device needs a CUDA GPU. Each run times
--steps steps after one step and the batches the workers prefetched
(--warmup N instead), and is then stopped with all its workers. The table
gives steps/s per level, its ratio to the top level and the stage each
drop is attributed to; --out records BenchmarkOwnLoopLadder/level=…/script=…
with the command, interpreter and torch versions (written whole at the
end; SIGINT keeps the finished runs, marked partial); ladder --from FILE of
it prints its table again.`
