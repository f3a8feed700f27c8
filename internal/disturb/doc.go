// Package disturb measures how much a benchmark point was disturbed by
// the rest of the machine, and waits for the machine to be quiet before a
// measured run.
//
// # What is measured
//
// Read before and after a point (Start, then Probe.Stop), a Sample holds
// the point's wall time and:
//
//   - CPU: this process's user and system CPU time (package rusage). It
//     does not count time spent waiting for a CPU, so on a CPU-bound point
//     it is a companion to the wall time that a busy neighbour moves less;
//   - RunDelay: how long this process's threads waited in a run queue for
//     a CPU while runnable, the second field of every
//     /proc/self/task/*/schedstat (Linux; summed over the threads alive
//     at both readings, so a thread that exits takes its share with it);
//   - Others: the CPU time the other processes used over the point, the
//     machine's busy time (/proc/stat's first line, every CPU, less idle
//     and iowait; Linux) less this process's CPU time;
//   - Pressure: how long some task on the machine waited for a CPU, the
//     "some … total=" microseconds of /proc/pressure/cpu (Linux PSI):
//     the machine's business, where RunDelay is this process's;
//   - Instructions: user-space instructions retired by the threads alive
//     at Start, from perf_event_open counters, where the kernel lets an
//     unprivileged process open them (Linux; absent elsewhere, and
//     absent in containers that forbid the call).
//
// Steal time is not used: on the machines this project runs on it reads
// 0 while neighbours share the cores, which RunDelay does see.
//
// # Disturbed, and what is done about it
//
// A point is disturbed when the run-queue delay other processes caused
// exceeds Policy.MaxDelay of its wall time (DefaultMaxDelay, 5%). That
// delay is told apart from the point's own threads waiting for each
// other (more runnable threads than cores) by OthersDelay: at most the
// run-queue delay, summed over its threads, and at most the CPU time the
// other processes took over the point, since a thread waits on another
// process's account only while that process runs. On an otherwise idle
// machine a point is never disturbed, however many threads it runs: a
// regression that adds a thread is measured, not sent to a rerun. Where
// the machine's busy time cannot be read, the run-queue delay alone
// decides. The ladder repeats a disturbed point up to Policy.Reruns times
// and keeps the least disturbed run, still marked disturbed when every
// attempt was (units Disturbed and Reruns in the result file). The gate
// never calls a disturbed point a regression: it asks for a rerun.
// Where run-queue delay cannot be read (not Linux), no point is called
// disturbed.
//
// # Waiting for a quiet machine
//
// WaitQuiet samples the machine's CPU pressure (the share of a second in
// which some task waited for a CPU, from /proc/pressure/cpu; else the busy
// share of all CPUs from /proc/stat) until it falls below Quiet.Below
// (DefaultQuietBelow) or Quiet.Max has passed; on a machine that never
// gets quiet the wait ends at its bound and QuietResult.Busy says so, for
// the result file to record.
package disturb
