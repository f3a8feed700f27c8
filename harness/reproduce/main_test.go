package reproduce

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/harness/procloader"
)

// workerEnv makes the test binary a process-mode loader worker, for the
// document 002's process loader.
const workerEnv = "HEADSPACE_REPRODUCE_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if err := procloader.ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// testWorker starts this test binary as a worker.
func testWorker() procloader.Options {
	return procloader.Options{Exe: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{workerEnv + "=1"}}
}
