// Package procloader is a process-based loader that mirrors PyTorch's
// DataLoader with num_workers > 0, so that headspace can put the SPDL
// document's thread-versus-process claims to the test: time to first batch
// that grows with the number of worker processes, throughput that stops
// growing (and falls) as workers are added, and memory that grows with them.
//
// # Model
//
// New re-executes the headspace binary once per worker with the hidden
// subcommand "worker" (ServeWorker). As PyTorch pickles the dataset to every
// worker, the parent sends each worker the dataset and pipeline
// configuration at start, serialised (length-prefixed JSON) on its stdin.
// Dispatch is DataLoader's: batch k is requested from worker k mod W, and
// each worker has at most Prefetch (prefetch_factor, default 2) batches
// requested and not yet handed to the consumer; when the consumer takes a
// batch the next index is requested. A worker builds the whole batch itself,
// single-threaded (load, transform and collate, sample after sample, with
// loader.BatchFiller), so the batches are bit-identical to those of the
// goroutine pipeline (loader.New at level.None) for the same seed. The
// parent reorders batches and delivers them in index order, into buffers
// recycled through a batching.Pool.
//
// # Transport: pipes
//
// A batch travels on the worker's stdout as a 32-byte header (magic, batch
// index, batch size, sample length, payload length) followed by the raw
// float32 values and int32 labels. The pipe is asked for a 1 MiB buffer.
//
// Pipes rather than shared memory: a pipe costs one copy into the kernel
// and one out of it per batch, which for the loader's sizes (a batch of 32
// 3×224×224 samples is 19 MB) is a few milliseconds at memory bandwidth,
// small next to building the batch (tens to hundreds of milliseconds of
// CPU). PyTorch itself moves the batch through shared memory
// (torch.multiprocessing's file descriptors) but still pickles a handle per
// tensor through a pipe and, with pin_memory, copies the batch again in the
// parent; the cost that dominates SPDL's comparison is process start-up and
// per-process memory, which pipes reproduce as well. Pipes also give, for
// free, what the failure handling needs: EOF when a worker dies, with no
// segment to unlink and no partially written buffer to distrust. A
// memfd/mmap transport would remove the two copies; it is left for when a
// measurement shows the copies matter.
//
// # Failure and cleanup
//
// A worker that exits, crashes, or sends a bad header makes Next return an
// error naming the worker, its pid and the batch it was producing, with the
// end of its stderr, once the consumer reaches that batch (the batches
// before it, from the other workers, are still delivered); every later call
// returns the same error. Close, or cancelling the context given to New, kills
// every worker; Close also reaps them all (cmd.Wait), so none is left as an
// orphan or a zombie. Workers are started with Pdeathsig SIGKILL, so they
// die with the parent even if it is killed without running Close. (Linux
// sends Pdeathsig when the thread that started the child exits; the Go
// runtime does not end its threads except for goroutines that exit while
// locked to one, which this package never does.)
package procloader
