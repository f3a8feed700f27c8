package realpeer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/membw"
)

// Config is one comparison.
type Config struct {
	Runner   Runner
	Settings Settings
	// Ours is our loader's pipeline over Settings.Data (its Workers are
	// set per point): the goroutine loader, level none.
	Ours    loader.Config
	Peers   []Peer
	Workers []int
	Count   int // rounds, at least 1
	// Limit, if set, gets after each round, at each worker count, the
	// limit measured (MeasureLimit, with Copy's buffer, reps and trials):
	// the copy bandwidth on the same cores and ours' stage times.
	Limit func(LimitRun)
	Copy  membw.Config
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	switch {
	case c.Settings.Batches < 2:
		return fmt.Errorf("batches %d: want at least 2 (the first is the time to first batch)", c.Settings.Batches)
	case c.Settings.Batch < 1 || c.Settings.Crop < 1:
		return fmt.Errorf("batch %d and crop %d must be positive", c.Settings.Batch, c.Settings.Crop)
	case len(c.Workers) == 0:
		return errors.New("no worker counts")
	case c.Count < 1:
		return fmt.Errorf("rounds %d: want at least 1", c.Count)
	}
	for _, w := range c.Workers {
		if w < 1 {
			return fmt.Errorf("workers %d must be positive", w)
		}
	}
	return nil
}

// Sweep measures ours and every peer at every worker count, Count rounds
// (a peer that reads its own format has it prepared first, once):
// for each round and worker count, each once, back to back, the order
// rotated by one from each such group to the next, so that none always
// runs first or last. A peer's run that fails is recorded as missing, with
// the reason, and the sweep goes on; ours failing, or ctx ending, stops
// it. After each round, with c.Limit set, the limit is measured at each
// worker count (MeasureLimit) and given to it. each, if not nil, gets every run as it ends. It returns the runs so
// far with any error.
func Sweep(ctx context.Context, c Config, each func(Measurement)) ([]Measurement, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	impls := append([]string{Ours}, names(c.Peers)...)
	// The peers that read their own format have it written first, once;
	// one that fails has that failure as every run's reason.
	unprepared := map[string]error{}
	for _, p := range c.Peers {
		if err := c.Runner.Prepare(ctx, p, c.Settings); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			unprepared[p.Name] = err
		}
	}
	var ms []Measurement
	turn := 0
	for round := 1; round <= c.Count; round++ {
		for _, w := range c.Workers {
			k := turn % len(impls)
			turn++
			for _, name := range slices.Concat(impls[k:], impls[:k]) {
				if err := ctx.Err(); err != nil {
					return ms, err
				}
				m, err := Measurement{}, unprepared[name]
				if err == nil {
					m, err = c.run(ctx, name, w)
				}
				if err != nil && (name == Ours || ctx.Err() != nil) {
					return ms, fmt.Errorf("round %d, %s, workers=%d: %w", round, name, w, err)
				}
				if err != nil {
					m = Measurement{Peer: name, Workers: w, Batches: c.Settings.Batches, PeakRSS: -1, Missing: err.Error()}
				}
				m.Round = round
				ms = append(ms, m)
				if each != nil {
					each(m)
				}
			}
		}
		if c.Limit == nil {
			continue
		}
		for _, w := range c.Workers {
			l, err := MeasureLimit(ctx, c, w, round)
			if err != nil {
				return ms, fmt.Errorf("round %d, the limit, workers=%d: %w", round, w, err)
			}
			c.Limit(l)
		}
	}
	return ms, nil
}

func names(ps []Peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// run measures name (Ours or a peer of c's) once at w workers.
func (c Config) run(ctx context.Context, name string, w int) (Measurement, error) {
	if name != Ours {
		i := slices.IndexFunc(c.Peers, func(p Peer) bool { return p.Name == name })
		return c.Runner.Run(ctx, c.Peers[i], c.Settings, w)
	}
	pc := c.Ours
	pc.Workers = w
	lm, err := loadbench.Measure(ctx, loadbench.Config{Pipeline: pc, Batches: c.Settings.Batches}, loadbench.Point{Mode: loadbench.Goroutine, Workers: w})
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{Peer: Ours, Workers: w, Batches: lm.Batches, TTFB: lm.TTFB, SamplesPerSec: lm.SamplesPerSec, CPU: lm.CPU, PeakRSS: lm.PeakRSS}, nil
}
