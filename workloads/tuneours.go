package workloads

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/harness/tune"
	"github.com/headspace-bench/headspace/harness/whatif"
)

// TuneOurs is headspace tune --ours: the search of harness/tune (the
// one a script's loader gets) over our own pipeline's --workers,
// --prefetch and, with data in a bucket, --fetch-concurrency, each
// candidate a run of the caching ladder at one level (none: the whole
// pipeline) on the device given. The profile is the what-if model
// (package whatif) of one run at the given setting with each stage's CPU
// measured, the given setting's steps/s at the level, and level
// device's: the loop's bound with the data on the device.
type TuneOurs struct {
	// Pipeline is the command whose flags are tuned: "ladder" or
	// "remote" (whose Config reads a bucket that Serve set up).
	Pipeline string
	Level    level.Level
	// Config is the pipeline as given: its Workers, Prefetch and, with
	// data in a bucket, Bucket.Concurrency are the setting the search
	// starts from and checks against.
	Config loader.Config
	Train  train.Config
	// Step is the emulated device's step: the what-if model's profile
	// runs against a device that takes no time (the pipeline sets the
	// pace, as headspace whatif's), then models this step.
	Step   time.Duration
	Budget time.Duration
	// Rounds are each candidate's runs in a stage; Pairs the final
	// check's, at most.
	Rounds, Pairs int
	// MaxWorkers and MaxFetch are the largest worker count and fetch
	// concurrency tried; 0 is tune.MaxWorkers of the cores, and
	// DefaultMaxFetch.
	MaxWorkers, MaxFetch int
}

// TuneOursPipelines are the commands whose flags tune --ours tunes.
var TuneOursPipelines = []string{"ladder", "remote"}

// Settings are the pipeline's and the tune's settings.
func (t TuneOurs) Settings() []resultfile.Config {
	return append(t.Config.Settings(),
		resultfile.Config{Key: "budget", Value: t.Budget.String()},
		resultfile.Config{Key: "steps", Value: strconv.Itoa(t.Train.Steps)},
		resultfile.Config{Key: "warmup", Value: strconv.Itoa(t.Train.Warmup)},
		resultfile.Config{Key: "rounds", Value: strconv.Itoa(t.Rounds)},
		resultfile.Config{Key: "pairs", Value: strconv.Itoa(t.Pairs)},
		resultfile.Config{Key: "max-workers", Value: strconv.Itoa(t.maxWorkers())},
		resultfile.Config{Key: "max-fetch-concurrency", Value: strconv.Itoa(t.maxFetch())},
	)
}

func (t TuneOurs) maxWorkers() int {
	if t.MaxWorkers > 0 {
		return t.MaxWorkers
	}
	return tune.MaxWorkers(runtime.NumCPU())
}

func (t TuneOurs) maxFetch() int {
	if t.MaxFetch > 0 {
		return t.MaxFetch
	}
	return DefaultMaxFetch
}

// DefaultMaxFetch is the largest fetch concurrency tune --ours tries by
// default.
const DefaultMaxFetch = 256

// fetches says the pipeline reads from a bucket: its fetch concurrency
// is searched too.
func (t TuneOurs) fetches() bool { return bucket.IsURL(t.Config.Data) }

// Own is the setting the pipeline was given.
func (t TuneOurs) Own() tune.Setting {
	s := tune.Setting{Workers: t.Config.Workers, Prefetch: cmp.Or(t.Config.Prefetch, 2)} // 0 is loader.Config's 2
	if t.fetches() {
		s.Fetch = cmp.Or(t.Config.Bucket.Concurrency, bucket.DefaultConcurrency)
	}
	return s
}

// MinOursBudget is the least --budget tune --ours starts with: the
// profile's three runs and a candidate with its check take seconds; the
// budget one candidate needs is known once the profile has run
// (tune.ErrBudget).
const MinOursBudget = 5 * time.Second

