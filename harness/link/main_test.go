package link

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: the
// link's own, toxiproxy's, the HTTP stage's and the upstream's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
