package workloads

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/s3server"
	"github.com/headspace-bench/headspace/harness/tune"
	"github.com/headspace-bench/headspace/internal/cli"
)

// RunTune is headspace tune's run, its usage text usage (command/tune.go).
func RunTune(ctx context.Context, args []string, usage string, stdout, stderr io.Writer) error {
	t := Sized[Tune](Default)
	fs := cli.NewFlagSet("tune", usage, stdout)
	var of ownFlags
	of.registerLadder(fs)
	var out string
	var force bool
	fs.DurationVar(&t.Budget, "budget", t.Budget, "the whole tune's `duration`, the profile run and the final check included")
	fs.IntVar(&t.Steps, "steps", t.Steps, "`steps` timed in each run, after its warm-up")
	fs.IntVar(&t.Rounds, "rounds", t.Rounds, "`runs` of each candidate in a stage, alternated round by round")
	fs.IntVar(&t.Pairs, "pairs", t.Pairs, "paired `runs` of the final check, at most (the budget may hold fewer)")
	fs.IntVar(&t.MaxWorkers, "max-workers", 0, "the largest `num_workers` (with --ours, --workers) tried (default: twice the cores, 8 to 32)")
	fs.StringVar(&out, "out", "", "benchmark-format result `file` of every run (written atomically)")
	fs.BoolVar(&force, "force", false, "let --out replace a results file holding more results")
	var ours tuneOursFlags
	ours.register(fs)
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if ours.ours != "" {
		return runTuneOurs(ctx, fs, args, &ours, t, out, force, stdout, stderr)
	}
	if err := ours.check(fs); err != nil {
		return err
	}
	if !hasCommand(fs, args) {
		return cli.Usagef("give the training command after --: headspace tune [--budget DURATION] [--out FILE] -- python3 train.py")
	}
	t.Argv, t.Loader, t.FirstBatchTimeout = fs.Args(), of.loader, of.firstTimeout
	if err := t.Validate(); err != nil {
		return cli.Usagef("%v", err)
	}
	cmd, err := ownloop.ParseCommand(t.Argv)
	if err != nil {
		return ownError(err)
	}
	var run *ownloop.Run
	var res tune.Result
	settings := func() []resultfile.Config {
		return driver.Settings(run.Device(), ownloop.CommandConfig(cmd, run), t.SettingsFor(len(run.Ranks)), TuneFailures(res))
	}
	o, err := driver.Run(ctx, driver.Job{Progress: stderr, Settings: settings,
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			var err error
			res, err = t.MeasureEach(ctx, Env{}, stderr, func(r *ownloop.Run, p tune.Profile) {
				run = r
				logTuneProfile(stderr, p)
			}, func(r tune.Run) { logTuneRun(stderr, r, r.Setting.Args()) })
			h.Finish()
			return tuneMeasured(res, err, run != nil, t.Budget, ownError, stdout)
		}}, tuneOutput(out, force))
	return tuneEnded(o, err, run != nil, "before the profile run ended: nothing was measured", out, stdout)
}

// logTuneProfile is the script's profile's line on stderr.
func logTuneProfile(stderr io.Writer, p tune.Profile) {
	node := ""
	if p.Ranks > 0 {
		node = fmt.Sprintf(" (%d ranks: the slowest rank's)", p.Ranks)
	}
	fmt.Fprintf(stderr, "tune: profile%s: %.2f steps/s with the loader (%s), %.2f on cached batches\n", node, p.Before, p.Own.Normal().Args(), p.Cached)
}

// logTuneRun is r's line on stderr, its setting shown as setting (the
// script's arguments, or our pipeline's flags).
func logTuneRun(stderr io.Writer, r tune.Run, setting string) {
	if r.Failed {
		fmt.Fprintf(stderr, "tune: %s %s: failed: %s\n", r.Stage, setting, r.Reason)
		return
	}
	fmt.Fprintf(stderr, "tune: %s %s: %.2f steps/s (%.1fs)\n", r.Stage, setting, r.StepsPerSec, r.Wall.Seconds())
}

// tuneOutput is a tune's --out: written whole, its records Tune's.
func tuneOutput(out string, force bool) driver.Output {
	return driver.Output{Path: out, Benchmarks: []string{"Tune"}, Force: force, Beside: true}
}

