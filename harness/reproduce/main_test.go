package reproduce

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/harness/procloader"
)

func TestMain(m *testing.M) {
	// The document 002's process loader starts this test binary as its
	// workers (procloader.SelfWorker).
	procloader.ServeIfSelfWorker()
	goleak.VerifyTestMain(m)
}

// testWorker starts this test binary as a worker.
func testWorker() procloader.Options { return procloader.SelfWorker() }
