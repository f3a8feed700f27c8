package main

import (
	"context"
	"io"
	"os"

	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/internal/cli"
)

func init() {
	register(cli.Command{Name: "worker", Summary: "internal: a process-mode loader worker", Run: runWorker})
}

const workerUsage = `
Internal: one worker process of the process-mode loader (headspace loaders
--mode process). It reads the pipeline's configuration and batch requests on
stdin and writes batches on stdout; it is not meant to be run by hand.`

func runWorker(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := cli.NewFlagSet("worker", workerUsage, stdout)
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	return procloader.ServeWorker(ctx, os.Stdin, os.Stdout)
}
