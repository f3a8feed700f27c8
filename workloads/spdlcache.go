package workloads

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/spdlcache"
)

// SPDLCache is headspace peer --spdl-cache: SPDL's own headspace
// analysis (its CacheDataLoader) beside headspace analyze's on one
// training script, run by the peers env's python, on an ImageFolder of
// natural JPEGs it writes, the two sides alternating round by round
// (harness/spdlcache). Its records are BenchmarkRealPeerHeadspace/…,
// its name. It needs the peers env (make peers-env): the Registry marks
// it so.
type SPDLCache struct {
	// Config is the script, its python and its loader's settings; Data
	// is the images Measure writes.
	Config        spdlcache.Config
	Width, Height int
	Quality       int
	Seed          uint64
	// run, if set, is a command's run: where its lines go, and what its
	// file says beside its records (nil: stderr discarded).
	run *spdlCacheRun
	// report is the Markdown file Report writes, --report ("" for none).
	report string
	// workers is --workers, one count for Config's.
	workers []int
}

// spdlCacheRun is what a command keeps of an SPDLCache run beside its
// records: its log, the images (removed once --out is written: removing
// thousands of files takes seconds on a busy disk, which an interrupted
// run's file does not wait for), and the runs, for the lines of the
// missing ones.
type spdlCacheRun struct {
	log    io.Writer
	folder *realpeer.Folder
	runs   []spdlcache.Run
}

// spdlCacheNumCaches is the batches both sides cache: SPDL's example's.
const spdlCacheNumCaches = 10

// DefaultSPDLCache is peer --spdl-cache's defaults: the example script
// (examples/own-loop/train_cachedataloader.py), 2 workers, batches of
// 16, 40 steps from the loader and 30 cached, 256x256 JPEGs of quality
// 90 cropped to 160, 8 rounds.
func DefaultSPDLCache() SPDLCache {
	return spdlCacheSized(2, 16, 160, 40, 30, 8, 256)
}

// QuickSPDLCache runs every code path in seconds: 1 worker, batches of
// 4, 8 steps each side of the switch, 64x64 JPEGs cropped to 32, one
// round.
func QuickSPDLCache() SPDLCache {
	return spdlCacheSized(1, 4, 32, 8, 8, 1, 64)
}

func spdlCacheSized(workers, batch, crop, before, after, count, side int) SPDLCache {
	c := spdlcache.Config{Script: spdlcache.DefaultScript, Python: realpeer.DefaultPython(), Workers: workers, Batch: batch, Crop: crop,
		ReturnCachesAfter: before, StepsAfter: after, Count: count,
		FirstBatchTimeout: 2 * time.Minute, StallTimeout: 5 * time.Minute, Timeout: 10 * time.Minute}
	c.NumCaches = min(spdlCacheNumCaches, c.ReturnCachesAfter)
	return SPDLCache{Config: c, Width: side, Height: side, Quality: 90, Seed: 1}
}

// Name is RealPeerHeadspace, its records' benchmark.
func (SPDLCache) Name() string { return spdlcache.Benchmark }

// Document is "": a comparison of headspace's own (docs/peers.md).
func (SPDLCache) Document() string { return "" }

// Codec is SPDLCacheCodec.
func (SPDLCache) Codec() Codec[SPDLCacheOutcome] { return SPDLCacheCodec }

// Settings are the comparison's specification, as its result file's
// lines name them (lines, without the images' line).
func (e SPDLCache) Settings() []resultfile.Config { return e.lines("") }

