package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/spdlcache"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Flags are peer --spdl-cache's, bound to e's fields, the registry's
// Default size their defaults: --spdl-cache picks the mode, --batches is
// the steps before the switch.
func (e *SPDLCache) Flags(fs *flag.FlagSet) {
	c := &e.Config
	e.workers = []int{c.Workers}
	fs.Bool("spdl-cache", false, "set SPDL's CacheDataLoader headspace beside headspace analyze's on one training script (--script)")
	fs.StringVar(&c.Python, "python", c.Python, "the peers env's python `interpreter` (by default the one make peers-env made)")
	fs.StringVar(&c.Script, "script", c.Script, "the training `script`")
	loader.WorkersListVar(fs, &e.workers, "the DataLoader's worker `count` (one)")
	fs.Var(sizeFlag{"raw-size", &e.Width, &e.Height}, "raw-size", "the JPEGs' `size`, N or WxH")
	fs.IntVar(&c.Batch, "batch", c.Batch, "samples per `batch`")
	fs.IntVar(&c.Crop, "crop", c.Crop, "RandomResizedCrop's `side`")
	fs.IntVar(&c.ReturnCachesAfter, "batches", c.ReturnCachesAfter, "`steps` from the loader before the switch to cached batches")
	fs.IntVar(&c.StepsAfter, "steps-after", c.StepsAfter, "with --spdl-cache: `steps` on cached batches after the switch")
	fs.Uint64Var(&e.Seed, "seed", e.Seed, "the images' `seed`")
	fs.IntVar(&c.Count, "count", c.Count, "`rounds`: runs of each side")
	fs.IntVar(&e.Quality, "jpeg-quality", e.Quality, "with --peers or --spdl-cache: the JPEGs' `quality`")
	fs.StringVar(&e.report, "report", "", "Markdown report `file`, e.g. docs/peers.md")
}

// The bounds of --spdl-cache's and --peers' own flags.
var _ = cli.Declare(map[string]cli.Bound{
	"peer jpeg-quality": {Lo: 1, Hi: 100},
	"peer steps-after":  {Lo: 4, Hi: cli.MaxSteps},
})

// Outputs is --report, its folder made.
func (e *SPDLCache) Outputs() ([]string, error) {
	if err := mkdirs(e.report); err != nil {
		return nil, err
	}
	return []string{"report"}, cli.CheckOutputs(cli.Output{Path: e.report, Kind: peer.ReportKind})
}

// Prepare checks the side-by-side and the script in the peers env (its
// versions go into the file), waits for a quiet machine, and has the
// file's lines asked for once the run has ended (the images', the
// missing runs'); the images are removed when the command ends, after
// --out is written.
func (e *SPDLCache) Prepare(ctx context.Context, _, stderr io.Writer) (Setup, error) {
	if len(e.workers) != 1 {
		return Setup{}, cli.Usagef("--workers %s: --spdl-cache takes one worker count", joinInts(e.workers))
	}
	e.Config.Workers = e.workers[0]
	e.Config.NumCaches = min(spdlCacheNumCaches, e.Config.ReturnCachesAfter)
	if err := e.check(); err != nil {
		return Setup{}, err
	}
	if e.Config.Python == "" {
		return Setup{}, cli.Usagef("--spdl-cache: no peers environment found: %s", realpeer.InstallHint)
	}
	versions, err := checkSPDLCache(ctx, e.Config)
	if err != nil {
		return Setup{}, err
	}
	busy, err := waitQuiet(ctx, stderr)
	if err != nil {
		return Setup{}, err
	}
	run := &spdlCacheRun{log: stderr}
	e.run = run
	head := spdlCacheHead(e.Config, versions)
	return Setup{Device: func() string { return "none" }, CommandLine: true,
		Lines: func() []resultfile.Config {
			return slices.Concat(busy, head, e.fileLines(run.folder), spdlcache.MissingConfig(run.runs))
		},
		Close: func() {
			if run.folder != nil {
				run.folder.Close()
			}
		}}, nil
}

// check refuses a side-by-side e that cannot run: counts out of bounds,
// too few steps, a crop larger than the images, no script.
func (e SPDLCache) check() error {
	c := e.Config
	if err := cli.FirstErr(cli.InRange("--count", c.Count, 1, cli.MaxCount), cli.InRange("--batch", c.Batch, 1, 4096)); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return cli.Usagef("--spdl-cache: %v", err)
	}
	if c.Crop > e.Width || c.Crop > e.Height {
		return cli.Usagef("--crop %d must fit the %dx%d images", c.Crop, e.Width, e.Height)
	}
	if _, err := os.Stat(c.Script); err != nil {
		return cli.Usagef("--script: %v (run from the repository's root, or name the script)", err)
	}
	return nil
}

// spdlCacheHead are the result file's lines of a run of c before its
// specification: the machine's distribution, the script's
// and the versions its --check printed.
func spdlCacheHead(c spdlcache.Config, versions [][2]string) []resultfile.Config {
	shown := c
	shown.Data = "DATA"
	lines := []resultfile.Config{
		{Key: "distro", Value: machine.Describe().Distro},
		{Key: "script-command", Value: strings.Join(shown.OursCommand()[1:], " ")},
		{Key: "peers-python", Value: c.Python}}
	for _, kv := range versions {
		lines = append(lines, resultfile.Config{Key: "script-" + kv[0], Value: kv[1]})
	}
	return lines
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
