package command

import (
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// loadersCommand is headspace loaders.
func loadersCommand() cli.Command {
	return CommandOf[workloads.LoadersOutcome, workloads.Loaders]("loaders", "compare goroutine and process (DataLoader-style) loaders: TTFB, samples/s, RSS, CPU", loadersUsage)
}

const loadersUsage = `
Compares the goroutine loader (the ladder's pipeline) with a process-based
loader built as PyTorch's DataLoader is (one worker process per worker, each
building whole batches), as the SPDL document compares threads with
processes. For each mode and worker count it measures the time to first
batch (from the loader's construction to the first batch), the samples/s of
the remaining batches, the peak resident memory of all processes together
and their CPU seconds. No training step runs: each batch is released as soon
as it arrives.

--data DIR reads a dataset on disk (headspace dataset write, an ImageFolder
or WebDataset shards; docs/real-data.md): the load stage
becomes fetch then decode, each with its statistics; --page-cache and
--max-failures as in headspace ladder.`
