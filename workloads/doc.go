// Package workloads names the experiments headspace runs, one file each,
// and holds their Go benchmarks, so `go test -bench` in this directory, the
// headspace CLI and CI all write the same benchmark-format records.
//
//   - ladder003.go: the caching ladder of "A Caching Strategy for
//     Identifying Bottlenecks on the Data Input Pipeline" (BenchmarkLadder).
package workloads
