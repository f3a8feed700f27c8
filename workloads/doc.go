// Package workloads is the home of every experiment headspace runs, one
// file each, named for what it is:
//
//   - ladder.go: the caching ladder of "A Caching Strategy for Identifying
//     Bottlenecks on the Data Input Pipeline" (document 003);
//   - ondisk.go: the ladder over data on disk, the document's raw-data
//     remedies (document 003, step e);
//   - headspace.go: SPDL's headspace analysis (documents 000, 001);
//   - loaders.go: goroutine against process workers, SPDL's thread-based
//     loading (document 002);
//   - sim.go: the loader simulation of "Visualizing data loaders"
//     (document 004);
//   - whatif.go: the what-if model's profile and its check;
//   - peer.go: the document's PyTorch pipeline beside ours.
//
// Each implements Experiment (experiment.go), the one narrow interface,
// after golang.org/x/benchmarks/sweet's common.Harness: its name and
// document, its sizes (At: Default, the document's, and Quick, every code
// path in seconds), the settings its result file records, and Run, which
// returns benchmark-format records (golang.org/x/perf/benchfmt). Each file
// also holds the document's own numbers. The headspace commands,
// `headspace reproduce` (package reproduce) and the Go benchmarks beside
// this file (`go test -bench . ./workloads`; -short runs every experiment
// at its Quick size) all run the experiments through it, so every output
// path writes the same records. docs/extending.md says which files a new
// experiment touches.
package workloads