// tuneMeasured is the end of a tune's Measure, given what MeasureEach
// returned and whether its profile ended: a budget too small for one
// candidate is a usage error, an interruption before the profile ended
// measured nothing, another error is wrap's; else the best so far (an
// interrupted tune's too) on stdout and res's records, with err.
func tuneMeasured(res tune.Result, err error, profiled bool, budget time.Duration, wrap func(error) error, stdout io.Writer) ([]*benchfmt.Result, error) {
	switch {
	case errors.Is(err, tune.ErrBudget):
		return nil, cli.Usagef("--budget %v is too small: %v", budget, err)
	case !profiled && errors.Is(err, context.Canceled):
		return nil, err // nothing measured
	case err != nil && !errors.Is(err, context.Canceled):
		return nil, wrap(err)
	}
	res.WriteText(stdout) // an interrupted tune's too: the best so far
	return TuneCodec.Encode(res), err
}

// tuneEnded is a tune command's end, given driver.Run's outcome o and
// error err and whether the profile ended (else an interruption says
// notYet): the results line, and the error that exits 130 where it was
// interrupted.
func tuneEnded(o driver.Outcome, err error, profiled bool, notYet, out string, stdout io.Writer) error {
	if err != nil && !o.Interrupted {
		return err
	}
	if o.Interrupted && !profiled {
		return driver.Interrupted{Kept: notYet}
	}
	if out != "" && o.Path != "" {
		cli.KeptNote(stdout, out, o.Path)
		fmt.Fprintf(stdout, "results: %s\n", o.Path)
	}
	return o.Err("the best so far is above")
}

// tuneOursFlags are tune --ours's flags beside the tune's: the
// pipeline's, as ladder's (one worker count, transform and level), and
// remote's dataset and link.
type tuneOursFlags struct {
	ours           string
	pf             pipelineFlags
	workers        *loader.Workers
	impl, lv       string
	warmup         int
	maxFetch       int
	rtt            time.Duration
	format, dir    string
	samples        int
	pipelineFlagFs *flag.FlagSet // the pipeline's flags alone, to tell them apart
}

// The bounds of tune --ours's own numeric flags; the pipeline's are
// declared with them (loader, bucket), --warmup's by package cli.
var _ = cli.Declare(map[string]cli.Bound{
	"tune workers":   {Lo: 1, Hi: loader.MaxWorkers},
	"tune max-fetch": {Lo: 0, Hi: bucket.MaxConcurrency},
	"tune rtt":       {Lo: 0, Hi: float64(time.Second)},
	"tune samples":   {Lo: 0, Hi: 1 << 20},
})

// register defines the flags on fs.
func (f *tuneOursFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.ours, "ours", "", "tune headspace's own pipeline instead of a script: `ladder` (its flags --workers, --prefetch, and --fetch-concurrency with --data s3://…) or remote (the same against the local S3 server it starts)")
	f.pipelineFlagFs = flag.NewFlagSet("pipeline", flag.ContinueOnError)
	f.pf.register(f.pipelineFlagFs)
	f.pipelineFlagFs.VisitAll(func(fl *flag.Flag) { fs.Var(fl.Value, fl.Name, "with --ours: "+fl.Usage) })
	def := defaultOursWorkers()
	f.workers = loader.WorkersFlag(fs, false, "with --ours: the pipeline's worker `count`, the setting the search starts from and checks against", def)
	fs.StringVar(&f.impl, "transforms", transforms.Fast, "with --ours ladder: the transform `implementation` (naive or fast)")
	fs.StringVar(&f.lv, "level", "none", "with --ours ladder: the caching ladder's `level` tuned at (none: the whole pipeline; raw, sample)")
	fs.IntVar(&f.warmup, "warmup", 2, "with --ours: `steps` each run takes before its timed ones")
	fs.IntVar(&f.maxFetch, "max-fetch", 0, fmt.Sprintf("with --ours and data in a bucket: the largest --fetch-concurrency `requests` tried (default %d)", DefaultMaxFetch))
	fs.DurationVar(&f.rtt, "rtt", 20*time.Millisecond, "with --ours remote: the emulated link's round `trip` to the local S3 server")
	fs.StringVar(&f.format, "format", "jpeg", "with --ours remote: the dataset's `format` in the bucket, raw or jpeg (one object a sample)")
	fs.IntVar(&f.samples, "samples", 0, "with --ours remote: the dataset's `samples` (default remote's, 1024)")
	fs.StringVar(&f.dir, "dir", "", "with --ours remote: `directory` for the dataset and the server's objects (default: the system's temporary directory)")
}

// defaultOursWorkers is the default of --workers: remote's pipeline's.
func defaultOursWorkers() int { return DefaultRemote().Ladder.Workers[0] }

// tuneOursOnly are the flags that apply with --ours alone.
var tuneOursOnly = []string{"ours", "workers", "transforms", "level", "warmup", "max-fetch", "rtt", "format", "samples", "dir"}

// tuneRemoteOnly are the flags that apply with --ours remote alone.
var tuneRemoteOnly = []string{"rtt", "format", "samples", "dir"}

