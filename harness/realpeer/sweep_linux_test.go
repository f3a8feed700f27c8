//go:build linux

package realpeer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/membw"
	"github.com/headspace-bench/headspace/harness/peer"
)

// fakeConfig is a comparison of ours, on a small ImageFolder it writes,
// with stand-in peers: /bin/sh running testdata/fake's scripts.
func fakeConfig(t *testing.T, peers ...Peer) Config {
	t.Helper()
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()
	src := datasets.Synthetic{Width: 64, Height: 64, Classes: 10, N: 16, Seed: 1, Content: datasets.ContentNatural}
	f, err := WriteFolder(ctx, src, 90)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s := Settings{Data: f.Dir, Crop: 32, Batch: 4, Batches: 4, Seed: 1}
	ours := peer.Settings{Width: 64, Height: 64, Crop: s.Crop, Batch: s.Batch, Batches: s.Batches, Seed: 1}.Pipeline(transforms.Fast, 1)
	ours.Decoder = ondisk.DecoderGo
	if ours, err = ours.WithDataContext(ctx, f.Dir); err != nil {
		t.Fatal(err)
	}
	ours.Transforms.MaskRatio = 0
	return Config{Runner: Runner{Python: "/bin/sh", Dir: "testdata/fake"}, Settings: s, Ours: ours, Peers: peers, Workers: []int{1}, Count: 2}
}

// TestSweepPeerCrashKeepsOurs: a peer that crashes in every run has each
// run recorded as missing with its last line of stderr, and ours and the
// other peer are measured in every round all the same.
func TestSweepPeerCrashKeepsOurs(t *testing.T) {
	t.Setenv("PEER", "torch2")
	c := fakeConfig(t, Peer{Name: "torch2", Script: "ok.sh"}, Peer{Name: "dali", Script: "crash.sh"})
	var seen int
	ms, err := Sweep(context.Background(), c, func(Measurement) { seen++ })
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 6 || seen != 6 {
		t.Fatalf("%d runs (%d seen), want 3 sides × 2 rounds: %+v", len(ms), seen, ms)
	}
	count := map[string]int{}
	for _, m := range ms {
		switch {
		case m.Peer == "dali":
			if !strings.Contains(m.Missing, "peer dali: exit status 1: RuntimeError: decoder exploded") {
				t.Errorf("dali round %d: missing %q, want the exit and the exception", m.Round, m.Missing)
			}
		case m.Missing != "" || m.SamplesPerSec <= 0 || m.Batches != 4:
			t.Errorf("%s round %d: %+v, want a measured run of 4 batches", m.Peer, m.Round, m)
		}
		count[m.Peer]++
	}
	if count[Ours] != 2 || count["torch2"] != 2 || count["dali"] != 2 {
		t.Errorf("runs per side %v, want 2 each", count)
	}
	// The order rotates: round 1 starts with ours, round 2 with torch2.
	if ms[0].Peer != Ours || ms[3].Peer != "torch2" {
		t.Errorf("order %s, %s first; want ours then torch2", ms[0].Peer, ms[3].Peer)
	}
	if got := MissingConfig(ms); len(got) != 2 || got[0].Key != "missing-dali-w1-r1" {
		t.Errorf("MissingConfig = %v, want dali's two runs", got)
	}
}

// TestSweepInterruptStopsPeerGroup: when the context ends during a peer's
// run, the peer and the worker it started are killed at once, and the
// sweep returns the runs so far with the context's error.
func TestSweepInterruptStopsPeerGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "worker.pid")
	t.Setenv("PIDFILE", pidFile)
	c := fakeConfig(t, Peer{Name: "spdl", Script: "hang.sh"})
	c.Count = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for { // cancel once the peer's worker runs
			if _, err := os.Stat(pidFile); err == nil {
				time.Sleep(50 * time.Millisecond)
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	ms, err := Sweep(ctx, c, nil)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Sweep: %v, want context.Canceled", err)
	}
	if len(ms) != 1 || ms[0].Peer != Ours {
		t.Errorf("runs so far %+v, want ours'", ms)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Generous liveness bound: the worker is killed with its group, not
	// left to its 300 s sleep.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the peer's worker %d still runs after the sweep returned (in %v)", pid, took)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSweepLimit: with Limit set, after each round the limit is measured
// at each worker count: a positive copy bandwidth on as many goroutines as
// workers, and ours' stage times a sample, among them the decode's.
func TestSweepLimit(t *testing.T) {
	t.Setenv("PEER", "torch2")
	c := fakeConfig(t, Peer{Name: "torch2", Script: "ok.sh"})
	c.Workers = []int{1, 2}
	c.Copy = membw.Config{Buffer: 1 << 20, Reps: 2, Trials: 1}
	var ls []LimitRun
	c.Limit = func(l LimitRun) { ls = append(ls, l) }
	if _, err := Sweep(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 4 {
		t.Fatalf("%d limit runs, want 2 rounds × 2 worker counts: %+v", len(ls), ls)
	}
	for i, l := range ls {
		if want := []int{1, 2}[i%2]; l.Workers != want || l.Copy.Workers != want || l.Round != i/2+1 || !(l.Copy.BytesPerSec > 0) {
			t.Errorf("limit run %d: %+v, want workers %d, round %d, a bandwidth", i, l, want, i/2+1)
		}
		var decode bool
		for _, s := range l.Stages {
			decode = decode || (s.Stage == "decode" && s.PerSample > 0)
		}
		t.Logf("limit run %d: copy %.2f GB/s, stages %v", i, l.Copy.BytesPerSec/1e9, l.Stages)
		if !decode {
			t.Errorf("limit run %d: stages %+v, want the decode's time", i, l.Stages)
		}
		rec := l.Record()
		rec.Name = benchfmt.Name(strings.TrimPrefix(string(rec.Name), "Benchmark"))
		back, err := LimitOf(l.Workers, rec)
		if err != nil || back.Workers != l.Workers || back.Copy.BytesPerSec != l.Copy.BytesPerSec || len(back.Stages) != len(l.Stages) {
			t.Errorf("limit run %d reads back as %+v, %v", i, back, err)
		}
	}
}

// TestSweepPrepares: a peer that reads its own format has its script's
// --prepare run once, before its first run; one whose --prepare fails has
// every run recorded as missing with that failure, and ours and the
// other peer are measured all the same.
func TestSweepPrepares(t *testing.T) {
	t.Setenv("PEER", "streaming")
	mark := filepath.Join(t.TempDir(), "format")
	t.Setenv("MARK", mark)
	c := fakeConfig(t, Peer{Name: "streaming", Script: "prepare.sh", Prepare: true}, Peer{Name: "litdata", Script: "crash.sh", Prepare: true})
	ms, err := Sweep(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(mark); err != nil || string(b) != "prepared\n" {
		t.Errorf("streaming's format: %q, %v; want one --prepare", b, err)
	}
	count := map[string]int{}
	for _, m := range ms {
		count[m.Peer]++
		switch {
		case m.Peer == "litdata":
			if !strings.Contains(m.Missing, "prepare: peer litdata: exit status 1: RuntimeError: decoder exploded") {
				t.Errorf("litdata round %d: missing %q, want its --prepare's failure", m.Round, m.Missing)
			}
		case m.Missing != "" || m.SamplesPerSec <= 0:
			t.Errorf("%s round %d: %+v, want a measured run", m.Peer, m.Round, m)
		}
	}
	if count[Ours] != 2 || count["streaming"] != 2 || count["litdata"] != 2 {
		t.Errorf("runs per side %v, want 2 each", count)
	}
}
