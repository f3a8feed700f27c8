package command

import (
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// nodeCommand is headspace node.
func nodeCommand() cli.Command {
	return CommandOf[workloads.NodeOutcome, workloads.Node]("node", "a node of N emulated accelerators: how many this host keeps at AU ≥ 0.90, and what runs out first", nodeUsage)
}

const nodeUsage = `
Runs a node of N emulated accelerators for each N of --accelerators: N rank
processes (this binary, re-executed), each with its own loader workers and
its own emulated device, stepping in lockstep through an all-reduce
barrier (a step ends for all when the slowest rank's ends), as PyTorch DDP
runs one process per GPU. Every N runs at level none (the pipeline) and
level host (a batch cached on the host: the bound).

Per N it records, in Go benchmark format: the node's samples/s and steps/s,
AU (MLPerf Storage's accelerator utilisation, compute time / total time;
unit au) per rank (rank=R) and for the node (au: the ranks' mean, au-min:
the smallest), the input wait, the CPU the ranks used (cpu-cores,
cpu-ns/sample), their run-queue delay (run-delay-%), the other processes'
cores and runnable threads, from a dataset on disk or in a bucket bytes/s
and requests/s, and with --link the share of its bandwidth they used
(link-use-%), and where a rank stalled for less than --barrier-timeout
while the others waited (a wait of 1 s or more, ten times their mean),
that wait (stall-ns): the table marks the point, and no bound is read
from it. Records carry accelerators=N.

It prints the table, then the answer: "node-max-accelerators: N", the
largest N at which every rank's AU is at least --min-au (0.90, MLPerf's),
and what runs out first: cores (CPU per sample × samples/s against the
cores), memory (the ranks' estimate, the one the bounds use), the --link's
bandwidth or request rate, with each resource's accelerator count.

An N whose ranks' memory estimate does not fit the available memory, or
whose threads (N × (workers + 1)) exceed 32 per core, is refused before
anything starts (exit 2). A rank that dies stops the others at once: exit
1, naming the rank, and that N is not recorded unless --partial (a record
marked partial 1). A rank that does not reach a step within
--barrier-timeout of the first is named by the timeout; where no rank
reaches a step within it of the step before's release (of the ranks'
start for the first), every rank is named. SIGINT stops every
rank (exit 130); the file keeps every finished N.

--peer also runs the PyTorch DDP peer (peers/torch/node.py: ranks by
torch.multiprocessing.spawn, gloo on 127.0.0.1, an all_reduce before every
step, the document's pipeline through each rank's DataLoader, the same
emulated step) at every point, each of its runs after one of ours; its
records are BenchmarkNodeTorch/…, its table and answer printed after ours.

--out is resumed (points with --count runs are skipped; a point kept
partial is measured again), refused when it holds another setup's results
(--fresh replaces it) or while another run writes it; a run interrupted or
failed leaves it marked partial: true until a resumed run completes it; --shard i/n runs
every n-th accelerator count from the i-th, one node per Slurm array task,
which 'headspace merge' joins. --report and --plot write the Markdown
report and AU against N; --from FILE rebuilds them, the table and the
answer from a node result file, measuring nothing. docs/node.md.`
