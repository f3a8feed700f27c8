package reproduce

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/harness/procloader"
)

// TestMain makes the test binary its own process-mode loader worker
// (procloader.SelfWorker), for the document 002's process loader.
func TestMain(m *testing.M) {
	procloader.ServeIfSelfWorker()
	goleak.VerifyTestMain(m)
}
