// Package loader is headspace's goroutine input pipeline: it turns a
// dataset into batches for the training loop, as PyTorch's DataLoader does,
// with goroutines where DataLoader has worker processes.
//
// A batch's way through it:
//
//	index → load → transform → collate → batch → the training loop
//
// The index stage hands out sample positions, at most Prefetch batches'
// worth ahead of the consumer (the window; DataLoader's prefetch_factor). The
// load stage fills a raw sample from the dataset (Workers goroutines); the
// transform stage runs the transforms (random crop, mask, ConvertColor,
// Scale) with the random stream of the sample's position, so a batch's
// content does not depend on the worker count; the collate stage copies
// samples into their slot of a pooled batch (package batching), in
// parallel; the batch stage emits complete batches in order. Every buffer
// comes from a free list or a pool, so a steady-state batch allocates
// nothing.
//
// A level (package level) keeps one raw or one processed sample instead of
// computing it per sample: the cache points of the caching ladder (package
// ladder) that still run a loader. The cache is made by the keeper of the
// stage the level keeps, one per stage, whatever levels cut after it.
// BatchFiller computes the same batches on one goroutine, as one
// DataLoader worker process does (package procloader).
//
// With Config.Data the load stage reads a dataset on disk (package
// ondisk) in two stages, fetch (the sample's bytes, into a pooled buffer)
// and decode (into a pooled raw sample); level.Encoded keeps one sample's
// bytes so every item is decoded but nothing is read. A sample that fails
// either stage stops the run with an error naming it and its file, or is
// skipped and counted within Config.MaxFailures (Loader.Data).
//
// Placement says where the transform's last steps run: Host gives float32
// batches, Device uint8 batches that the device converts.
package loader
