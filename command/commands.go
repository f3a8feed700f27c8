package command

import "github.com/headspace-bench/headspace/internal/cli"

// Commands are the commands made from the experiments, the one list
// cmd/headspace registers, a file of this package each. Each command's
// Runs are experiments of workloads.Registry (cmd/headspace's register
// panics on one that is not).
func Commands() []cli.Command {
	return []cli.Command{
		loadersCommand(),
		analyzeCommand(),
		simCommand(),
		remoteCommand(),
		ladderCommand(),
		nodeCommand(),
		whatifCommand(),
		cudaCommand(),
		tuneCommand(),
		peerCommand(),
	}
}
