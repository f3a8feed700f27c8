package workloads

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/s3server"
	"github.com/headspace-bench/headspace/harness/tune"
	"github.com/headspace-bench/headspace/internal/cli"
)

// tuneCommand is what headspace tune's flags set beside the tune's
// fields, and its run's state.
type tuneCommand struct {
	of   ownFlags      // a script's: --loader, --first-batch-timeout, --stall-timeout
	ours tuneOursFlags // --ours and our pipeline's
	// commandLine is the command as typed (Invoked), tune --ours's file's
	// command line.
	commandLine string
	run         *tuneRun
}

// tuneRun is a tune command's run, which Measure (on a copy of the
// experiment) shares with the command: where the live lines go, and
// what the file's lines and an interrupted run's note read once the
// tune ends.
type tuneRun struct {
	stderr   io.Writer
	profiled bool         // the profile ended
	own      *ownloop.Run // a script's profile run
	res      tune.Result
}

// The bounds of tune's numeric flags; the pipeline's are declared with
// them (loader, bucket), --warmup's by package cli, a command's own
// flags' (--loader, --first-batch-timeout) by the command layer.
var _ = cli.Declare(map[string]cli.Bound{
	"tune budget":      {Lo: 0, Hi: float64(7 * 24 * time.Hour)},
	"tune rounds":      {Lo: 1, Hi: cli.MaxCount},
	"tune pairs":       {Lo: 1, Hi: cli.MaxCount},
	"tune max-workers": {Lo: 0, Hi: loader.MaxWorkers},
	"tune workers":     {Lo: 1, Hi: loader.MaxWorkers},
	"tune max-fetch":   {Lo: 0, Hi: bucket.MaxConcurrency},
	"tune rtt":         {Lo: 0, Hi: float64(time.Second)},
	"tune samples":     {Lo: 0, Hi: 1 << 20},
})

// Flags are tune's: the tune's, a script's (ownFlags) and, with --ours,
// our pipeline's (tuneOursFlags); their defaults DefaultTune's.
func (t *Tune) Flags(fs *flag.FlagSet) {
	c := &t.cmd
	fs.DurationVar(&t.Budget, "budget", t.Budget, "the whole tune's `duration`, the profile run and the final check included")
	fs.IntVar(&t.Steps, "steps", t.Steps, "`steps` timed in each run, after its warm-up")
	fs.IntVar(&t.Rounds, "rounds", t.Rounds, "`runs` of each candidate in a stage, alternated round by round")
	fs.IntVar(&t.Pairs, "pairs", t.Pairs, "paired `runs` of the final check, at most (the budget may hold fewer)")
	fs.IntVar(&t.MaxWorkers, "max-workers", t.MaxWorkers, "the largest `num_workers` (with --ours, --workers) tried (default: twice the cores, 8 to 32)")
	c.of.registerLadder(fs)
	c.ours.register(fs)
}

// TakeArgs takes the training command after --, or, with --ours, none,
// and refuses flags that do not apply to the mode (tuneOursFlags.check).
func (t *Tune) TakeArgs(fs *flag.FlagSet, args []string) error {
	f := &t.cmd.ours
	command := hasCommand(fs, args)
	if f.ours != "" && fs.NArg() > 0 {
		return cli.Usagef("tune --ours %s takes no command: its flags are the pipeline's (headspace tune --ours ladder --workers 1 --prefetch 1)", f.ours)
	}
	if err := f.check(fs); err != nil {
		return err
	}
	if fs.NArg() > 0 && !command {
		return errNoTuneCommand
	}
	t.Argv = nil
	if command {
		t.Argv = fs.Args()
	}
	return nil
}

// errNoTuneCommand refuses a tune of a script with no command after --.
var errNoTuneCommand = cli.Usagef("give the training command after --: headspace tune [--budget DURATION] [--out FILE] -- python3 train.py")

// Invoked keeps the command line, tune --ours's file's.
func (t *Tune) Invoked(commandLine, _ string) { t.cmd.commandLine = commandLine }