// check refuses flags that do not apply to the mode set: ours's with a
// script, a script's with ours, remote's with ladder, the ladder's
// pipeline's with remote (whose pipeline is remote's, but for
// --prefetch and --fetch-concurrency).
func (f *tuneOursFlags) check(fs *flag.FlagSet) error {
	var bad []string
	remoteKeeps := []string{"prefetch", "fetch-concurrency"}
	fs.Visit(func(fl *flag.Flag) {
		pipeline := f.pipelineFlagFs.Lookup(fl.Name) != nil
		ours := pipeline || slices.Contains(tuneOursOnly, fl.Name)
		switch {
		case f.ours == "" && ours:
			bad = append(bad, "--"+fl.Name)
		case f.ours != "" && (fl.Name == "loader" || fl.Name == "first-batch-timeout" || fl.Name == "stall-timeout"):
			bad = append(bad, "--"+fl.Name)
		case f.ours == "ladder" && slices.Contains(tuneRemoteOnly, fl.Name):
			bad = append(bad, "--"+fl.Name)
		case f.ours == "remote" && ((pipeline && !slices.Contains(remoteKeeps, fl.Name)) || fl.Name == "transforms" || fl.Name == "level"):
			bad = append(bad, "--"+fl.Name)
		}
	})
	switch {
	case len(bad) == 0:
		return nil
	case f.ours == "":
		return cli.Usagef("%s only apply with --ours ladder|remote, not to a training command", strings.Join(bad, ", "))
	}
	return cli.Usagef("%s do not apply to tune --ours %s", strings.Join(bad, ", "), f.ours)
}

// experiment is the tune the flags ask for, without its bucket for
// remote (serveRemote).
func (f *tuneOursFlags) experiment(ctx context.Context, t Tune) (TuneOurs, error) {
	o := TuneOurs{Pipeline: f.ours, Budget: t.Budget, Rounds: t.Rounds, Pairs: t.Pairs, MaxWorkers: t.MaxWorkers, MaxFetch: f.maxFetch}
	if !slices.Contains(TuneOursPipelines, f.ours) {
		return o, cli.Usagef("--ours %q: want %s", f.ours, strings.Join(TuneOursPipelines, " or "))
	}
	if err := cli.FirstErr(cli.InRange("--workers", f.workers.N(), 1, loader.MaxWorkers), cli.InRange("--steps", t.Steps, 1, cli.MaxSteps),
		cli.InRange("--warmup", f.warmup, 0, cli.MaxSteps), cli.InRange("--max-fetch", f.maxFetch, 0, bucket.MaxConcurrency)); err != nil {
		return o, err
	}
	if t.Budget < MinOursBudget {
		return o, cli.Usagef("--budget %v is too small for one candidate: the profile's runs alone take seconds; give %v or more", t.Budget, MinOursBudget)
	}
	var err error
	if o.Level, err = level.Parse(f.lv); err != nil {
		return o, cli.UsageError{Msg: err.Error()}
	}
	if f.ours == "remote" {
		r := DefaultRemote()
		if f.samples > 0 {
			r.Samples = f.samples
		}
		if !slices.Contains([]string{"raw", "jpeg"}, f.format) {
			return o, cli.Usagef("--format %q: want raw or jpeg", f.format)
		}
		if f.rtt < 0 || f.rtt > time.Second {
			return o, cli.Usagef("--rtt %v: want 0 to 1s", f.rtt)
		}
		o.Config, o.Train, o.Step = r.Ladder.Pipeline, r.Ladder.Train, RemoteStep
		o.Config.Dataset.N = r.Samples
		o.Config.Prefetch = f.pf.prefetch
		o.Config.Bucket.Concurrency = f.pf.data.Bucket.Concurrency
	} else {
		impls, err := cli.ParseList("--transforms", f.impl, transforms.Names)
		if err != nil {
			return o, err
		}
		if len(impls) != 1 {
			return o, cli.Usagef("--transforms %s: tune takes one implementation", f.impl)
		}
		if f.pf.dev != "emulated" {
			return o, cli.Usagef("--device %s: tune --ours runs on the emulated device this round", f.pf.dev)
		}
		if o.Config, err = f.pf.config(ctx, f.workers.N(), impls[0]); err != nil {
			return o, err
		}
		o.Train, o.Step = Sized[Ladder](Default).Train, f.pf.step
	}
	o.Config.Workers = f.workers.N()
	o.Train.Steps, o.Train.Warmup = t.Steps, f.warmup
	if err := o.Train.Validate(); err != nil {
		return o, cli.UsageError{Msg: err.Error()}
	}
	return o, nil
}

