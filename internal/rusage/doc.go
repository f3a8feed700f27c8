// Package rusage reads the CPU time this process has used (getrusage on
// Unix, GetProcessTimes on Windows): the one place that system call is
// made, for the loader benchmarks (harness/loadbench) and the
// what-if model's profiles (workloads.WhatIf).
package rusage
