package main

import (
	"context"
	"io"
	"os"

	"github.com/headspace-bench/headspace/harness/procloader"
)

func init() {
	register(command{name: "worker", summary: "internal: a process-mode loader worker", run: runWorker})
}

const workerUsage = `
Internal: one worker process of the process-mode loader (headspace loaders
--mode process). It reads the pipeline's configuration and batch requests on
stdin and writes batches on stdout; it is not meant to be run by hand.`

func runWorker(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("worker", workerUsage, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return procloader.ServeWorker(ctx, os.Stdin, os.Stdout)
}
