package ownloop_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helper, where a test file sets it, is the test binary run as headspace
// by a test that kills it: run with the script its environment names.
var helper func(script string)

func TestMain(m *testing.M) {
	if s := os.Getenv("HEADSPACE_OWNLOOP_TEST_HELPER"); s != "" && helper != nil {
		helper(s)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
