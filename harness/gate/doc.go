// Package gate is headspace's regression gate: it compares two result
// files (package resultfile) as benchstat does and decides, for each
// benchmark and unit, whether the new side regressed.
//
// # Verdicts
//
// Compare (or CompareFiles, which streams the files) groups the old and the new results by full
// benchmark name — sub-benchmark keys and the GOMAXPROCS suffix
// included — and by unit, tidied so that ns/op and sec/op are one
// unit. For each group it builds a benchmath.Sample per side and, like
// benchstat with its defaults, summarizes each by its median with a 95%
// confidence interval and tests old against new with the Mann–Whitney U
// test (benchmath.AssumeNothing; no assumption about the distribution)
// at alpha 0.05. The delta is the relative change of the medians.
//
// # Many metrics, and noise between runs
//
// A results file holds hundreds of metrics. Tested one by one at alpha
// 0.05, two runs of the same code flag about one in forty of them (2000
// benchmarks × 8 samples with ±10% noise: about 50 "regressions"). The
// gate therefore adjusts every p-value by Benjamini–Hochberg (Row.Q) and
// tests the adjusted one against alpha, which bounds the expected share
// of false alarms among the changes it reports (the false discovery rate)
// at alpha. The price is power: with m metrics the smallest change worth
// reporting needs a p-value near alpha/m when it is alone, so isolated
// regressions want more samples (--count); a change that moves many
// metrics at once is found as before.
//
// The U test sees only the noise inside one run. Between runs (another
// boot, another runner, another neighbour) medians drift further. Given
// each metric's measured spread between runs (Options.Spread, from the
// history), a change counts only beyond SpreadZ times that spread.
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
//   - no significant change: q >= alpha, or significant but the medians
//     differ by no more than the threshold (5% by default) or the
//     between-run spread limit;
//   - regression / improvement: q < alpha and the median moved by more
//     than the threshold in the worse / better direction;
//   - unknown direction: q < alpha and beyond the threshold, but nothing
//     says which way the unit is better.
//   - disturbed: rerun: it would be a regression, but some of the
//     benchmark's runs, on either side, stayed disturbed (a "disturbed"
//     value: their run-queue delay stayed beyond the ladder's threshold
//     after its reruns; package disturb). A disturbed point is never
//     called a regression; a command exits ExitDisturbed (3) when there
//     is no regression but such a row;
//   - run condition: the unit describes how disturbed the run was
//     (run-delay-%, cpu-pressure-%, reruns, disturbed), not the code;
//     shown, never tested.
//
// A unit's direction comes from the project's units (steps/s, samples/s,
// au-%, GB/s higher; peak-rss-B, cpu-s and every time — ttfb-ns, step-ns,
// upload-ns/op, transform-ns/sample — lower), else from benchfmt's
// defaults (ns/op, sec/op, B/op, allocs/op lower; MB/s, B/s higher); see
// resultfile.KnownDirection. CompareFiles refuses a file whose "Unit <unit>
// better=" line contradicts them. Only units neither knows take the
// files' Unit lines.
//
// Files from different machines are not compared (Evidence), and a file
// with no cpu: or no cores: line names no machine: it counts as another.
// Nor is a benchmark judged on its side metrics alone: a result of a
// benchmark both sides hold that lacks a finite value of its headline
// metric (Headline: steps/s for the ladder) makes the evidence short.
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
// A side whose file has a machine-busy line (the ladder's wait for a
// quiet machine ended at its bound) is named in Report.Busy, printed
// first. With Options.Spread the table shows each metric's spread between
// runs (Row.Spread).
//
// # The paired gate
//
// The file comparison above judges two files made at different times.
// Session and ComparePaired judge two builds run on one machine in the
// same session, interleaved: in each round base and head run once, in a
// random order, and the round's ratio head/base (each side's median over
// its runs in the round) is the unit of replication, so a machine that is
// slower for minutes slows both sides of a round alike and cancels. For
// each benchmark and unit the verdict is taken on the median ratio over
// rounds with a percentile bootstrap interval (summary.Bootstrap:
// benchmath has no interval for a statistic of paired ratios; the
// medians are benchmath's, the percentiles montanaflynn/stats'): slower
// or faster when the whole interval is on one side of 1 and the median
// moved beyond PairedOptions.Threshold (3%), same when the interval lies
// within the threshold, not sure otherwise. Each benchmark has one verdict
// metric that can fail a session: its CPU time per op (cpu-ns/op) where
// base's CPU time is at least CPUBoundShare (half) of its least wall time
// (its run that waited least for a CPU: waiting lengthens wall time, not
// CPU time), its wall time per op otherwise; the verdict metrics' intervals share the
// 95% by Bonferroni. A round is left out of a benchmark's wall-time (and
// other) ratios when the sides' run-queue delays differ by more than
// PairedOptions.MaxDelay (5% of wall time), or, where a side records no
// delay, when a side's run stayed disturbed; CPU time keeps every round,
// as it does not count waiting. A left-out round is replaced by an extra
// round (at most Rounds/2); with fewer than MinRounds undisturbed
// rounds the verdict is "disturbed: rerun". A first alarm (a verdict
// metric slower) runs Confirm more rounds: the session fails only if they
// agree in direction and all rounds together find it slower (Session).
//
// benchstat shows the same comparison for two files whose commits differ
// when told to ignore the commit key, which it would otherwise split
// tables by: go tool benchstat -ignore commit OLD NEW.
package gate
