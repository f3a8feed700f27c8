// Package procgroup ties the processes headspace starts to its life: Group
// starts a command in a process group of its own, which Kill ends with
// everything in it (a script's DataLoader workers too); on Linux the kernel
// also kills such a child when headspace dies (Pdeathsig), as it kills one
// started with Orphanless. Contained adds, on Linux, a PID namespace of the
// command's own, which the kernel empties when the command ends: nothing
// it started outlives it. Outside Linux there is no Pdeathsig; on Windows
// there are no process groups either, and Kill ends the process alone.
package procgroup
