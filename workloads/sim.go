package workloads

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/sim"
)

// Sim is the loader simulation of "Visualizing data loaders" (document
// 004): DataLoader's workers and prefetch as a discrete-event simulation,
// each case's batches trained in its duration beside the post's count;
// every case with each load-time distribution of Dists, over Seeds seeds.
type Sim struct {
	Cases []SimCase
	// Dists are the load-time distributions each case also runs with
	// (sim.Constant, sim.Normal with SimDocumentSpread); none runs each
	// case as its Config says, distribution and spread included.
	Dists []string
	// Seeds is the runs of each case and distribution, seeds 1 to Seeds;
	// 0 runs each once with its Config's own seed.
	Seeds int
	// GIFTick is the simulated time per frame of the report's
	// animations (it changes no number, but the figures).
	GIFTick time.Duration
}

// SimCase is one simulated pipeline and the post's figure for it.
type SimCase struct {
	Config sim.Config
	// Post is the batches the post's animation counts; 0 where it gives none.
	Post int
}

// SimDocumentSpread is the load-time spread (standard deviation over mean)
// of the post's random loads that reproduces its 275 and 295
// (harness/sim/doc.go).
const SimDocumentSpread = 0.22

// The post's setting: 7 loader workers, a 100 ms step, 30 s of training.
const (
	SimDocumentLoaders  = 7
	SimDocumentStep     = 100 * time.Millisecond
	SimDocumentDuration = 30 * time.Second
)

// DefaultSim is the post's three animations: 2 s loads (constant), and
// 700 ms and 350 ms loads (normal, SimDocumentSpread), with the post's
// workers, step and duration — 98, 275 and 295 batches in the post —
// each also with constant and with normal loads, over 20 seeds, drawn at
// the post's 100 ms a frame.
func DefaultSim() Sim {
	c := func(load time.Duration, dist string) sim.Config {
		return simConfig(sim.Config{Loaders: SimDocumentLoaders, Load: load, Step: SimDocumentStep, Duration: SimDocumentDuration, Seed: 1}, dist)
	}
	return Sim{Cases: []SimCase{
		{c(2*time.Second, sim.Constant), 98},
		{c(700*time.Millisecond, sim.Normal), 275},
		{c(350*time.Millisecond, sim.Normal), 295},
	}, Dists: []string{sim.Constant, sim.Normal}, Seeds: 20, GIFTick: 100 * time.Millisecond}
}

// QuickSim is DefaultSim over 2 seeds, with a tenth of the frames.
func QuickSim() Sim {
	s := DefaultSim()
	s.Seeds, s.GIFTick = 2, time.Second
	return s
}

// simConfig is c with load-time distribution dist: a normal spread of
// SimDocumentSpread, or none.
func simConfig(c sim.Config, dist string) sim.Config {
	c.LoadDist, c.LoadStddev = dist, 0
	if dist == sim.Normal {
		c.LoadStddev = time.Duration(SimDocumentSpread * float64(c.Load))
	}
	return c
}

// Name is "Sim": BenchmarkSim/load=…/dist=…/seed=….
func (Sim) Name() string { return "Sim" }

// Document is "004".
func (Sim) Document() string { return "004" }

// Settings is the configuration block of the simulation's result file:
// the post's loaders, step and duration (each case's load and
// distribution are in its records' names).
func (s Sim) Settings() []resultfile.Config {
	var c sim.Config
	if len(s.Cases) > 0 {
		c = s.Cases[0].Config
	}
	return []resultfile.Config{
		{Key: "loaders", Value: fmt.Sprint(c.Loaders)},
		{Key: "step", Value: c.Step.String()},
		{Key: "duration", Value: c.Duration.String()},
		{Key: "seeds", Value: fmt.Sprint(max(s.Seeds, 1))},
		{Key: "gif-tick", Value: s.GIFTick.String()},
	}
}