// Prepare checks the tune of a script, or with --ours of our pipeline
// (prepareOurs); the run prints each run's line on stderr (the
// script's output too), and the file's lines are the profile run's
// (its device, the command, its ranks) and the failed runs' reasons
// (TuneFailures), once the tune has ended.
func (t *Tune) Prepare(ctx context.Context, _, stderr io.Writer) (Setup, error) {
	c := &t.cmd
	r := &tuneRun{stderr: stderr}
	c.run = r
	if c.ours.ours != "" {
		return t.prepareOurs(ctx, r)
	}
	t.Loader, t.FirstBatchTimeout = c.of.loader, c.of.firstTimeout
	if len(t.Argv) == 0 {
		return Setup{}, errNoTuneCommand
	}
	if err := t.Validate(); err != nil {
		return Setup{}, cli.Usagef("%v", err)
	}
	cmd, err := ownloop.ParseCommand(t.Argv)
	if err != nil {
		return Setup{}, OwnLoopError(err)
	}
	return Setup{Device: func() string {
		if r.own == nil {
			return "" // interrupted in the profile: no file is written
		}
		return r.own.Device()
	}, Lines: func() []resultfile.Config {
		if r.own == nil {
			return t.Settings()
		}
		return slices.Concat(ownloop.CommandConfig(cmd, r.own), t.SettingsFor(len(r.own.Ranks)), TuneFailures(r.res))
	}}, nil
}

// prepareOurs is Prepare of tune --ours: Ours as the flags ask for, its
// device, and for remote its bucket served (until the command ends);
// the file's lines are the device's, the tune's, the bucket's, the
// command line and the failed runs' reasons.
func (t *Tune) prepareOurs(ctx context.Context, r *tuneRun) (Setup, error) {
	f := &t.cmd.ours
	s := Setup{Close: func() { f.pf.data.Close() }} // the --link, if one was started
	o, err := f.experiment(ctx, *t)
	if err != nil {
		return s, err
	}
	if s.Env.Device, err = f.device(ctx); err != nil {
		return s, err
	}
	var served []resultfile.Config
	if f.ours == "remote" {
		var stop func()
		if served, stop, err = serveRemote(ctx, &o, f.dir, f.format, f.rtt); err != nil {
			return s, fmt.Errorf("tune --ours remote: the local bucket: %w", err)
		}
		s.Close = func() { stop(); f.pf.data.Close() }
	}
	if err := o.Validate(); err != nil {
		return s, cli.Usagef("%v", err)
	}
	t.Ours = &o
	dev, command := s.Env.Device.Settings, []resultfile.Config{{Key: "command", Value: t.cmd.commandLine}}
	s.Lines = func() []resultfile.Config {
		return slices.Concat(dev, o.Settings(), served, command, TuneFailures(r.res))
	}
	return s, nil
}

// Interrupt says what an interrupted tune's report shows: the best so
// far, or, interrupted in its profile, nothing.
func (t *Tune) Interrupt() string {
	switch {
	case t.cmd.run != nil && t.cmd.run.profiled:
		return "the best so far is above"
	case t.Ours != nil:
		return "before the profile ended: nothing was measured"
	}
	return "before the profile run ended: nothing was measured"
}

// Report prints the tune's candidates and its answer
// (tune.Result.WriteText); R's zero value, a tune interrupted before its
// profile ended (a tune's records always name its script or level),
// prints nothing.
func (t *Tune) Report(r tune.Result, w io.Writer) error {
	if r.Script != "" {
		r.WriteText(w)
	}
	return nil
}

// logProfile is a script's profile's line on stderr.
func (r *tuneRun) logProfile(p tune.Profile) {
	node := ""
	if p.Ranks > 0 {
		node = fmt.Sprintf(" (%d ranks: the slowest rank's)", p.Ranks)
	}
	fmt.Fprintf(r.stderr, "tune: profile%s: %.2f steps/s with the loader (%s), %.2f on cached batches\n", node, p.Before, p.Own.Normal().Args(), p.Cached)
}

// logOursProfile is our pipeline's profile's line on stderr.
func (r *tuneRun) logOursProfile(p tune.Profile) {
	fmt.Fprintf(r.stderr, "tune: profile: %.2f steps/s at %s, %.2f with the data on the device\n", p.Before, p.Args(p.Own), p.Cached)
}

// logRun is x's line on stderr, its setting shown as setting (the
// script's arguments, or our pipeline's flags).
func (r *tuneRun) logRun(x tune.Run, setting string) {
	if x.Failed {
		fmt.Fprintf(r.stderr, "tune: %s %s: failed: %s\n", x.Stage, setting, x.Reason)
		return
	}
	fmt.Fprintf(r.stderr, "tune: %s %s: %.2f steps/s (%.1fs)\n", x.Stage, setting, x.StepsPerSec, x.Wall.Seconds())
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
