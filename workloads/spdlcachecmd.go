package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/spdlcache"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

const spdlCacheUsage = `

With --spdl-cache it sets SPDL's own headspace analysis beside headspace
analyze's, on one training script (--script, by default
examples/own-loop/train_cachedataloader.py: an ImageFolder of natural
JPEGs decoded by PIL, RandomResizedCrop(--crop), a flip, ToTensor,
Normalize, a DataLoader with --workers worker processes and batches of
--batch, a small CNN trained with SGD on one of torch's threads), run by
the peers env's python (--python). Each round runs the script once under
headspace analyze, unchanged, and once with its --spdl-cache flag, which
wraps its DataLoader in spdl.dataloader.CacheDataLoader and logs every
step's time; both switch to 10 cached batches after --batches steps from
the loader and take --steps-after steps on them; the order alternates
round by round. It prints each side's step times and headspace (the
median over --count rounds, with its 95% interval) and whether the two
agree; --out records every run (BenchmarkRealPeerHeadspace/peer=ours and
peer=spdl-cache), --report the Markdown. Defaults with --spdl-cache:
--workers 2, --batch 16, --batches 40, --steps-after 30, --raw-size 256,
--crop 160, --count 8.`

// spdlCacheFlags are the flags only --spdl-cache reads.
type spdlCacheFlags struct {
	on         bool
	stepsAfter int
}

func (f *spdlCacheFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "spdl-cache", false, "set SPDL's CacheDataLoader headspace beside headspace analyze's on one training script (--script)")
	fs.IntVar(&f.stepsAfter, "steps-after", 30, "with --spdl-cache: `steps` on cached batches after the switch")
}

// check refuses --steps-after without --spdl-cache.
func (f *spdlCacheFlags) check(fs *flag.FlagSet) error {
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "steps-after" })
	if given && !f.on {
		return cli.Usagef("--steps-after only applies to --spdl-cache")
	}
	return nil
}

// spdlCacheNumCaches is the batches both sides cache: SPDL's example's.
const spdlCacheNumCaches = 10

// parseSPDLCache checks peer --spdl-cache's flags: fs's, their defaults
// with --spdl-cache where not given.
func parseSPDLCache(fs *flag.FlagSet, sf *spdlCacheFlags) (c spdlcache.Config, width, height, quality int, seed uint64, err error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"data", "ladder", "remote", "impls", "decoder"} {
		if set[name] {
			return c, 0, 0, 0, 0, cli.Usagef("--%s does not apply to --spdl-cache", name)
		}
	}
	get := func(name, def string) string {
		if set[name] {
			return fs.Lookup(name).Value.String()
		}
		return def
	}
	num := func(name, def string) int { n, _ := strconv.Atoi(get(name, def)); return n }
	ws, err := cli.ParseInts("--workers", get("workers", "2"))
	if err != nil {
		return c, 0, 0, 0, 0, err
	}
	if len(ws) != 1 {
		return c, 0, 0, 0, 0, cli.Usagef("--workers %s: --spdl-cache takes one worker count", get("workers", "2"))
	}
	if width, height, err = cli.ParseSize("--raw-size", get("raw-size", "256")); err != nil {
		return c, 0, 0, 0, 0, err
	}
	seed, _ = strconv.ParseUint(get("seed", "1"), 10, 64)
	c = spdlcache.Config{Script: get("script", spdlcache.DefaultScript), Workers: ws[0], Batch: num("batch", "16"), Crop: num("crop", "160"),
		ReturnCachesAfter: num("batches", "40"), StepsAfter: sf.stepsAfter, Count: num("count", "8"),
		FirstBatchTimeout: 2 * time.Minute, StallTimeout: 5 * time.Minute, Timeout: 10 * time.Minute}
	c.NumCaches = min(spdlCacheNumCaches, c.ReturnCachesAfter)
	quality = num("jpeg-quality", "90")
	if err := cli.FirstErr(cli.InRange("--count", c.Count, 1, cli.MaxCount), cli.InRange("--batch", c.Batch, 1, 4096)); err != nil {
		return c, 0, 0, 0, 0, err
	}
	if err := c.Validate(); err != nil {
		return c, 0, 0, 0, 0, cli.Usagef("--spdl-cache: %v", err)
	}
	if c.Crop > width || c.Crop > height {
		return c, 0, 0, 0, 0, cli.Usagef("--crop %d must fit the %dx%d images", c.Crop, width, height)
	}
	if _, err := os.Stat(c.Script); err != nil {
		return c, 0, 0, 0, 0, cli.Usagef("--script: %v (run from the repository's root, or name the script)", err)
	}
	if c.Python = get("python", realpeer.DefaultPython()); c.Python == "" {
		return c, 0, 0, 0, 0, cli.Usagef("--spdl-cache: no peers environment found: %s", realpeer.InstallHint)
	}
	return c, width, height, quality, seed, nil
}

