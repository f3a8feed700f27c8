// Package pipeline runs headspace's input pipeline: stages of goroutine
// workers joined by bounded queues, as SPDL's pipeline is built from stages
// of threads.
//
// A pipeline is built source first:
//
//	p := pipeline.New(ctx)
//	idx, _ := pipeline.Source(p, "index", n, 16, func(i int) int { return i })
//	raw, _ := pipeline.Map(p, "load", idx, workers, 8, load)
//	out, _ := pipeline.Map(p, "transform", raw, workers, 8, transform)
//	batches, _ := pipeline.Aggregate(p, "batch", out, 2, emitInOrder, flush)
//	for { it, err := batches.Next(ctx); … }
//	err := p.Close()
//
// Each stage writes into its own bounded queue, so a slow consumer stalls
// the producers instead of letting memory grow: the number of items alive at
// once is bounded by the queue capacities plus the workers. Items keep the
// index the source gave them; Map delivers them in completion order, and an
// Aggregate stage (the collator) restores order where it matters.
//
// # Errors and cancellation
//
// The first error a stage returns stops the whole pipeline and is reported,
// by Next and by Close, as a *StageError naming the stage and the item.
// Cancelling the parent context, or calling Close, stops every stage; Close
// returns only when every goroutine the pipeline started has returned.
//
// # Statistics
//
// Every stage counts its tasks and failures and keeps a lock-free histogram
// of task times (average, P50, P90, P99); every queue counts items and the
// time producers waited for room (put) and consumers waited for an item
// (get), and its occupancy: 1 − the fraction of time it was empty, SPDL's
// "occupancy rate", the data readiness seen by the next stage. Read from
// source to sink, the first queue whose occupancy drops sits right after the
// stage that bounds throughput.
//
// # Observability
//
// Every worker runs under a pprof label stage=<name> and every task inside a
// runtime/trace region named for its stage, so CPU profiles and `go tool
// trace` attribute time to stages. A Recorder, when set, keeps every task's
// start and end per worker without locks, for timelines of real runs.
package pipeline
