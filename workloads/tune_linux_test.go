//go:build linux

package workloads

import (
	"context"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/tune"
	"github.com/headspace-bench/headspace/internal/summary"
)

// BenchmarkTuneGoals measures headspace tune against issue 56's goals
// on this machine, on TuneScript with num_workers=0 (a misconfigured
// loader): the exhaustive grid over the settings the search can reach
// (the worker ladder up to tune.MaxWorkers, prefetch 2 and 4,
// persistent workers or not; pinned memory and the start method do not
// vary on a CPU-only Linux machine), Rounds runs of each alternated
// round by round, against one tune within its budget. It reports
// best-ratio (the grid's median of the setting the tune recommends over
// the grid's best median: the goal is 0.9 or more), search-runs-ratio
// (the tune's profile and search runs over the grid's: 1/3 or less),
// runs-ratio (the same with the final check's runs, which the grid has
// no counterpart of) and budget-use (the tune's wall time over its
// budget: 1.1 or less). A
// benchmark, not a test: the figures are this machine's, not pass or
// fail.
func BenchmarkTuneGoals(b *testing.B) {
	if out, err := exec.Command(PeerPython, "-c", "import torch").CombinedOutput(); err != nil {
		b.Fatalf("%s cannot import torch (make test-deps installs python3-torch): %v\n%s", PeerPython, err, out)
	}
	t := DefaultTune()
	t.Argv = []string{PeerPython, fromRoot(TuneScript), "--workers", "0"}
	t.Budget = 5 * time.Minute
	cmd, err := ownloop.ParseCommand(t.Argv)
	if err != nil {
		b.Fatal(err)
	}
	grid := tuneGrid(t.maxWorkers(runtime.NumCPU()))
	for range b.N {
		ctx := context.Background()
		start := time.Now()
		res, err := t.Measure(ctx, Env{})
		used := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		a := res.Answer()
		pick := a.Own
		if a.Recommend {
			pick = a.Best
		}
		rates := map[tune.Setting][]float64{}
		for r := range t.Rounds {
			k := r % len(grid)
			for _, s := range append(grid[k:], grid[:k]...) {
				ls := s.Loader()
				tm, err := ownloop.RunAt(ctx, cmd, t.Loader, &ls, t.Steps, t.FirstBatchTimeout, io.Discard)
				if err != nil {
					continue // a setting this machine cannot run: not the best
				}
				rates[s] = append(rates[s], tm.StepsPerSec())
			}
		}
		best := 0.0
		for _, xs := range rates {
			best = max(best, summary.Median(xs))
		}
		picked := rates[pick.Normal()]
		if len(picked) == 0 {
			b.Fatalf("the tune's setting %s is not on the grid", pick.Args())
		}
		b.ReportMetric(summary.Median(picked)/best, "best-ratio")
		search := 1 // the profile
		for _, r := range res.Runs {
			if r.Stage == tune.Search {
				search++
			}
		}
		b.ReportMetric(float64(search)/float64(len(grid)*t.Rounds), "search-runs-ratio")
		b.ReportMetric(float64(len(res.Runs)+1)/float64(len(grid)*t.Rounds), "runs-ratio")
		b.ReportMetric(used.Seconds()/t.Budget.Seconds(), "budget-use")
		b.ReportMetric(best, "grid-best-steps/s")
		b.Logf("tune: %s (%d runs, %v of %v); grid: %d settings × %d rounds, best %.2f steps/s; cores %d",
			pick.Args(), len(res.Runs)+1, used.Round(time.Second), t.Budget, len(grid), t.Rounds, best, runtime.NumCPU())
	}
}

// tuneGrid is every setting the search can reach on a CPU-only Linux
// machine, up to max workers.
func tuneGrid(max int) []tune.Setting {
	grid := []tune.Setting{{}}
	for _, w := range tune.WorkerLadder(max, 0) {
		if w == 0 {
			continue
		}
		for _, pf := range []int{2, 4} {
			for _, p := range []bool{false, true} {
				grid = append(grid, tune.Setting{Workers: w, Prefetch: pf, Persistent: p})
			}
		}
	}
	return slices.Clip(grid)
}
