// Package ladder is the caching ladder of "A Caching Strategy for
// Identifying Bottlenecks on the Data Input Pipeline": run the training
// loop with the data cached at each stage of the input pipeline, and the
// level whose throughput falls names the stage in the way.
//
// A walk through one point of a sweep:
//
//  1. A Point names everything that changes the result besides the result
//     file's configuration: the level (package level), the loader's workers, the transform
//     implementation, the Placement of the last conversion, and whether
//     uploads come from pinned memory. Its Name is the benchmark's name,
//     "Ladder/level=raw/workers=2/transforms=naive/placement=host/pinned=true".
//  2. Run runs the loop at the level: levels none, encoded, raw and sample
//     start a loader (package loader) that caches nothing, one sample's
//     encoded bytes (a dataset on disk only: Check refuses it otherwise),
//     one raw sample or one processed sample; levels host and device keep
//     one batch that the full pipeline made, on the host (re-uploaded
//     every step) or on the device (uploaded once), by the keeper of the
//     stage they keep (batch's or upload's). The loop itself is package
//     train's.
//  3. Point.Benchmark turns the run into the one benchmark-format record
//     that every output path writes (package resultfile stores it).
//  4. Attribute reads a sweep's median steps/s per level: each drop from
//     one level to the next is the cost of the stages the lower level adds
//     (level.Level.Stage), and the largest drop of at least Significant is the
//     bottleneck. WriteTable prints that reading; the reports use the same
//     Attribution.
//
// The sweep over many points, with resume and progress, is the workload's
// (package workloads), so the CLI, `go test -bench` and the reports run it
// the same way.
package ladder
