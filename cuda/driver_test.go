package cuda

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestLoadReportsMissingDriver runs everywhere: without a GPU driver the
// error must say so plainly (and on Linux name the library); with one,
// Load must succeed.
func TestLoadReportsMissingDriver(t *testing.T) {
	err := Load()
	if err == nil {
		return // a machine with a driver
	}
	if !strings.HasPrefix(err.Error(), "no CUDA driver found (libcuda.so.1): ") {
		t.Errorf("error %q does not say the driver is missing", err)
	}
	if runtime.GOOS != "linux" && !errors.Is(err, ErrUnsupported) {
		t.Errorf("on %s the error %q does not say CUDA is Linux-only", runtime.GOOS, err)
	}
	if _, err := Open(context.Background(), 0); err == nil || !strings.HasPrefix(err.Error(), "no CUDA driver found") {
		t.Errorf("Open without a driver = %v", err)
	}
}

func TestInfoFormats(t *testing.T) {
	for _, tc := range []struct {
		info           Info
		driver, target string
	}{
		{Info{DriverVersion: 12040, Major: 9, Minor: 0}, "12.4", "sm_90"},
		{Info{DriverVersion: 11080, Major: 8, Minor: 6}, "11.8", "sm_86"},
		{Info{DriverVersion: 13000, Major: 10, Minor: 0}, "13.0", "sm_100"},
	} {
		if d, j := tc.info.Driver(), tc.info.JITTarget(); d != tc.driver || j != tc.target {
			t.Errorf("%+v: driver %q, target %q; want %q, %q", tc.info, d, j, tc.driver, tc.target)
		}
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Call: "cuModuleLoadDataEx", Code: 218, Name: "CUDA_ERROR_INVALID_PTX", Log: "line 3; error"}
	if got, want := e.Error(), "cuda: cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218): JIT log: line 3; error"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !IsOutOfMemory(&Error{Code: 2}) || IsOutOfMemory(e) || IsOutOfMemory(errors.New("x")) {
		t.Error("IsOutOfMemory")
	}
}
