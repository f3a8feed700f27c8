package cuda

import (
	"strings"
	"testing"
)

// TestLoadReportsMissingDriver runs everywhere: on a machine without a GPU
// driver the error must say so plainly; with one, Load must succeed.
func TestLoadReportsMissingDriver(t *testing.T) {
	h, err := Load()
	if err != nil {
		if !strings.HasPrefix(err.Error(), "no CUDA driver found (libcuda.so.1): ") {
			t.Errorf("error %q does not say the driver is missing", err)
		}
		return
	}
	if h == 0 {
		t.Error("Load succeeded with a nil handle")
	}
}
