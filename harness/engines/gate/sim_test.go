package gate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/internal/disturb"
)

// simMachine is a deterministic model of a shared machine on which a
// paired session runs, for testing the method, not the code:
//
//   - each round has a log-normal factor shared by both its runs (the
//     machine's slow drifts: another build for minutes, a warmer CPU),
//     sigma RoundSigma;
//   - each run has its own log-normal factor, sigma RunSigma;
//   - now and then (a chance of WindowP at each run) a slow window opens
//     for 1 to WindowMax runs, in which the CPU-bound benchmark's wall
//     time is 25% longer (CPU time 3%) and the I/O-bound one's 5%; a
//     window is seen in the run's run-queue delay with chance Detect
//     (else the delay looks ordinary);
//   - the head's CPU-bound benchmark is slower by Effect (0.10 for 10%)
//     in both wall and CPU time.
//
// Two benchmarks run: level=raw, CPU-bound (CPU time 90% of wall), and
// level=device, waiting on the device (CPU time 5% of wall).
type simMachine struct {
	rng             *rand.Rand
	RoundSigma      float64
	RunSigma        float64
	WindowP, Detect float64
	WindowMax       int
	Effect          float64
	left            int
	roundFactor     float64
	lastRound       int
}

func newSim(seed uint64, effect float64) *simMachine {
	return &simMachine{rng: rand.New(rand.NewPCG(seed, 7)), RoundSigma: 0.05, RunSigma: 0.03,
		WindowP: 0.08, WindowMax: 3, Detect: 0.5, Effect: effect}
}

func (m *simMachine) lognormal(sigma float64) float64 { return math.Exp(sigma * m.rng.NormFloat64()) }

func (m *simMachine) run(round int, side PairSide) []*benchfmt.Result {
	if round != m.lastRound {
		m.lastRound, m.roundFactor = round, m.lognormal(m.RoundSigma)
	}
	if m.left == 0 && m.rng.Float64() < m.WindowP {
		m.left = 1 + m.rng.IntN(m.WindowMax)
	}
	slow := m.left > 0
	if slow {
		m.left--
	}
	f := m.roundFactor * m.lognormal(m.RunSigma)
	delay := 1 + math.Abs(m.rng.NormFloat64())
	wallRaw, cpuRaw, wallDev := 10e-3*f, 9e-3*math.Sqrt(f), 20e-3*(1+(f-1)/5)
	if slow {
		wallRaw, cpuRaw, wallDev = wallRaw*1.25, cpuRaw*1.03, wallDev*1.05
		if m.rng.Float64() < m.Detect {
			delay = 25
		}
	}
	if side == Head {
		wallRaw, cpuRaw = wallRaw*(1+m.Effect), cpuRaw*(1+m.Effect)
	}
	res := func(name string, wall, cpu float64) *benchfmt.Result {
		return &benchfmt.Result{Name: benchfmt.Name(name), Iters: 1, Values: []benchfmt.Value{
			{Value: wall * 1e9, Unit: "ns/op"}, {Value: cpu * 1e9, Unit: disturb.CPUUnit}, {Value: delay, Unit: disturb.RunDelayUnit}}}
	}
	return []*benchfmt.Result{
		res("Ladder/level=raw-2", wallRaw, cpuRaw),
		res("Ladder/level=device-2", wallDev, 0.05*wallDev),
	}
}

// simulate runs n paired sessions on simulated machines (seeds from
// seed) with the head slower by effect, and returns how many failed.
func simulate(t *testing.T, n int, seed uint64, effect float64) (failed int) {
	t.Helper()
	for i := range n {
		m := newSim(seed+uint64(i), effect)
		s := Session{Seed: seed + uint64(i), Options: PairedOptions{Seed: uint64(i)},
			Run: func(ctx context.Context, round int, side PairSide) ([]*benchfmt.Result, error) {
				return m.run(round, side), nil
			}}
		out, err := s.RunSession(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if out.Failed() {
			failed++
		}
	}
	return failed
}

// TestPairedMethodAA: 1000 A/A sessions (the same code on both sides)
// on simulated shared machines with run-level factors and 25% slow
// windows: none fails.
func TestPairedMethodAA(t *testing.T) {
	if got := simulate(t, 1000, 1, 0); got != 0 {
		t.Errorf("%d of 1000 A/A sessions failed; want 0", got)
	}
}

// TestPairedMethodPower: a 10% slowdown of the CPU-bound benchmark fails
// at least 90% of sessions, a 5% slowdown at least half.
func TestPairedMethodPower(t *testing.T) {
	for _, tc := range []struct {
		effect float64
		want   float64
	}{{0.10, 0.90}, {0.05, 0.50}} {
		const n = 200
		got := simulate(t, n, 100_000, tc.effect)
		t.Logf("%+.0f%%: %d of %d sessions failed", 100*tc.effect, got, n)
		if float64(got)/n < tc.want {
			t.Errorf("%s slowdown: caught in %d of %d sessions; want at least %.0f%%", fmt.Sprintf("%.0f%%", 100*tc.effect), got, n, 100*tc.want)
		}
	}
}
