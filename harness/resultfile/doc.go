// Package resultfile reads headspace's benchmark results and defines
// their format: files in the Go benchmark format
// (https://golang.org/design/14313-benchmark-format) so that benchstat
// reads them as well, through golang.org/x/perf/benchfmt. They are
// written by package harness/driver alone: its writer
// (harness/driver/internal/resultwrite) is internal to it, so no other
// package can write one.
//
// # File layout
//
// A result file looks like this:
//
//	Unit steps/s better=higher
//	Unit samples/s better=higher
//	Unit au-% better=higher
//
//	goos: linux
//	goarch: amd64
//	cpu: AMD EPYC 7R13 Processor
//	commit: 1a2b3c4
//	device: emulated
//	batch: 256
//
//	BenchmarkLadder/level=raw/workers=4/transforms=naive-16 10 5.81e+08 ns/op 1.72 steps/s 440.3 samples/s 49.8 au-%
//	BenchmarkLadder/level=raw/workers=4/transforms=naive-16 10 5.79e+08 ns/op 1.73 steps/s 442.1 samples/s 50.1 au-%
//
// First come "Unit" lines (benchfmt.UnitMetadata, written by
// benchfmt.Writer), one for each unit in the file whose direction is
// known (DirectionOf), plus any unit metadata an existing file
// already carried; benchstat and the gate read which way is better from
// them. Then the configuration block: "key: value" lines describing the
// machine and the run (machine.Environment gives goos, goarch, cpu, cores,
// go, commit and device; callers append their own keys), ending in a blank line. Then
// one line per result: the name with its "Benchmark" prefix and
// "/key=value" sub-benchmark parts, the iteration count, and value-unit
// pairs. Values are written by benchfmt.Writer with %v, so large ones
// appear as 5.81e+08; benchfmt and benchstat read both forms. Units are
// written as given (ns/op stays ns/op) although in memory they are
// tidied as benchfmt.Reader does (sec/op).
//
// A file is resumed only by the build that made it: the writer refuses one
// whose commit differs from the new configuration's (machine.Environment
// names the binary's own revision, with a hash of the diff for a dirty
// tree), so results of two code states never share one commit label.
// Files written before this rule may hold several commit blocks; they
// are read as before, and resumed by none.
//
// # Atomic writes and resume
//
// A sweep records results through the driver's streamed file (the
// writer's File). Opening it reads an existing file at
// the path, so results already there are kept and File.Done(name) tells
// the sweep how many it already has of each benchmark; it skips those.
// It refuses a file that does not read cleanly, and one whose results
// were recorded under a configuration that differs from the new one in
// any key, commit included: results from different machines, settings or
// builds must not be mixed in one file, where benchstat would pool them.
//
// Adding a result appends it in memory and rewrites the whole file before
// it returns: into a temporary file in the same directory (named
// ".<name>.tmp-*"), flushed with fsync, then renamed over the file, and
// the directory synced. A rename within a directory is atomic, so a
// sweep killed at any instant leaves the last complete file: no torn
// line, and no result lost once Add has returned. If the write fails,
// the temporary file is removed and both the file on disk and the File
// stay as they were. A temporary file can be left only by a process
// killed mid-write; it is harmless and may be deleted. Rewriting the
// whole file each time costs O(n) per result, which is nothing next to a
// benchmark run. A file written whole is written the same way in one go.
//
// # Who writes
//
// Only harness/driver, through its internal package resultwrite (the
// configuration block's rules, the records checked, tidied, encoded and
// written atomically, the streamed File, the whole file and the rules
// for replacing one, the write lock): the compiler keeps every other
// package to this one's readers. This package's source: config.go (the
// configuration block), direction.go (which way a unit is better),
// encode.go (names and values as written), read.go, beside.go.
//
// # The regression gate
//
// Package harness/gate compares two such files as benchstat does and
// decides whether the new one regressed; it reads them with Scan.
package resultfile