// lines are e's specification lines, with the images' line dataset
// among them where it is not "".
func (e SPDLCache) lines(dataset string) []resultfile.Config {
	c := e.Config
	lines := []resultfile.Config{
		{Key: "workers", Value: strconv.Itoa(c.Workers)},
		{Key: "batch", Value: strconv.Itoa(c.Batch)},
		{Key: "crop", Value: strconv.Itoa(c.Crop)},
		{Key: "raw-size", Value: fmt.Sprintf("%dx%d", e.Width, e.Height)},
		{Key: "seed", Value: strconv.FormatUint(e.Seed, 10)},
		{Key: "images", Value: strconv.Itoa(c.Images())},
	}
	if dataset != "" {
		lines = append(lines, resultfile.Config{Key: "dataset", Value: dataset})
	}
	return append(lines,
		resultfile.Config{Key: "rounds", Value: strconv.Itoa(c.Count)},
		resultfile.Config{Key: "num-caches", Value: strconv.Itoa(c.NumCaches)},
		resultfile.Config{Key: "return-caches-after", Value: strconv.Itoa(c.ReturnCachesAfter)},
		resultfile.Config{Key: "steps-after", Value: strconv.Itoa(c.StepsAfter)},
		resultfile.Config{Key: "ours", Value: "headspace analyze -- SCRIPT-COMMAND --epochs 1: the hook's step times, the median of the means over rounds of the workers, steps 1..return-caches-after-1 against return-caches-after+1..the last"},
		resultfile.Config{Key: "spdl-cache", Value: "SCRIPT-COMMAND --spdl-cache: spdl.dataloader.CacheDataLoader(num_caches, return_caches_after, stop_after=return_caches_after+steps_after), the script's own step times, their mean over the same steps"},
	)
}

// fileLines are e's lines on the images of folder.
func (e SPDLCache) fileLines(folder *realpeer.Folder) []resultfile.Config {
	n := e.Config.Images()
	return e.lines(fmt.Sprintf("%d natural (dead leaves) %dx%d JPEGs of quality %d in an ImageFolder of 10 classes, %.0f KiB an image, read from the page cache", n, e.Width, e.Height, e.Quality, float64(folder.Bytes)/float64(n)/1024))
}

// Run is RunTyped of Measure.
func (e SPDLCache) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped(ctx, e, env)
}

// Measure writes the images, then runs the script under headspace
// analyze and with its --spdl-cache flag, round by round
// (spdlcache.Sweep). A run that fails is kept as missing, with the
// reason; that every run failed is an error.
func (e SPDLCache) Measure(ctx context.Context, env Env) (SPDLCacheOutcome, error) {
	run := e.run
	if run == nil {
		run = &spdlCacheRun{log: io.Discard}
		defer func() {
			if run.folder != nil {
				run.folder.Close()
			}
		}()
	}
	c := e.Config
	n := c.Images()
	fmt.Fprintf(run.log, "peer --spdl-cache: writing %d natural %dx%d JPEGs (quality %d) as an ImageFolder…\n", n, e.Width, e.Height, e.Quality)
	src := datasets.Synthetic{Width: e.Width, Height: e.Height, Classes: 10, N: n, Seed: e.Seed, Content: datasets.ContentNatural}
	var err error
	if run.folder, err = realpeer.WriteFolder(ctx, src, e.Quality); err != nil {
		return SPDLCacheOutcome{}, err
	}
	c.Data = run.folder.Dir
	run.runs, err = spdlcache.Sweep(ctx, c, io.Discard, func(r spdlcache.Run) { logSPDLCache(run.log, r) })
	if err == nil && len(spdlcache.Records(run.runs)) == 0 {
		err = fmt.Errorf("peer --spdl-cache: every run failed: %s", run.runs[0].Missing)
	}
	return SPDLCacheOutcome{Runs: run.runs}, err
}

// Report prints o's table and writes its Markdown where e's report
// names it: a run's, o decoded from its records as its file holds them,
// and --from's of a file alike.
func (e SPDLCache) Report(o SPDLCacheOutcome, w io.Writer) error {
	return writeSPDLCacheReport(w, spdlcache.NewReport(o.Config, o.Runs), e.report)
}

// logSPDLCache is r's line on log.
func logSPDLCache(log io.Writer, r spdlcache.Run) {
	if r.Missing != "" {
		fmt.Fprintf(log, "%s round %d: missing: %s\n", r.BenchName(), r.Round, r.Missing)
		return
	}
	fmt.Fprintf(log, "%s round %d: step %.1f ms, cached %.1f ms, headspace %.1f%%\n", r.BenchName(), r.Round,
		float64(r.Before)/1e6, float64(r.After)/1e6, 100*r.Share())
}
