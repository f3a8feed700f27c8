package main

import (
	"context"
	"io"
	"os"

	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/internal/cli"
)

func init() {
	register(cli.Command{Name: "rank", Summary: "internal: one rank (accelerator) of headspace node", Run: runRank})
}

const rankUsage = `
Internal: one rank of a node of emulated accelerators (headspace node): its
own loader workers and emulated device. It reads its run on stdin, steps
through the all-reduce barrier on stdin and stdout, and writes its result
on stdout; it is not meant to be run by hand.`

func runRank(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := cli.NewFlagSet("rank", rankUsage, stdout)
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	return node.ServeRank(ctx, os.Stdin, os.Stdout)
}
