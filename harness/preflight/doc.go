// Package preflight is what a measuring command checks and waits for
// before it measures: that a run's buffers fit in the memory this
// machine has available (Fits, FitsPipeline), and a quiet machine, with
// the policy for runs other processes disturbed (DisturbFlags, the
// defaults of --quiet-wait and --reruns). The experiments' Prepare
// methods (workloads) and the commands (command, cmd/headspace) use it.
package preflight
