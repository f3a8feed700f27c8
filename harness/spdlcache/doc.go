// Package spdlcache sets SPDL's own headspace analysis beside headspace
// analyze's, on one training script: the script run with its DataLoader
// wrapped in SPDL's spdl.dataloader.CacheDataLoader (a flag of the script,
// the way SPDL's "Headspace Analysis" chapter shows), timing its own steps
// before and after the switch to cached batches, and the same script run
// unchanged under headspace analyze (package ownloop's hook). Both switch
// after the same steps, replay the same number of cached batches and are
// alternated round by round in one run, the order rotated.
//
// # The two estimates
//
// A side's estimate in one run is the headspace share, 1 − after ÷ before,
// where before is the step time while the loader feeds the loop and after
// the step time on cached batches, both over the same steps (the first of
// each phase left out: the workers' start, and the switch). SPDL's side
// takes the script's own step times and their means, as a user reading
// CacheDataLoader's step times would; headspace's takes the hook's step
// times and the median of the means over rounds of the loader's workers
// (analysis.RoundEstimate), with its interval. Over the rounds each side's
// estimate is the median of its runs' shares with its 95% interval by
// order statistics (summary.Of: infinite with fewer than 6 rounds); the
// two agree when those intervals overlap. Paired by round, ours − SPDL's
// has its median and a percentile-bootstrap interval (summary.Bootstrap).
//
// # Records
//
// Each run is a record BenchmarkRealPeerHeadspace/peer=<side>/workers=<n>
// (side ours or spdl-cache) with step-ns, cached-step-ns and headspace-%,
// and for ours the intervals' bounds; a run that failed is a
// missing-<side>-r<round> configuration line with its reason, and the
// rest go on. Package workloads' SPDLCacheCodec reads a file back (RunOf,
// Rounds) into the same Report, so a report rebuilt from the file is the
// run's.
package spdlcache
