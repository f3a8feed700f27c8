package figures

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/harness/spdlcache"
	"github.com/headspace-bench/headspace/workloads"
)

// spdlCacheRun is the committed run of peer --spdl-cache (docs/peers.md,
// "SPDL's own headspace").
const spdlCacheRun = "results/peers-spdl-cache.txt"

var (
	spdlCacheOnce sync.Once
	spdlCacheRep  spdlcache.Report
	spdlCacheErr  error
)

// spdlCacheReport is the committed run's report, read once.
func spdlCacheReport(t *testing.T) spdlcache.Report {
	t.Helper()
	spdlCacheOnce.Do(func() {
		spdlCacheRep, spdlCacheErr = workloads.ReadSPDLCacheReport(filepath.Join(root, spdlCacheRun))
	})
	if spdlCacheErr != nil {
		t.Fatalf("%s: %v", spdlCacheRun, spdlCacheErr)
	}
	return spdlCacheRep
}

// spdlSide is a field of a side's row (0 ours, 1 SPDL's): "before" and
// "after" the median step times in ms, "share", "lo", "hi" its headspace
// and interval in %, "runs".
func spdlSide(i int, field string) figure {
	return func(t *testing.T) float64 {
		s := spdlCacheReport(t).Sides[i]
		switch field {
		case "before":
			return s.Before.Seconds() * 1e3
		case "after":
			return s.After.Seconds() * 1e3
		case "share":
			return 100 * s.Share.Median
		case "lo":
			return 100 * s.Share.Lo
		case "hi":
			return 100 * s.Share.Hi
		case "runs":
			return float64(s.Runs)
		}
		t.Fatalf("spdlSide: no field %q", field)
		return 0
	}
}

// spdlDiff is the paired difference ours − SPDL's in points: "diff",
// "lo", "hi", or "pairs".
func spdlDiff(field string) figure {
	return func(t *testing.T) float64 {
		r := spdlCacheReport(t)
		switch field {
		case "diff":
			return 100 * r.Diff
		case "lo":
			return 100 * r.DiffLo
		case "hi":
			return 100 * r.DiffHi
		case "pairs":
			return float64(r.Pairs)
		}
		t.Fatalf("spdlDiff: no field %q", field)
		return 0
	}
}

// spdlSame is a field of the sides under one estimator (0 the means,
// 1 the median of the round means): "ours", "spdl" in %, "diff", "lo",
// "hi" in points.
func spdlSame(i int, field string) figure {
	return func(t *testing.T) float64 {
		s := spdlCacheReport(t).Same[i]
		switch field {
		case "ours":
			return 100 * s.Ours
		case "spdl":
			return 100 * s.SPDL
		case "diff":
			return 100 * s.Diff
		case "lo":
			return 100 * s.DiffLo
		case "hi":
			return 100 * s.DiffHi
		}
		t.Fatalf("spdlSame: no field %q", field)
		return 0
	}
}

// spdlCacheCases are docs/peers.md's figures of the committed run.
func spdlCacheCases() []figureCase {
	row := func(i int, label string) figureCase {
		f := func(field string) figure { return spdlSide(i, field) }
		return figureCase{"docs/peers.md", fmt.Sprintf("| %s | %%s ms | %%s ms | %%s%%%% | %%s%%%% – %%s%%%% | %%s |", label), []shown{
			p1(f("before")), p1(f("after")), p1(f("share")), p1(f("lo")), p1(f("hi")), p0(f("runs"))}}
	}
	return []figureCase{
		row(0, "headspace analyze (`ours`)"),
		row(1, "SPDL's CacheDataLoader (`spdl-cache`)"),
		{"docs/peers.md", "ours − SPDL's, paired by round: %s points (median of %s rounds; 95%% bootstrap interval %s to %s)", []shown{
			{"%+.1f", spdlDiff("diff")}, p0(spdlDiff("pairs")), {"%+.1f", spdlDiff("lo")}, {"%+.1f", spdlDiff("hi")}}},
		same(0, "the means of the steps (SPDL's side's)"),
		same(1, "the median of the round means (ours')"),
	}
}

// same is a line of the sides under one estimator.
func same(i int, estimator string) figureCase {
	f := func(field string) figure { return spdlSame(i, field) }
	return figureCase{"docs/peers.md", "one estimator for both, " + estimator + ": ours %s%%, SPDL's %s%%; ours − SPDL's %s points (95%% bootstrap interval %s to %s)", []shown{
		p1(f("ours")), p1(f("spdl")), {"%+.1f", f("diff")}, {"%+.1f", f("lo")}, {"%+.1f", f("hi")}}}
}
