package procloader

import (
	"context"
	"fmt"
	"os"
)

// selfWorkerEnv marks a process started by SelfWorker.
const selfWorkerEnv = "HEADSPACE_SELF_WORKER"

// SelfWorker is the Options that start this very binary as a worker: for
// a test binary, which cannot run `headspace worker`, to be its own
// workers. Its TestMain must call ServeIfSelfWorker first.
func SelfWorker() Options {
	return Options{Exe: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{selfWorkerEnv + "=1"}}
}

// ServeIfSelfWorker serves as a worker on stdin and stdout and exits, when
// this process was started by SelfWorker; otherwise it returns at once.
func ServeIfSelfWorker() {
	if os.Getenv(selfWorkerEnv) != "1" {
		return
	}
	if err := ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
