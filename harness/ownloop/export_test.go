package ownloop

import "github.com/headspace-bench/headspace/harness/level"

// PointOf is point for the tests: a ladder point from a run whose step
// times a test replaced (the times a script's sleeps make on an idle
// machine), so that the ladder's ordering is checked on the run's own
// records without the wall clock of a busy machine.
func PointOf(run *Run, s Settings, l level.Level, r int) (LadderPoint, error) {
	return point(run, s, l, r)
}

// HookArgs, InnermostFrame and HungRanks are the ranks' helpers, for
// their table tests.
var (
	HookArgs       = hookArgs
	InnermostFrame = innermostFrame
	HungRanks      = hungRanks
)
