// Package cacheloader is SPDL's cache_iterator (Iterator) and CacheDataLoader
// (NewLoader), the instrument of the headspace analysis (harness/analysis):
// wrap the data loader so that, after a warm-up, the training loop is fed
// from a handful of cached batches, and compare the step time before and
// after the switch. The difference bounds what optimizing the data loader
// could ever gain. As in SPDL, this is a measuring tool, not a loader to
// train with: a few cached batches repeated forever do not train a model,
// but the step time they give is that of a loader that costs nothing.
//
// # Design
//
// Iterator is the counterpart of spdl.pipeline.cache_iterator for Go
// sequences, and Loader of spdl.dataloader.CacheDataLoader for the harness's
// batching.Loader. Both share Config and its rules:
//
//   - the first NumCaches items are kept, the first ReturnCachesAfter
//     (NumCaches by default) are passed through from the source;
//   - after that the source is not read again and the kept items are
//     replayed in order, cycling;
//   - StopAfter, when set, bounds the number of items in all, both phases
//     counted (CacheDataLoader sets it to the wrapped loader's length, so
//     that an epoch keeps its length);
//   - a source shorter than ReturnCachesAfter ends the first phase early and
//     the replay cycles over what was kept.
//
// The differences from SPDL are deliberate:
//
//   - configuration errors are found at construction and wrap ErrConfig:
//     NumCaches below 1 and negative values, which SPDL accepts (with no
//     caches its replay spins forever), as well as ReturnCachesAfter below
//     NumCaches and StopAfter below ReturnCachesAfter, which SPDL also
//     rejects;
//   - an empty source ends the sequence; SPDL's generator would loop
//     forever over an empty cache list;
//   - SPDL drops its reference to the source at the switch (delete_src) so
//     that the garbage collector may free it. The Go sequence does the
//     equivalent by leaving its range loop over src at the switch, so src's
//     deferred clean-up runs before the first cached item is yielded. The
//     Loader, however, keeps src open until Close: the cached batches are
//     src's buffers (from its batching.Pool), and Close hands them back
//     before closing it; src.Next is simply never called after the switch;
//   - a sequence from Iterator may be ranged again; each range re-reads src
//     with fresh caches, like every epoch of CacheDataLoader (SPDL's
//     cache_iterator itself is a one-shot generator). A Loader is a single
//     stream, as every batching.Loader is.
//
// The replay phase is a plain loop over a slice: it allocates nothing and
// costs a few nanoseconds per item (see BenchmarkIteratorReplay), so it adds
// nothing measurable to the step time it is meant to expose.
package cacheloader
