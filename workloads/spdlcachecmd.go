package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

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

// parseSPDLCache checks peer --spdl-cache's flags: fs's, the defaults
// of SPDLCache's Default size where not given.
func parseSPDLCache(fs *flag.FlagSet, sf *spdlCacheFlags) (e SPDLCache, err error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"data", "ladder", "remote", "impls", "decoder"} {
		if set[name] {
			return e, cli.Usagef("--%s does not apply to --spdl-cache", name)
		}
	}
	def := Sized[SPDLCache](Default)
	get := func(name, def string) string {
		if set[name] {
			return fs.Lookup(name).Value.String()
		}
		return def
	}
	num := func(name string, def int) int { n, _ := strconv.Atoi(get(name, strconv.Itoa(def))); return n }
	ws, err := cli.ParseInts("--workers", get("workers", strconv.Itoa(def.Config.Workers)))
	if err != nil {
		return e, err
	}
	if len(ws) != 1 {
		return e, cli.Usagef("--workers %s: --spdl-cache takes one worker count", get("workers", strconv.Itoa(def.Config.Workers)))
	}
	if e.Width, e.Height, err = cli.ParseSize("--raw-size", get("raw-size", fmt.Sprintf("%dx%d", def.Width, def.Height))); err != nil {
		return e, err
	}
	e.Seed, _ = strconv.ParseUint(get("seed", strconv.FormatUint(def.Seed, 10)), 10, 64)
	c := def.Config
	c.Script, c.Workers, c.Batch, c.Crop = get("script", def.Config.Script), ws[0], num("batch", c.Batch), num("crop", c.Crop)
	c.ReturnCachesAfter, c.StepsAfter, c.Count = num("batches", c.ReturnCachesAfter), sf.stepsAfter, num("count", c.Count)
	c.NumCaches = min(spdlCacheNumCaches, c.ReturnCachesAfter)
	e.Config, e.Quality = c, num("jpeg-quality", def.Quality)
	if err := e.check(); err != nil {
		return e, err
	}
	if e.Config.Python = get("python", def.Config.Python); e.Config.Python == "" {
		return e, cli.Usagef("--spdl-cache: no peers environment found: %s", realpeer.InstallHint)
	}
	return e, nil
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

// runSPDLCache is peer --spdl-cache: the SPDLCache experiment its flags
// make, checked, run by the driver (Job) once the machine is quiet, and
// its report.
func runSPDLCache(ctx context.Context, fs *flag.FlagSet, sf *spdlCacheFlags, args []string, stdout, stderr io.Writer) error {
	e, err := parseSPDLCache(fs, sf)
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
	versions, err := checkSPDLCache(ctx, e.Config)
	if err != nil {
		return err
	}
	busy, err := waitQuiet(ctx, stderr)
	if err != nil {
		return err
	}
	run := &spdlCacheRun{log: stderr}
	e.run = run
	defer func() { // after --out is written
		if run.folder != nil {
			run.folder.Close()
		}
	}()
	job := Job(e, Env{})
	var settings []resultfile.Config
	job.Settings = func() []resultfile.Config { // asked for once the run has ended
		if settings == nil {
			settings = slices.Concat(machine.Environment("none"), busy, spdlCacheHead(e.Config, versions, peerCommand(args)),
				e.fileLines(run.folder), spdlcache.MissingConfig(run.runs))
		}
		return settings
	}
	o, err := driver.Run(ctx, job, driver.Output{Path: out, Benchmarks: []string{spdlcache.Benchmark}})
	if err != nil {
		return err
	}
	recs, err := ranRecords(o, job.Settings())
	if err != nil {
		return err
	}
	r, err := SPDLCacheCodec.Decode(recs)
	if err != nil {
		return err
	}
	if out != "" {
		fmt.Fprintf(stdout, "results: %s\n", out)
	}
	e.report = rep
	return e.Report(r, stdout)
}

// spdlCacheHead are the result file's lines of a run of c before its
// specification: the machine's distribution, the command, the script's
// and the versions its --check printed.
func spdlCacheHead(c spdlcache.Config, versions [][2]string, command string) []resultfile.Config {
	shown := c
	shown.Data = "DATA"
	lines := []resultfile.Config{
		{Key: "distro", Value: machine.Describe().Distro},
		{Key: "command", Value: command},
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

// rebuildSPDLCache is --spdl-cache's --from: its records decoded through
// SPDLCacheCodec, and SPDLCache's Report, as a run's.
func rebuildSPDLCache(from string, recs []*benchfmt.Result, report, _ string, stdout io.Writer) error {
	o, err := SPDLCacheCodec.Decode(recs)
	if err != nil {
		return cli.Usagef("--from: %v", err)
	}
	return SPDLCache{report: report}.Report(o, stdout)
}