// device is the device the flags name: remote's emulated device, or
// the ladder's flags'.
func (f *tuneOursFlags) device(ctx context.Context) (Device, error) {
	if f.ours == "remote" {
		return RemoteDevice(), nil
	}
	return f.pf.device(ctx)
}

// serveRemote starts the pinned S3 server under a fresh directory in
// dir, writes and uploads o's dataset (one object a sample, of format)
// and an emulated link of rtt to it, and points o's pipeline at the
// dataset through the link. stop ends both and removes the directory.
func serveRemote(ctx context.Context, o *TuneOurs, dir, format string, rtt time.Duration) (settings []resultfile.Config, stop func(), err error) {
	tmp, err := os.MkdirTemp(dir, "headspace-tune-remote-")
	if err != nil {
		return nil, nil, err
	}
	var stops []func()
	stop = func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
		os.RemoveAll(tmp)
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	srv, err := s3server.Start(ctx, s3server.Options{Root: filepath.Join(tmp, "s3")})
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { srv.Close() })
	direct := bucket.Options{Endpoint: srv.Endpoint(), Region: s3server.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}
	mk, err := bucket.OpenUnchecked(bucket.URL{Bucket: "headspace"}, direct)
	if err != nil {
		return nil, stop, err
	}
	if err := mk.MakeBucket(ctx); err != nil {
		return nil, stop, err
	}
	r := DefaultRemote()
	r.Ladder.Pipeline, r.Samples = o.Config, o.Config.Dataset.N
	url, err := r.upload(ctx, tmp, RemoteDataset{format, "files"}, RemoteLayout{Name: "files"}, 0, direct)
	if err != nil {
		return nil, stop, err
	}
	cfg := link.Config{Latency: rtt}
	lk, err := link.Start(ctx, srv.Addr(), cfg)
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { lk.Close() })
	bo := direct
	bo.Endpoint, bo.Concurrency = lk.URL(), cmp.Or(o.Config.Bucket.Concurrency, bucket.DefaultConcurrency)
	o.Config.Data, o.Config.Bucket, o.Config.Link = url, bo, cfg.Settings()
	settings = []resultfile.Config{{Key: "remote-server", Value: "versitygw " + s3server.Version + " on 127.0.0.1"},
		{Key: "remote-format", Value: format}, {Key: "remote-layout", Value: "files"}, {Key: "remote-rtt", Value: rtt.String()}}
	return settings, stop, nil
}

// runTuneOurs is headspace tune --ours: the flags parsed with the
// tune's into t.
func runTuneOurs(ctx context.Context, fs *flag.FlagSet, args []string, f *tuneOursFlags, t Tune, out string, force bool, stdout, stderr io.Writer) error {
	if hasCommand(fs, args) || fs.NArg() > 0 {
		return cli.Usagef("tune --ours %s takes no command: its flags are the pipeline's (headspace tune --ours ladder --workers 1 --prefetch 1)", f.ours)
	}
	if err := f.check(fs); err != nil {
		return err
	}
	defer f.pf.data.Close() // the --link, if one was started
	o, err := f.experiment(ctx, t)
	if err != nil {
		return err
	}
	var env Env
	if env.Device, err = f.device(ctx); err != nil {
		return err
	}
	var served []resultfile.Config
	if f.ours == "remote" {
		var stop func()
		if served, stop, err = serveRemote(ctx, &o, f.dir, f.format, f.rtt); err != nil {
			return fmt.Errorf("tune --ours remote: the local bucket: %w", err)
		}
		defer stop()
	}
	if err := o.Validate(); err != nil {
		return cli.Usagef("%v", err)
	}
	var res tune.Result
	profiled := false
	settings := func() []resultfile.Config {
		return driver.Settings("emulated", env.Device.Settings, o.Settings(), served,
			[]resultfile.Config{{Key: "command", Value: cli.CommandLine("headspace tune", args)}}, TuneFailures(res))
	}
	run, err := driver.Run(ctx, driver.Job{Progress: stderr, Settings: settings,
		Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			var err error
			res, err = o.MeasureEach(ctx, env, func(p tune.Profile) {
				profiled = true
				fmt.Fprintf(stderr, "tune: profile: %.2f steps/s at %s, %.2f with the data on the device\n", p.Before, p.Args(p.Own), p.Cached)
			}, func(r tune.Run) { logTuneRun(stderr, r, r.Setting.Flags()) })
			h.Finish()
			return tuneMeasured(res, err, profiled, t.Budget, func(err error) error { return err }, stdout)
		}}, tuneOutput(out, force))
	return tuneEnded(run, err, profiled, "before the profile ended: nothing was measured", out, stdout)
}
