package command

import (
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// Commands are the commands made from the experiments, the one list
// cmd/headspace registers: each of this package's, then those still
// made in workloads (workloads.Commands: tune, whose files move here
// next). Each command's Runs are experiments of workloads.Registry
// (cmd/headspace's register panics on one that is not).
func Commands() []cli.Command {
	return append([]cli.Command{
		loadersCommand(),
		analyzeCommand(),
		simCommand(),
		remoteCommand(),
		ladderCommand(),
		nodeCommand(),
		whatifCommand(),
		cudaCommand(),
		peerCommand(),
	}, workloads.Commands()...)
}
