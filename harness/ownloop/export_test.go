package ownloop

import "github.com/headspace-bench/headspace/harness/level"

// PointOf is point for the tests: a ladder point from a run whose step
// times a test replaced (the times a script's sleeps make on an idle
// machine), so that the ladder's ordering is checked on the run's own
// records without the wall clock of a busy machine.
// NoNamespace makes Exec start commands without a PID namespace of their
// own, as where user namespaces are refused, until the test ends.
func NoNamespace(t interface{ Cleanup(func()) }) {
	noNamespace = true
	t.Cleanup(func() { noNamespace = false })
}

// SetNoNamespace is NoNamespace for a helper process that has no test.
func SetNoNamespace() { noNamespace = true }

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