// Validate refuses a tune that cannot run.
func (t TuneOurs) Validate() error {
	switch {
	case !slices.Contains(TuneOursPipelines, t.Pipeline):
		return fmt.Errorf("--ours %q: want ladder or remote", t.Pipeline)
	case t.Budget < MinOursBudget:
		return fmt.Errorf("--budget %v is too small for one candidate: the profile's runs alone take seconds; give %v or more", t.Budget, MinOursBudget)
	case t.Rounds < 1 || t.Pairs < 1:
		return fmt.Errorf("--rounds %d and --pairs %d must be positive", t.Rounds, t.Pairs)
	case t.MaxWorkers < 0 || t.MaxFetch < 0:
		return fmt.Errorf("--max-workers %d and --max-fetch %d must not be negative", t.MaxWorkers, t.MaxFetch)
	case !t.Level.Loader():
		return fmt.Errorf("--level %s runs no loader: nothing to tune (want none, encoded, raw or sample)", t.Level)
	}
	if err := t.Train.Validate(); err != nil {
		return err
	}
	if err := t.Config.Validate(); err != nil {
		return err
	}
	return ladder.Check(t.Level, t.Config)
}

// at is the pipeline at setting s.
func (t TuneOurs) at(s tune.Setting) loader.Config {
	c := t.Config
	c.Workers, c.Prefetch = s.Workers, s.Prefetch
	if s.Fetch > 0 {
		c.Bucket.Concurrency = s.Fetch
	}
	return c
}

// MeasureEach runs the tune on env's device: the profile, handed to
// profiled, then the search and the final check (tune.Searcher), each
// run handed to each as it ends. It returns what it measured, with the
// context's error where it was interrupted, and tune.ErrBudget, after
// the profile, where the budget cannot hold one candidate and its
// check.
func (t TuneOurs) MeasureEach(ctx context.Context, env Env, profiled func(tune.Profile), each func(tune.Run)) (tune.Result, error) {
	start := time.Now()
	key := t.Level.String() // Result.Script: our pipeline's level
	if err := t.Validate(); err != nil {
		return tune.Result{Script: key}, err
	}
	d := env.device()
	dev, closeDev := d.once()
	defer closeDev()
	p, err := t.profile(ctx, env, d, dev)
	if err != nil {
		return tune.Result{Script: key}, err
	}
	if profiled != nil {
		profiled(p)
	}
	sr := tune.Searcher{Config: tune.Config{Budget: t.Budget, Steps: t.Train.Steps, Warmup: max(t.Train.Warmup, 1), Rounds: t.Rounds, Pairs: t.Pairs,
		Cores: runtime.GOMAXPROCS(0), MaxWorkers: t.maxWorkers(), MaxFetch: t.maxFetch()}, Profile: p, Start: start,
		Run: func(ctx context.Context, s tune.Setting) (ownloop.Timed, error) {
			env.start("tune " + s.Flags())
			r, wall, err := t.runAt(ctx, dev, t.Level, s)
			return timedOf(r, wall), err
		}, Each: each}
	out, err := sr.Tune(ctx)
	out.Script = key
	return out, err
}

// profile is the search's profile of the given setting on device d (dev
// its device opened once): the what-if model's prediction and limit
// (model), the setting's steps/s at the level and at level device (the
// loop's bound), and with data in a bucket the fetch concurrency
// Little's law picks.
func (t TuneOurs) profile(ctx context.Context, env Env, d, dev Device) (tune.Profile, error) {
	own := t.Own()
	p := tune.Profile{Own: own, Pipeline: t.Pipeline}
	if err := t.model(ctx, env, d, dev, &p); err != nil {
		return p, err
	}
	env.start("tune profile: " + own.Flags())
	before, wall, err := t.runAt(ctx, dev, t.Level, own)
	if err != nil {
		return p, fmt.Errorf("the profile run at %s: %w", own.Flags(), err)
	}
	p.Before, p.Startup = before.StepsPerSec(), max(0, wall-before.Wall)
	env.start("tune profile: level device")
	cached, _, err := t.runAt(ctx, dev, level.Device, own)
	if err != nil {
		return p, fmt.Errorf("the profile run at level device: %w", err)
	}
	p.Cached = cached.StepsPerSec()
	if own.Fetch > 0 {
		p.FetchPick = fetchPick(before, p.Cached, t.Config.Batch, t.maxFetch())
		if p.FetchPick > own.Fetch {
			// The what-if model has no network: Little's law says the
			// requests in flight bind first.
			p.Limit = tune.LimitFetch
		}
	}
	return p, nil
}

