// Package workloads is the home of every experiment headspace runs, one
// file each, named for what it is:
//
//   - ladder.go: the caching ladder of "A Caching Strategy for Identifying
//     Bottlenecks on the Data Input Pipeline" (document 003);
//   - headspace.go: SPDL's headspace analysis (documents 000, 001);
//   - loaders.go: goroutine against process workers, SPDL's thread-based
//     loading (document 002);
//   - sim.go: the loader simulation of "Visualizing data loaders"
//     (document 004);
//   - peer.go: the document's PyTorch pipeline beside ours.
//
// Each holds the experiment's specification (a struct with a Default… and
// a Quick… size), the document's own numbers, and one way to run it that
// returns benchmark-format results (golang.org/x/perf/benchfmt). The
// headspace commands, `headspace reproduce` and the Go benchmarks beside
// this file (`go test -bench . ./workloads`; -short runs every experiment
// at its quick size) all run the experiments through these, so every
// output path writes the same records.
package workloads
