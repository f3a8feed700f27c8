// Package realpeer sets headspace's loader beside the loaders a user would
// install instead, each run by its own library from the pinned Python
// environment `make peers-env` makes (ci/peers-env.sh): torch 2's
// DataLoader (worker processes), SPDL's pipeline (threads, its own
// decoding), torchdata.nodes (threads and processes), DALI's CPU pipeline
// and tf.data with AUTOTUNE (Peers; peers/real holds their scripts).
//
// # The same job
//
// Every side reads the same natural JPEGs in an ImageFolder and does the
// same thing to each: decode to RGB, a random crop, RGB to YCbCr with the
// document's matrix and offset, divided by 255, laid out channel-major as
// float32, in batches of Settings.Batch (float32 batch×3×crop×crop), with
// Settings.Workers of whatever each uses (processes, threads, goroutines
// per stage) on the same cores. Ours is the goroutine loader at level none
// with the fast transforms and the mask ratio 0 (the mask is the
// document's, which no peer has): the crop, the conversion and the scale.
//
// # Alternation and records
//
// Sweep measures, for each of Config.Count rounds and each worker count,
// ours and every peer once, back to back, the order rotated, each peer in
// a process of its own (its own process group, killed as a group when the
// context ends). Each run is a Measurement: time to first batch,
// samples/s after the first batch, CPU seconds of every process involved
// and the peak of the summed resident memory of its processes (sampled by
// the harness on Linux); a peer's run that fails is a Measurement with
// Missing set to the reason, and the sweep goes on. Records writes them in
// Go benchmark format (BenchmarkRealPeer/peer=<name>/workers=<n>, so
// benchstat compares them by peer=); FileConfig adds every peer's package
// versions and settings and each missing run's reason as configuration
// lines; package workloads' RealPeerCodec reads them back (ReportOf)
// through Layout and MeasurementOf, as ParseScript reads a script's line,
// and Summarize gives each peer's medians and ours ÷ peer, the median of
// the rounds' paired ratios with their least and greatest.
package realpeer