// model sets p's Predict and Limit from the what-if model of a run of
// the whole pipeline at p's own setting, each stage's CPU measured where
// the system can, on d scaled (or, a device whose step cannot be scaled,
// dev at its own step). A model that cannot be made leaves them unset.
func (t TuneOurs) model(ctx context.Context, env Env, d, dev Device, p *tune.Profile) error {
	open, scale := d.Scale, 0.0
	if open == nil { // a device whose step cannot be scaled: profiled at its own
		open, scale = func(m float64) (device.Device, error) { return dev.Open(true) }, 1
	}
	env.start("tune profile: the what-if model")
	wr := &whatIfRun{WhatIf: WhatIf{Pipeline: t.at(p.Own), Train: t.Train}, open: open, env: env}
	res, run, err := wr.runOnce(ctx, p.Own.Workers, scale, runtime.GOOS == "linux")
	if err != nil {
		return fmt.Errorf("the profile run: %w", err)
	}
	if m, err := whatif.FromRun(res, run); err == nil {
		if scale == 0 {
			m.Step = t.Step
		}
		m = m.AtLevel(t.Level)
		p.Predict = func(s tune.Setting, cores int) float64 {
			return m.Predict(whatif.Scenario{Cores: cores, Workers: s.Workers}).StepsPerSec
		}
		p.Limit = m.Predict(whatif.Scenario{Cores: runtime.GOMAXPROCS(0), Workers: p.Own.Workers}).Bound.String()
	}
	return nil
}

// runAt is a run of the pipeline at setting s and level lv on dev, and
// its whole time.
func (t TuneOurs) runAt(ctx context.Context, dev Device, lv level.Level, s tune.Setting) (train.Result, time.Duration, error) {
	d, err := dev.Open(true)
	if err != nil {
		return train.Result{}, 0, fmt.Errorf("opening the device: %w", err)
	}
	defer d.Close()
	t0 := time.Now()
	r, err := ladder.Run(ctx, lv, t.at(s), d, t.Train)
	return r, time.Since(t0), err
}

// fetchPick is the fetch concurrency Little's law asks for the loop to
// run at the device's rate (cached steps/s): the samples/s that needs,
// times a sample's requests, times a request's mean time, as measured in
// the run r; the next value of tune.FetchLadder up to max. 0 where r
// made no request.
func fetchPick(r train.Result, cached float64, batch, max int) int {
	if r.Samples <= 0 || r.Requests <= 0 || r.RequestMean <= 0 || cached <= 0 {
		return 0
	}
	need := cached * float64(batch) * float64(r.Requests) / float64(r.Samples) * r.RequestMean.Seconds()
	for _, f := range tune.FetchLadder(max, 1) {
		if float64(f) >= math.Ceil(need) {
			return f
		}
	}
	return max
}

// timedOf is a ladder run as the search reads it: its steps/s the
// ladder's (train.Result.StepsPerSec: its steps over the time from the
// first to the device's last finish; a step's own time ends when the
// device takes the batch, before it is done), each step that time's
// share; wall is the run's whole time.
func timedOf(r train.Result, wall time.Duration) ownloop.Timed {
	t := ownloop.Timed{Wall: wall}
	if r.Steps > 0 && r.Wall > 0 {
		t.Steps = make([]time.Duration, r.Steps)
		for i := range t.Steps {
			t.Steps[i] = r.Wall / time.Duration(r.Steps)
		}
		t.Steps[0] += r.Wall - r.Wall/time.Duration(r.Steps)*time.Duration(r.Steps) // the division's remainder
	}
	return t
}
