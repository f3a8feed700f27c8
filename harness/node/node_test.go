package node

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/barrier"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// faultEnv makes a self rank fail: "die:R:S" exits rank R before step S,
// "hang:R:S" blocks it there forever, "stall:R:S:D" sleeps there for
// duration D; R "all" is every rank.
const faultEnv = "HEADSPACE_TEST_RANK_FAULT"

func TestMain(m *testing.M) {
	if f := os.Getenv(faultEnv); f != "" {
		parts := strings.Split(f, ":")
		r, err := strconv.Atoi(parts[1])
		if err != nil {
			r = -1 // all
		}
		s, _ := strconv.Atoi(parts[2])
		beforeStep = func(rank, step int) {
			if rank != r && r != -1 || step != s {
				return
			}
			if parts[0] == "die" {
				os.Stderr.WriteString("injected death\n")
				os.Exit(3)
			}
			if parts[0] == "stall" {
				d, _ := time.ParseDuration(parts[3])
				time.Sleep(d)
				return
			}
			select {} // hang
		}
	}
	ServeIfSelfRank()
	goleak.VerifyTestMain(m)
}

// tiny is a pipeline small enough for -race.
func tiny() loader.Config {
	c := loader.DefaultConfig()
	c.Dataset.Width, c.Dataset.Height = 48, 48
	c.Transforms.Crop, c.Batch, c.Workers = 16, 4, 1
	return c
}

func options(ranks int, fault string) Options {
	exe, args, env := SelfRank()
	if fault != "" {
		env = append(env, faultEnv+"="+fault)
	}
	dev := device.DefaultEmulated()
	dev.Step, dev.Pinned = 2*time.Millisecond, true
	return Options{Exe: exe, Args: args, Env: env, Ranks: ranks, Level: level.None, Pipeline: tiny(),
		Device: dev, Steps: 6, Warmup: 1, Timeout: time.Minute}
}

// TestNodeRuns: three ranks step together through every step, each
// sends its result, and the records name the node and every rank; over
// the shared-memory barrier (where it exists) and over pipes.
func TestNodeRuns(t *testing.T) {
	for _, mech := range []string{"", BarrierPipe} {
		t.Run("barrier="+mech, func(t *testing.T) { testNodeRuns(t, mech) })
	}
}

func testNodeRuns(t *testing.T, mech string) {
	opt := options(3, "")
	opt.Barrier = mech
	o, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Ranks) != 3 || o.Released != 7 {
		t.Fatalf("ranks %d, released %d; want 3 and 7 (6 steps after 1 warm-up)", len(o.Ranks), o.Released)
	}
	for i, r := range o.Ranks {
		if r.Rank != i || r.Steps != 6 || r.Batch != 4 || r.Wall <= 0 || r.Compute != 6*2*time.Millisecond {
			t.Errorf("rank %d: %+v", i, r)
		}
		if au := r.AU(); !(au > 0 && au <= 1.01) {
			t.Errorf("rank %d: AU %v out of (0, 1]", i, au)
		}
	}
	p := Point{Accelerators: 3, Level: level.None}
	recs := Records(p, o, Others{Cores: 0.5, Threads: 1.5}, 0)
	if len(recs) != 4 {
		t.Fatalf("%d records, want 3 ranks and the node", len(recs))
	}
	for i, want := range []string{p.RankName(0), p.RankName(1), p.RankName(2), p.Name()} {
		if !strings.HasPrefix(string(recs[i].Name), "Benchmark"+want+"-") {
			t.Errorf("record %d: %s, want %s", i, recs[i].Name, want)
		}
	}
	node := recs[3]
	for _, unit := range []string{"samples/s", "steps/s", UnitAU, UnitAUMin, UnitInputWait, disturb.OtherCoresUnit, UnitOtherThreads} {
		if _, ok := resultfile.Value(node, unit); !ok {
			t.Errorf("node record has no %s: %v", unit, node.Values)
		}
	}
}

// TestRankDies: a rank that exits stops the others at once; the error
// names it, its status and its stderr, and no rank is left.
func TestRankDies(t *testing.T) {
	start := time.Now()
	o, err := Run(context.Background(), options(3, "die:1:3"))
	if err == nil || !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), "status 3") || !strings.Contains(err.Error(), "injected death") {
		t.Fatalf("Run = %v, want rank 1's death with its status and stderr", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v", took)
	}
	if len(o.Ranks) != 0 || o.Released < 3 {
		t.Errorf("outcome %+v: want no results and the 3 steps released before the death", o)
	}
	noChildren(t)
}

