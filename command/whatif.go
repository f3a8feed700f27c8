package command

import (
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// whatifCommand is headspace whatif; whatif --accelerators runs NodeWhatIf
// (workloads/whatifnodereport.go), whatif -- COMMAND its own loop
// (OwnLoopWhatIf, workloads/ownloopwhatif.go).
func whatifCommand() cli.Command {
	c := CommandOf[workloads.WhatIfOutcome, workloads.WhatIf]("whatif", "predict steps/s for other cores, workers and step times; --verify checks it", whatifUsage)
	c.Runs = append(c.Runs, workloads.NodeWhatIf{}.Name(), workloads.OwnLoopWhatIf{}.Name())
	return c
}

const whatifUsage = `
Profiles the full input pipeline once (--count runs, each cost's median):
each stage's CPU time per sample (the thread CPU clock of every task, on
Linux), the host's own CPU per sample, the upload and the step. From that
profile, or from one saved with --save and read with --stats, a CPU-budget
model predicts steps/s as the smallest of the device's rate, the copy's,
what the cores can feed, and each stage's workers; it prints a table over
--cores, --at-workers and --at-steps (step multipliers: 0.5 is a model twice
as fast), the cores and workers needed to be model-bound, and, at the
profile's own setting, the speed-up each stage would need alone, with the
caching ladder's attribution (predicted from the same costs) beside the
model's. --ladder also runs the caching ladder itself at the profile's
setting and sets the measured ladder's attribution beside the model's: the
ladder blames the stage whose addition costs throughput, the model the stage
that holds the binding resource, and where one stage holds most of the cores
and another tips them over, the two differ.

--verify runs the points of --verify-cores (GOMAXPROCS), --verify-workers and
--verify-steps on this machine and prints predicted against measured steps/s
with the error, the median and the worst, and the likely reason for each
point off by more than 15%. --out keeps every run in Go benchmark format,
--report a Markdown section, --plot a figure of predicted steps/s against
cores with the device's ceiling (and the measured points).

--from FILE rebuilds the report, --plot and the printed tables from a
result file that whatif --out wrote, measuring nothing: the command, the
profile and the grids come from the file's configuration lines, the
checked points and the ladder from its runs (notebooks/whatif.md from
results/whatif-<commit>.txt). A file without those lines is refused.

--accelerators 1,2,4,8 turns it to a node of accelerators (headspace node,
docs/node.md): one rank alone is profiled (its AU, its CPU per sample, the
other processes' cores), and the model predicts every rank's AU at each N
(the host's cores shared by N ranks, none faster than one alone; the
ranks' memory estimate; the --link's caps), the largest N at --min-au,
the resource that runs out first, and what --target N would take (cores,
Gbit/s, requests/s). --verify measures the node at each N and prints the
error on AU, the median and the worst; --out keeps the runs and the
predictions, --from rebuilds the output, --report and --plot from it.

--data DIR reads a dataset on disk (headspace dataset write, an ImageFolder
or WebDataset shards; docs/real-data.md): the load stage
becomes fetch then decode, each with its statistics; --page-cache and
--max-failures as in headspace ladder.

With a training command after --, as in

    headspace whatif --verify -- python3 train.py

it runs the headspace analysis on that command (40 steps from its loader,
30 cached; docs/own-loop.md) and models its loader from the measured
stages: each worker's time a batch (less its wait for a core), its CPU
time, the loop's own CPU and the step on cached batches. It prints the
workers and cores that would make the model step the bound, the steps/s
predicted there, and the speed-up the slowest stage needs to keep the
script's worker count; --verify runs the script as it is with the
predicted worker count (and with its own) for --steps steps and prints
measured beside predicted with the error; --out records all the report
states: the model (BenchmarkOwnLoopWhatIf/model/script=…), a node's answer
(…/node/…, …/rank/…) and the checks (BenchmarkOwnLoopWhatIf/check/script=…/
workers=N with steps/s and predicted-steps/s), from which --from FILE
prints the report again.`