// Runs is every simulation Run makes, in order: each case with each of
// Dists, over Seeds seeds (see Sim).
func (s Sim) Runs() []sim.Config {
	var out []sim.Config
	for _, c := range s.Cases {
		cfgs := []sim.Config{c.Config}
		if len(s.Dists) > 0 {
			cfgs = nil
			for _, d := range s.Dists {
				cfgs = append(cfgs, simConfig(c.Config, d))
			}
		}
		for _, cfg := range cfgs {
			if s.Seeds == 0 {
				out = append(out, cfg)
			}
			for seed := 1; seed <= s.Seeds; seed++ {
				cfg.Seed = uint64(seed)
				out = append(out, cfg)
			}
		}
	}
	return out
}

// SimOutcome is what a Sim measured: every run, in the order of Runs.
type SimOutcome struct {
	Runs []SimRun
}

// SimRun is one simulation of a Sim: its case's load time, load-time
// distribution and seed (its record's name), and its figures (the
// record's values).
type SimRun struct {
	Load        time.Duration
	Dist        string
	Seed        uint64
	Batches     int     // trained in the duration
	IdlePercent float64 // the model's idle time
	Queue       float64 // the ready queue's mean length
	// Result is the whole simulation (its timeline, its animation's
	// source), which the records do not hold: nil when decoded.
	Result *sim.Result
}

// Measure simulates every run (Runs), each passed to env.Start by its
// name as it begins.
func (s Sim) Measure(ctx context.Context, env Env) (SimOutcome, error) {
	var out SimOutcome
	for _, c := range s.Runs() {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		run := SimRun{Load: c.Load, Dist: c.LoadDist, Seed: c.Seed}
		name := run.name()
		env.start(name)
		r, err := sim.Run(c)
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		run.Batches, run.IdlePercent, run.Queue, run.Result = r.Batches, 100*r.ModelIdle, r.MeanQueueLength, r
		out.Runs = append(out.Runs, run)
	}
	return out, nil
}

// name is the run's benchmark name, without "Benchmark".
func (r SimRun) name() string {
	return fmt.Sprintf("Sim/load=%v/dist=%s/seed=%d", r.Load, r.Dist, r.Seed)
}

// Run simulates every run (Runs) and returns their records (SimCodec).
func (s Sim) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[SimOutcome](ctx, s, env)
}

// Codec is SimCodec.
func (Sim) Codec() Codec[SimOutcome] { return SimCodec }

var _ Typed[SimOutcome] = Sim{}

// SimCodec is a Sim's records codec: one record a run,
// BenchmarkSim/load=…/dist=…/seed=… with its batches, model-idle-% and
// queue; a decoded run has no Result.
var SimCodec = Codec[SimOutcome]{
	Experiment: "Sim",
	Keys:       map[string][]string{"Sim": {"load", "dist", "seed"}},
	encode: func(o SimOutcome) []*benchfmt.Result {
		return recordsOf(o.Runs, func(r SimRun) *benchfmt.Result {
			return newRecord(r.name(), 1, 1, benchfmt.Value{Value: float64(r.Batches), Unit: "batches"},
				benchfmt.Value{Value: r.IdlePercent, Unit: "model-idle-%"}, benchfmt.Value{Value: r.Queue, Unit: "queue"})
		})
	},
	decode: func(recs []Record) (SimOutcome, error) {
		runs, err := decodeEach(recs, func(rec Record) (SimRun, error) {
			load, err := time.ParseDuration(rec.Keys["load"])
			if err != nil {
				return SimRun{}, fmt.Errorf("%s: load: %w", fullName(rec.Result), err)
			}
			seed, err := strconv.ParseUint(rec.Keys["seed"], 10, 64)
			if err != nil {
				return SimRun{}, fmt.Errorf("%s: seed: %w", fullName(rec.Result), err)
			}
			v, err := rec.valuesIn("batches", "model-idle-%", "queue")
			if err != nil {
				return SimRun{}, err
			}
			return SimRun{Load: load, Dist: rec.Keys["dist"], Seed: seed, Batches: int(v[0]), IdlePercent: v[1], Queue: v[2]}, nil
		})
		return SimOutcome{Runs: runs}, err
	},
}
