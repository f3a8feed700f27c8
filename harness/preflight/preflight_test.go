package preflight

import (
	"errors"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/internal/cli"
)

// TestFits checks the memory check: a need beyond this machine's
// available memory is a one-line usage error naming what needs it and
// both sizes, a small one passes, and so does every need where the
// available memory cannot be read (outside Linux).
func TestFits(t *testing.T) {
	avail, readable := machine.Memory()
	for _, tc := range []struct {
		name    string
		err     error
		refused bool
	}{
		{"a byte", Fits("a byte", 1), false},
		{"an exbibyte", Fits("the test's buffers", 1<<61), readable && avail < 1<<61},
		{"a default pipeline", FitsPipeline(loader.DefaultConfig(), 1, 0), false},
		{"a pipeline with an exbibyte on top", FitsPipeline(loader.DefaultConfig(), 4, 1<<61), readable && avail < 1<<61},
	} {
		var u cli.UsageError
		switch {
		case !tc.refused && tc.err != nil:
			t.Errorf("%s: %v, want it to fit", tc.name, tc.err)
		case tc.refused && (!errors.As(tc.err, &u) || !strings.Contains(u.Msg, "needs about") || !strings.Contains(u.Msg, "GiB available") || strings.Contains(u.Msg, "\n")):
			t.Errorf("%s: %v, want a one-line usage error with the need and what is available", tc.name, tc.err)
		}
	}
}

// TestDisturbFlags checks the disturbance flags' policy: the defaults
// pass, and a run delay share of 0 or below and a negative wait are
// usage errors naming their flag.
func TestDisturbFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		refused string // "": accepted
	}{
		{nil, ""},
		{[]string{"--max-run-delay=0.5", "--reruns=0", "--quiet-wait=0s"}, ""},
		{[]string{"--max-run-delay=0"}, "--max-run-delay 0"},
		{[]string{"--quiet-wait=-1s"}, "--quiet-wait"},
	} {
		fs := cli.NewFlagSet("disturb-test", "", nil)
		var f DisturbFlags
		f.Register(fs)
		err := cli.ParseFlags(fs, tc.args)
		if err == nil {
			_, err = f.Policy()
		}
		var u cli.UsageError
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%v: %v, want accepted", tc.args, err)
		case tc.refused != "" && (!errors.As(err, &u) || !strings.Contains(u.Msg, tc.refused)):
			t.Errorf("%v: %v, want a usage error naming %s", tc.args, err, tc.refused)
		}
	}
}