// TestRankHangs: a rank that never reaches the barrier is named by its
// timeout, over either barrier; a rank that dies is named over pipes too.
func TestRankHangs(t *testing.T) {
	for _, mech := range []string{"", BarrierPipe} {
		opt := options(3, "hang:2:2")
		// Longer than the ranks' start, which the watch of step 0 counts.
		opt.Timeout, opt.Barrier = 3*time.Second, mech
		_, err := Run(context.Background(), opt)
		if !errors.Is(err, barrier.ErrTimeout) || !strings.Contains(err.Error(), "rank 2 did not reach") {
			t.Errorf("barrier %q: Run = %v, want the barrier's timeout naming rank 2", mech, err)
		}
		noChildren(t)
	}
	opt := options(3, "die:0:2")
	opt.Barrier = BarrierPipe
	if _, err := Run(context.Background(), opt); err == nil || !strings.Contains(err.Error(), "rank 0") {
		t.Errorf("pipes, rank 0 dies: Run = %v", err)
	}
	noChildren(t)
}

// TestEveryRankHangs: a step that no rank reaches (a node of one rank
// that hangs, or every rank stalled together) is named by the barrier's
// timeout from the release before, over either barrier, naming every
// rank; the watch used to start at a step's first arrival, and waited
// for ever (issue 52).
func TestEveryRankHangs(t *testing.T) {
	for _, tc := range []struct {
		ranks int
		fault string
		want  string
	}{
		{1, "hang:0:2", "step 2: no rank reached the all-reduce barrier within 3s of the step before's release: rank 0 hung"},
		{2, "hang:all:3", "step 3: no rank reached the all-reduce barrier within 3s of the step before's release: rank 0, rank 1 hung"},
		{2, "hang:all:0", "step 0: no rank reached the all-reduce barrier within 3s of the start: rank 0, rank 1 hung"},
	} {
		for _, mech := range []string{"", BarrierPipe} {
			opt := options(tc.ranks, tc.fault)
			// Longer than the ranks' start, which the watch of step 0 counts.
			opt.Timeout, opt.Barrier = 3*time.Second, mech
			// A liveness bound: the old watch never fired.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := Run(ctx, opt)
			cancel()
			if !errors.Is(err, barrier.ErrTimeout) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%d ranks, %s, barrier %q: Run = %v, want the barrier's timeout saying %q", tc.ranks, tc.fault, mech, err, tc.want)
			}
			noChildren(t)
		}
	}
}

// TestStallMarked: a rank that stalls for less than the barrier's
// timeout makes a point that finishes, and is marked: its node record
// holds the stall, its row says the time went to the barrier, and no
// profile (what runs out first) is read from it; a run that does not
// stall holds none (issue 52).
func TestStallMarked(t *testing.T) {
	p := Point{Accelerators: 2, Level: level.None}
	for _, mech := range []string{"", BarrierPipe} {
		opt := options(2, "stall:1:4:1500ms")
		opt.Barrier = mech
		o, err := Run(context.Background(), opt)
		if err != nil {
			t.Fatalf("barrier %q: %v", mech, err)
		}
		if o.Stall < time.Second { // the shared barrier's poll sees it up to a poll late
			t.Errorf("barrier %q: stall %v, want the 1.5 s wait", mech, o.Stall)
		}
		recs := Records(p, o, Others{Cores: -1, Threads: -1}, 0)
		if v, ok := resultfile.Value(recs[len(recs)-1], UnitStall); !ok || v != float64(o.Stall) {
			t.Errorf("barrier %q: the node record's %s is %v (%v), want %v", mech, UnitStall, v, ok, o.Stall)
		}
		row := Rows([]Figures{{Point: p, AU: 0.5, AUMin: 0.4, SamplesPerSec: 100, CPUPerSample: 1e6, Stall: o.Stall}})[0]
		var b strings.Builder
		if err := WriteTable(&b, []Row{row}, nil); err != nil || !strings.Contains(b.String(), "(a stall: one step took") {
			t.Errorf("barrier %q: the table does not mark the stall (%v):\n%s", mech, err, b.String())
		}
		if _, err := ProfileOf(row, 2, 4, 1, 2*time.Millisecond); err == nil || !strings.Contains(err.Error(), "stalled") {
			t.Errorf("barrier %q: ProfileOf a stalled row = %v, want it refused", mech, err)
		}
		noChildren(t)
	}
	o, err := Run(context.Background(), options(2, ""))
	if err != nil {
		t.Fatal(err)
	}
	if o.Stall != 0 {
		t.Errorf("a run with no stall: stall %v", o.Stall)
	}
}

// TestCancelKillsRanks: cancelling the context while ranks hang kills
// and reaps every one.
func TestCancelKillsRanks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := Run(ctx, options(2, "hang:0:1"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v", took)
	}
	noChildren(t)
}

func TestOptionsRefused(t *testing.T) {
	for _, o := range []Options{{Ranks: 0, Exe: "x", Steps: 1}, {Ranks: 1, Steps: 1}, {Ranks: 1, Exe: "x"}} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("Run(%+v) succeeded", o)
		}
	}
}