// runSPDLCache is peer --spdl-cache.
func runSPDLCache(ctx context.Context, fs *flag.FlagSet, sf *spdlCacheFlags, args []string, stdout, stderr io.Writer) error {
	c, width, height, quality, seed, err := parseSPDLCache(fs, sf)
	if err != nil {
		return err
	}
	out, rep := fs.Lookup("out").Value.String(), fs.Lookup("report").Value.String()
	if err := mkdirs(out, rep); err != nil {
		return err
	}
	if err := cli.CheckOutputs(cli.Output{Path: rep, Kind: peer.ReportKind}); err != nil {
		return err
	}
	versions, err := checkSPDLCache(ctx, c)
	if err != nil {
		return err
	}
	busy, err := waitQuiet(ctx, stderr)
	if err != nil {
		return err
	}
	var runs []spdlcache.Run
	var settings []resultfile.Config
	// The images go after --out is written: removing thousands of files
	// takes seconds on a busy disk, which an interrupted run's file does
	// not wait for.
	var folder *realpeer.Folder
	defer func() {
		if folder != nil {
			folder.Close()
		}
	}()
	fileConfig := func() []resultfile.Config {
		return append(append([]resultfile.Config(nil), settings...), spdlcache.MissingConfig(runs)...)
	}
	_, err = driver.Run(ctx, driver.Job{Settings: fileConfig, Measure: func(ctx context.Context, _ *driver.Hooks) ([]*benchfmt.Result, error) {
		n := c.Images()
		fmt.Fprintf(stderr, "peer --spdl-cache: writing %d natural %dx%d JPEGs (quality %d) as an ImageFolder…\n", n, width, height, quality)
		src := datasets.Synthetic{Width: width, Height: height, Classes: 10, N: n, Seed: seed, Content: datasets.ContentNatural}
		var err error
		if folder, err = realpeer.WriteFolder(ctx, src, quality); err != nil {
			return nil, err
		}
		c.Data = folder.Dir
		settings = append(append(machine.Environment("none"), busy...), spdlCacheLines(c, versions, folder, width, height, quality, seed, peerCommand(args))...)
		runs, err = spdlcache.Sweep(ctx, c, io.Discard, func(r spdlcache.Run) { logSPDLCache(stderr, r) })
		recs := spdlcache.Records(runs)
		if err == nil && len(recs) == 0 {
			err = fmt.Errorf("peer --spdl-cache: every run failed: %s", runs[0].Missing)
		}
		return recs, err
	}}, driver.Output{Path: out, Benchmarks: []string{spdlcache.Benchmark}})
	if err != nil {
		return err
	}
	r := spdlcache.NewReport(fileConfig(), runs)
	if out != "" {
		fmt.Fprintf(stdout, "results: %s\n", out)
	}
	return writeSPDLCacheReport(stdout, r, rep)
}

