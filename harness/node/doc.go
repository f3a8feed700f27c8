// Package node measures a node of emulated accelerators: how many
// accelerators this host and its storage keep busy with one input
// pipeline, and what runs out first.
//
// # Model
//
// A node of N accelerators is N rank processes, one per accelerator, as
// PyTorch DDP runs them: each rank is the headspace binary re-executed
// with the hidden subcommand "rank" (ServeRank), with its own loader
// workers (goroutines of its process) and its own emulated device. The
// parent sends each rank its Spec on stdin and coordinates the all-reduce
// barrier (package barrier) over the rank's stdin and stdout: every step
// is launched on every rank once the slowest rank has its batch on the
// device, so a step ends for all when the slowest rank's ends. Each rank
// sends its measurement (RankResult) back when it ends.
//
// Accelerator utilisation is MLPerf Storage's: AU = compute time / total
// time, the device's step time over the wall time of the measured steps,
// per rank; the node's AU is the ranks' mean, and the node keeps N
// accelerators busy when every rank's AU is at least the threshold (0.90,
// MLPerf's for ResNet-50 and UNet3D).
//
// Each rank draws its own samples (the seed plus its rank), as
// DistributedSampler gives each rank its own part of the dataset.
//
// # Faults
//
// A rank that dies (exits, crashes, is killed) fails the barrier; the
// parent kills the other ranks at once and Run returns an error naming
// the rank, its pid, its exit status and the end of its stderr. A rank
// that hangs (a loader that never returns) leaves a step unreleased: the
// barrier's timeout names it. Cancelling Run's context (SIGINT) kills
// every rank, whose loader workers are goroutines of its process, and
// reaps them, so no process is left behind. Ranks are started with
// Pdeathsig SIGKILL on Linux (package procloader's attributes), so they
// die with the parent even if it is killed outright.
package node
