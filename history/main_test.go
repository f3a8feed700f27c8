package history

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running (the
// browser test's connection to Chromium included).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