// spdlCacheLines are the result file's lines of peer --spdl-cache's run
// of c, the script's versions, on the images of folder, after the
// machine's: what it runs, on what, and how each side measures.
func spdlCacheLines(c spdlcache.Config, versions [][2]string, folder *realpeer.Folder, width, height, quality int, seed uint64, command string) []resultfile.Config {
	n := c.Images()
	shown := c
	shown.Data = "DATA"
	settings := []resultfile.Config{
		{Key: "distro", Value: machine.Describe().Distro},
		{Key: "command", Value: command},
		{Key: "script-command", Value: strings.Join(shown.OursCommand()[1:], " ")},
		{Key: "peers-python", Value: c.Python}}
	for _, kv := range versions {
		settings = append(settings, resultfile.Config{Key: "script-" + kv[0], Value: kv[1]})
	}
	return append(settings,
		resultfile.Config{Key: "workers", Value: strconv.Itoa(c.Workers)},
		resultfile.Config{Key: "batch", Value: strconv.Itoa(c.Batch)},
		resultfile.Config{Key: "crop", Value: strconv.Itoa(c.Crop)},
		resultfile.Config{Key: "raw-size", Value: fmt.Sprintf("%dx%d", width, height)},
		resultfile.Config{Key: "seed", Value: strconv.FormatUint(seed, 10)},
		resultfile.Config{Key: "images", Value: strconv.Itoa(n)},
		resultfile.Config{Key: "dataset", Value: fmt.Sprintf("%d natural (dead leaves) %dx%d JPEGs of quality %d in an ImageFolder of 10 classes, %.0f KiB an image, read from the page cache", n, width, height, quality, float64(folder.Bytes)/float64(n)/1024)},
		resultfile.Config{Key: "rounds", Value: strconv.Itoa(c.Count)},
		resultfile.Config{Key: "num-caches", Value: strconv.Itoa(c.NumCaches)},
		resultfile.Config{Key: "return-caches-after", Value: strconv.Itoa(c.ReturnCachesAfter)},
		resultfile.Config{Key: "steps-after", Value: strconv.Itoa(c.StepsAfter)},
		resultfile.Config{Key: "ours", Value: "headspace analyze -- SCRIPT-COMMAND --epochs 1: the hook's step times, the median of the means over rounds of the workers, steps 1..return-caches-after-1 against return-caches-after+1..the last"},
		resultfile.Config{Key: "spdl-cache", Value: "SCRIPT-COMMAND --spdl-cache: spdl.dataloader.CacheDataLoader(num_caches, return_caches_after, stop_after=return_caches_after+steps_after), the script's own step times, their mean over the same steps"},
	)
}

// logSPDLCache is r's line on stderr.
func logSPDLCache(stderr io.Writer, r spdlcache.Run) {
	if r.Missing != "" {
		fmt.Fprintf(stderr, "%s round %d: missing: %s\n", r.BenchName(), r.Round, r.Missing)
		return
	}
	fmt.Fprintf(stderr, "%s round %d: step %.1f ms, cached %.1f ms, headspace %.1f%%\n", r.BenchName(), r.Round,
		float64(r.Before)/1e6, float64(r.After)/1e6, 100*r.Share())
}

// checkSPDLCache is the check before anything runs: the script's
// --check in the peers env, which imports spdl and prints the versions
// returned. A script that cannot run is a usage error saying how to
// install the env.
func checkSPDLCache(ctx context.Context, c spdlcache.Config) ([][2]string, error) {
	versions, err := spdlcache.Check(ctx, c)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, cli.Usagef("%v: %s", err, realpeer.InstallHint)
	}
	if !hasKey(versions, "spdl") {
		return nil, cli.Usagef("%s %s --check names no spdl version: %s", c.Python, c.Script, realpeer.InstallHint)
	}
	return versions, nil
}

func hasKey(kv [][2]string, key string) bool {
	for _, p := range kv {
		if p[0] == key {
			return true
		}
	}
	return false
}

// writeSPDLCacheReport prints r and writes its Markdown to report, if set.
func writeSPDLCacheReport(stdout io.Writer, r spdlcache.Report, report string) error {
	if err := r.WriteText(stdout); err != nil {
		return err
	}
	if report == "" {
		return nil
	}
	if err := atomicfile.WriteKind(report, peer.ReportKind, r.WriteMarkdown); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", report)
	return nil
}

// rebuildSPDLCache is --spdl-cache's --from: its records decoded through
// SPDLCacheCodec, its report rebuilt (spdlcache.NewReport).
func rebuildSPDLCache(from string, recs []*benchfmt.Result, report, _ string, stdout io.Writer) error {
	o, err := SPDLCacheCodec.Decode(recs)
	if err != nil {
		return cli.Usagef("--from: %v", err)
	}
	return writeSPDLCacheReport(stdout, spdlcache.NewReport(o.Config, o.Runs), report)
}
