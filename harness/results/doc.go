// Package results writes, reads and compares headspace's benchmark
// results, which are files in the Go benchmark format
// (https://golang.org/design/14313-benchmark-format) so that benchstat
// reads them as well. Reading and writing go through
// golang.org/x/perf/benchfmt; the regression gate decides with
// golang.org/x/perf/benchmath, as benchstat does.
//
// # File layout
//
// A file written by this package looks like this:
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
// known from the Units table, plus any unit metadata an existing file
// already carried; benchstat and the gate read which way is better from
// them. Then the configuration block: "key: value" lines describing the
// machine and the run (Environment gives goos, goarch, cpu, commit and
// device; callers append their own keys), ending in a blank line. Then
// one line per result: the name with its "Benchmark" prefix and
// "/key=value" sub-benchmark parts, the iteration count, and value-unit
// pairs. Values are written by benchfmt.Writer with %v, so large ones
// appear as 5.81e+08; benchfmt and benchstat read both forms. Units are
// written as given (ns/op stays ns/op) although in memory they are
// tidied as benchfmt.Reader does (sec/op).
//
// If a resumed file's commit changes, benchfmt.Writer starts a new
// configuration block ("commit: <new>") before the first result of the
// new commit, so every result keeps the commit it was measured at.
//
// # Atomic writes and resume
//
// A sweep records results through a File. Open reads an existing file at
// the path, so results already there are kept and File.Done(name) tells
// the sweep how many it already has of each benchmark; it skips those.
// Open refuses a file that does not read cleanly, and one whose results
// were recorded under a configuration that differs from the new one in
// any key but commit: results from different machines or settings must
// not be mixed in one file, where benchstat would pool them.
//
// File.Add appends results in memory and rewrites the whole file before
// it returns: into a temporary file in the same directory (named
// ".<name>.tmp-*"), flushed with fsync, then renamed over the file, and
// the directory synced. A rename within a directory is atomic, so a
// sweep killed at any instant leaves the last complete file: no torn
// line, and no result lost once Add has returned. If the write fails,
// the temporary file is removed and both the file on disk and the File
// stay as they were. A temporary file can be left only by a process
// killed mid-write; it is harmless and may be deleted. Rewriting the
// whole file each time costs O(n) per result, which is nothing next to a
// benchmark run. WriteFile writes a complete file the same way in one go.
//
// # The regression gate
//
// Compare (or CompareFiles) groups the old and the new results by full
// benchmark name — sub-benchmark keys and the GOMAXPROCS suffix
// included — and by unit, tidied so that ns/op and sec/op are one
// unit. For each group it builds a benchmath.Sample per side and, like
// benchstat with its defaults, summarizes each by its median with a 95%
// confidence interval and tests old against new with the Mann–Whitney U
// test (benchmath.AssumeNothing; no assumption about the distribution)
// at alpha 0.05. The delta is the relative change of the medians.
//
// Each (benchmark, unit) gets one verdict:
//
//   - only in old / only in new: no values on the other side;
//   - too few samples: the sample sizes n1, n2 cannot give p < alpha
//     whatever the values, because the smallest possible p-value,
//     2/C(n1+n2, n1) for two samples entirely apart, is not below alpha.
//     With equal sides that means fewer than 4 per side at alpha 0.05
//     (3+3 give at best p = 0.1; 4+4 give 2/70 = 0.029), the same
//     number benchmath warns about ("need >= 4 samples to detect a
//     difference at alpha level 0.05"); MinSamples computes it for other
//     alphas. benchmath is looser in two ways: it warns only when both
//     sides are below that number, so 3+4 samples (best p 2/35 = 0.057)
//     pass its check although they can never be significant; and it
//     counts p = alpha as enough (3 per side at alpha 0.1), where the gate
//     wants p < alpha. The medians' 95% confidence interval needs 6
//     samples before it is finite; with fewer the table shows "± ∞", as
//     benchstat does, but the test itself still works;
//   - no significant change: p >= alpha, or significant but the medians
//     differ by no more than the threshold (5% by default);
//   - regression / improvement: p < alpha and the median moved by more
//     than the threshold in the worse / better direction;
//   - unknown direction: p < alpha and beyond the threshold, but nothing
//     says which way the unit is better.
//
// A unit's direction comes from a "Unit <unit> better=higher|lower" line
// in either file, else from the Units table (steps/s, samples/s, au-%,
// GB/s higher; ttfb-ns, peak-rss-B, step-ns, cpu-s lower), else from
// benchfmt's defaults (ns/op, sec/op, B/op, allocs/op lower; MB/s, B/s
// higher); see DirectionOf.
//
// Report.Regressions lists the regressions, and Report.WriteText prints
// the table followed by a summary that names every regression, every
// improvement, every benchmark found on one side only, every metric with
// too few samples and every change of unknown direction, and ends in a
// PASS or FAIL line; a warning above the table lists configuration keys
// (other than commit) that differ between the sides, such as cpu or
// device. A command gating on the report exits 1 when there are
// regressions and 2 when CompareFiles returns an error.
//
// benchstat shows the same comparison for two files whose commits differ
// when told to ignore the commit key, which it would otherwise split
// tables by: go tool benchstat -ignore commit OLD NEW.
package results
