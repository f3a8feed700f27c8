package main

import (
	"context"
	"io"
	"os"

	"github.com/headspace-bench/headspace/harness/node"
)

func init() {
	register(command{name: "rank", summary: "internal: one rank (accelerator) of headspace node", run: runRank})
}

const rankUsage = `
Internal: one rank of a node of emulated accelerators (headspace node): its
own loader workers and emulated device. It reads its run on stdin, steps
through the all-reduce barrier on stdin and stdout, and writes its result
on stdout; it is not meant to be run by hand.`

func runRank(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("rank", rankUsage, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return node.ServeRank(ctx, os.Stdin, os.Stdout)
}
