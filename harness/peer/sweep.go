package peer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Impls lists the implementations in the order of a report: ours, then the
// peer.
var Impls = []string{Naive, Fast, Torch}

// Config is one comparison.
type Config struct {
	Peer     Peer
	Settings Settings
	Workers  []int // worker counts, each measured for every implementation
	// Impls are the implementations measured, a subset of Impls; nil
	// means all of them.
	Impls []string
	// Count is the number of rounds: every implementation is measured
	// Count times at each worker count. 0 means 1.
	Count int
}

func (c Config) impls() []string {
	if c.Impls == nil {
		return Impls
	}
	return c.Impls
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	if len(c.Workers) == 0 {
		return errors.New("no worker counts")
	}
	for _, w := range c.Workers {
		if w <= 0 {
			return fmt.Errorf("workers %d must be positive", w)
		}
	}
	return checkImpls(c.impls(), Impls, c.Count)
}

// checkImpls reports the first problem with a sweep's implementations, of
// known (three of them), and its count of rounds.
func checkImpls(impls, known []string, count int) error {
	if len(impls) == 0 {
		return errors.New("no implementations")
	}
	for _, impl := range impls {
		if !slices.Contains(known, impl) {
			return fmt.Errorf("unknown implementation %q (want %s, %s or %s)", impl, known[0], known[1], known[2])
		}
	}
	if count < 0 {
		return fmt.Errorf("count %d must not be negative", count)
	}
	return nil
}

// Result is what a Sweep measured: every run, in the order they ran, and
// the configuration lines the peer printed (its versions and settings;
// nil if torch was not measured).
type Result struct {
	Measurements []Measurement
	PeerConfig   []resultfile.Config
}

// alternate is the loop of an alternating sweep (Sweep, LadderSweep,
// RemoteSweep): for each of count rounds (at least one) and each point,
// every implementation once, back to back, in the order rotated by one
// from each such group to the next, so that none always runs first (after
// a cool machine) or last. It stops at the first error of run or when ctx
// is done.
func alternate[P any](ctx context.Context, count int, points []P, impls []string, run func(round int, p P, impl string) error) error {
	turn := 0
	for round := range max(count, 1) {
		for _, p := range points {
			k := turn % len(impls)
			turn++
			for _, impl := range slices.Concat(impls[k:], impls[:k]) {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := run(round, p, impl); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// peerConfig keeps the configuration lines of the peer's first run.
func peerConfig(kept *[]resultfile.Config, config []resultfile.Config) {
	if *kept == nil {
		*kept = config
	}
}

// Sweep measures every implementation at every worker count, Count times,
// alternating (for each round and worker count, each implementation once,
// the order rotated from one such group to the next: alternate). Ours are
// measured by loadbench.Measure
// (the goroutine loader at level none), the peer by Peer.Run. each, if not
// nil, is called after every run. On error the runs so far are returned
// with it.
func Sweep(ctx context.Context, c Config, each func(Measurement)) (Result, error) {
	var res Result
	if err := c.Validate(); err != nil {
		return res, err
	}
	err := alternate(ctx, c.Count, c.Workers, c.impls(), func(round, w int, impl string) error {
		m, err := measure(ctx, c, &res, impl, w)
		if err != nil {
			return fmt.Errorf("round %d, %s, workers=%d: %w", round+1, impl, w, err)
		}
		res.Measurements = append(res.Measurements, m)
		if each != nil {
			each(m)
		}
		return nil
	})
	return res, err
}

// measure runs impl once at w workers; the peer's first run sets
// res.PeerConfig.
func measure(ctx context.Context, c Config, res *Result, impl string, w int) (Measurement, error) {
	if impl == Torch {
		out, err := c.Peer.Run(ctx, c.Settings, []int{w})
		if err != nil {
			return Measurement{}, err
		}
		peerConfig(&res.PeerConfig, out.Config)
		return out.Results[0], nil
	}
	return measureOurs(ctx, c.Settings, impl, w)
}

// measureOurs runs our goroutine loader (loadbench.Measure at level none)
// once with impl's transforms at w workers.
func measureOurs(ctx context.Context, s Settings, impl string, w int) (Measurement, error) {
	bc := loadbench.Config{Pipeline: s.Pipeline(impl, w), Batches: s.Batches}
	lm, err := loadbench.Measure(ctx, bc, loadbench.Point{Mode: loadbench.Goroutine, Workers: w})
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{Impl: impl, Workers: w, Batches: lm.Batches, TTFB: lm.TTFB, SamplesPerSec: lm.SamplesPerSec, CPU: lm.CPU}, nil
}
