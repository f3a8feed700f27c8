package command

import (
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// analyzeCommand is headspace analyze; analyze -- COMMAND runs
// OwnLoopAnalyze.
func analyzeCommand() cli.Command {
	c := CommandOf[workloads.HeadspaceOutcome, workloads.Headspace]("analyze", "headspace analysis: step time with the loader, then with cached batches", analyzeUsage)
	c.Runs = append(c.Runs, workloads.OwnLoopAnalyze{}.Name())
	return c
}

const analyzeUsage = `
Runs the training loop with its loader wrapped in a cache, as SPDL's
CacheDataLoader does: the first --num-caches batches are kept, and after
--return-caches-after batches the loop is fed from the cache. It reports the
median step time before and after the switch with 95% confidence intervals,
the headspace in ms and %, the training time saved over --total-steps, the
stage that bounds throughput and how input-bound the run is; it writes a
plot of step time over iterations (--plot: PNG and SVG), every step in Go
benchmark format (--out, as BenchmarkHeadspace/transforms=…/phase=fill|loader|switch|cached, with the stages' statistics), and
the pipeline's stage statistics as JSON (--stats-json).

With a training command after --, as in

    headspace analyze --out results/train.txt -- python3 train.py --epochs 1

it runs that command, unmodified, under headspace's hook (a stdlib-only
Python module carried by the binary, written to a temporary directory and
removed after; docs/own-loop.md): the first DataLoader the script iterates
in its main thread (--loader picks another; one whose steps train nothing
gives way to one whose steps do) is wrapped in the same cache,
every step is timed batch to batch with the loop's wait, the dataset's
__getitem__ (its .loader and .transform where it has them) and collate are
timed in the workers (wall and CPU time), pin-memory in the main process,
and the command and all its workers are stopped once the steps are in.
The step times are medians of means over rounds of the loader's workers. The records are
BenchmarkOwnLoopAnalyze/script=NAME/phase=… (with each loader's, the
estimates' and the stages': OwnLoopAnalyzeLoader, …Input, …Stage), with the
command, interpreter and torch versions among the settings; analyze --from
FILE of its --out prints the same report again (--plot draws its plot). A command that is not Python, that
never iterates a DataLoader within --first-batch-timeout, whose loop asks
for no batch for --stall-timeout, or that ends before the steps are in
exits 2 (--partial keeps what it got); a script that raises shows its
traceback and exits 1. The command's stdin is /dev/null.

A command whose ranks are processes — torchrun --nproc_per_node N
train.py, python -m torch.distributed.run, accelerate launch --multi_gpu,
srun --ntasks N python train.py, or a script that starts its ranks with
torch.multiprocessing.spawn — has every rank measured, on one node: all switch to cached batches at the same step, the records carry
rank=R, and the report gives the node's answer (the slowest rank and the
spread, the verdict and the stage in the way, what it would take from the
model of whatif --accelerators) in BenchmarkOwnLoopAnalyzeNode. A rank that
raises is named (exit 1); ranks that make no step for
--first-batch-timeout are stopped, the rank that hangs named (exit 1);
other launchers and ranks on more than one node exit 2.

--data DIR reads a dataset on disk (headspace dataset write, an ImageFolder
or WebDataset shards; docs/real-data.md): the load stage
becomes fetch then decode, each with its statistics; --page-cache and
--max-failures as in headspace ladder.`
