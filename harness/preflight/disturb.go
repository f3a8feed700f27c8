package preflight

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/disturb"
	"github.com/headspace-bench/headspace/internal/progress"
)

// The environment variables that set the defaults of --quiet-wait and
// --reruns: the paired gate (headspace gate) sets both for the runs it
// starts, since it waits for a quiet machine itself before each round,
// and tests set them to 0.
const (
	EnvQuietWait = "HEADSPACE_QUIET_WAIT"
	EnvReruns    = "HEADSPACE_RERUNS"
)

// DefaultQuietWait is how long a measured run waits for a quiet machine
// by default: $HEADSPACE_QUIET_WAIT, else 10 s.
func DefaultQuietWait() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(EnvQuietWait)); err == nil && d >= 0 {
		return d
	}
	return 10 * time.Second
}

// DefaultReruns is disturb.DefaultReruns, or $HEADSPACE_RERUNS.
func DefaultReruns() int {
	if n, err := strconv.Atoi(os.Getenv(EnvReruns)); err == nil && n >= 0 {
		return n
	}
	return disturb.DefaultReruns
}

// The disturbance flags' bounds (gate defines --quiet-wait alike).
var _ = cli.Declare(map[string]cli.Bound{
	"quiet-wait": {Lo: 0, Hi: float64(time.Hour)},
	// The delay is summed over a run's threads, so it can pass its wall
	// time: ci/smoke.sh sets 9.9 so that a busy CI machine marks nothing.
	"max-run-delay": {Lo: 0, Hi: 100},
	"reruns":        {Lo: 0, Hi: 100},
})

// DisturbFlags are a measuring command's flags for disturbance: the wait
// for a quiet machine and the policy for disturbed points.
type DisturbFlags struct {
	wait     time.Duration
	maxDelay float64
	reruns   int
}

// Register defines the flags on fs.
func (f *DisturbFlags) Register(fs *flag.FlagSet) {
	fs.DurationVar(&f.wait, "quiet-wait", DefaultQuietWait(), "before measuring, wait at most `time` for the machine's CPU pressure to fall below 10% (0: do not wait; default $"+EnvQuietWait+" or 10s)")
	fs.Float64Var(&f.maxDelay, "max-run-delay", disturb.DefaultMaxDelay, "a run whose run-queue delay caused by other processes (at most the CPU time they used over it; its own threads waiting for each other do not count) exceeds this `share` of its wall time is disturbed (0.05 = 5%)")
	fs.IntVar(&f.reruns, "reruns", DefaultReruns(), "repeat a disturbed run at most `n` times, keeping the least disturbed (default $"+EnvReruns+" or 2)")
}

// Policy is the flags' disturbance policy, checked.
func (f *DisturbFlags) Policy() (disturb.Policy, error) {
	p := disturb.Policy{MaxDelay: f.maxDelay, Reruns: f.reruns}
	if f.maxDelay <= 0 {
		return p, cli.Usagef("--max-run-delay %v: want a positive share of wall time, e.g. 0.05 for 5%%", f.maxDelay)
	}
	if err := p.Validate(); err != nil {
		return p, cli.AsUsage(err)
	}
	if f.wait < 0 {
		return p, cli.Usagef("--quiet-wait %v: want a duration of 0 or more", f.wait)
	}
	return p, nil
}

// WaitQuiet waits for a quiet machine as the flags say, telling the
// progress line on stderr (a terminal) how busy it is; when the wait
// ends at its bound it returns the machine-busy configuration line for
// the result file, and says so on stderr.
func (f *DisturbFlags) WaitQuiet(ctx context.Context, stderr io.Writer) ([]resultfile.Config, error) {
	if f.wait <= 0 {
		return nil, nil
	}
	bar := progress.For(stderr, 0)
	defer bar.Finish()
	r, err := disturb.WaitQuiet(ctx, disturb.Quiet{Max: f.wait, Status: bar.Set})
	if err != nil {
		return nil, err
	}
	if !r.Busy {
		return nil, nil
	}
	bar.Finish()
	fmt.Fprintf(stderr, "headspace: the machine did not get quiet (%s): measuring anyway; the result file says so\n", r)
	return []resultfile.Config{{Key: resultfile.BusyKey, Value: r.String()}}, nil
}
