package peer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/peer"
)

func TestSweepAlternates(t *testing.T) {
	c := peer.Config{
		Peer:     peer.Peer{Python: sh(t), Script: "testdata/fake.sh"},
		Settings: tiny(),
		Workers:  []int{1, 2},
		Count:    2,
	}
	var seen []string
	res, err := peer.Sweep(context.Background(), c, func(m peer.Measurement) {
		seen = append(seen, m.BenchName())
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each group of three is one round at one worker count; the order
	// turns by one from group to group.
	want := []string{
		"impl=naive/workers=1", "impl=fast/workers=1", "impl=torch/workers=1",
		"impl=fast/workers=2", "impl=torch/workers=2", "impl=naive/workers=2",
		"impl=torch/workers=1", "impl=naive/workers=1", "impl=fast/workers=1",
		"impl=naive/workers=2", "impl=fast/workers=2", "impl=torch/workers=2",
	}
	if len(res.Measurements) != len(want) || len(seen) != len(want) {
		t.Fatalf("%d measurements, %d callbacks, want %d", len(res.Measurements), len(seen), len(want))
	}
	for i, w := range want {
		if got := res.Measurements[i].BenchName(); got != "BenchmarkPeer/"+w || seen[i] != got {
			t.Errorf("run %d: %s (callback %s), want BenchmarkPeer/%s", i, got, seen[i], w)
		}
		m := res.Measurements[i]
		if m.Batches != 3 || m.SamplesPerSec <= 0 || m.TTFB <= 0 {
			t.Errorf("run %d: %+v: want 3 batches, a throughput and a time to first batch", i, m)
		}
	}
	if got := res.Measurements[2]; got.SamplesPerSec != 100.5 {
		t.Errorf("torch at 1 worker: %+v, want the fake script's 100.5 samples/s", got)
	}
	if v := (peer.Output{Config: res.PeerConfig}).Get("torch"); v != "0.0.0-fake" {
		t.Errorf("peer config %v: want the script's torch version", res.PeerConfig)
	}
}

func TestSweepOursOnlyNeedsNoPeer(t *testing.T) {
	c := peer.Config{
		Peer:     peer.Peer{Python: "/nonexistent/python3", Script: "nonexistent.py"},
		Settings: tiny(),
		Workers:  []int{2},
		Impls:    []string{peer.Fast},
	}
	res, err := peer.Sweep(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Measurements) != 1 || res.Measurements[0].Impl != peer.Fast || res.PeerConfig != nil {
		t.Errorf("%+v: want one fast run and no peer configuration", res)
	}
}

func TestSweepErrors(t *testing.T) {
	ok := peer.Config{Peer: peer.Peer{Python: sh(t), Script: "testdata/fake.sh"}, Settings: tiny(), Workers: []int{1}}
	for _, tc := range []struct {
		name string
		edit func(*peer.Config)
		want string
	}{
		{"no workers", func(c *peer.Config) { c.Workers = nil }, "no worker counts"},
		{"zero workers", func(c *peer.Config) { c.Workers = []int{1, 0} }, "workers 0 must be positive"},
		{"unknown impl", func(c *peer.Config) { c.Impls = []string{"jax"} }, `unknown implementation "jax"`},
		{"no impls", func(c *peer.Config) { c.Impls = []string{} }, "no implementations"},
		{"negative count", func(c *peer.Config) { c.Count = -1 }, "count -1"},
		{"bad settings", func(c *peer.Config) { c.Settings.Batches = 1 }, "batches 1"},
		{"failing peer", func(c *peer.Config) { c.Peer.Script = "testdata/fail.sh"; c.Impls = []string{peer.Torch} },
			"round 1, torch, workers=1: peer testdata/fail.sh (workers=1): exit status 1: RuntimeError"},
	} {
		c := ok
		tc.edit(&c)
		_, err := peer.Sweep(context.Background(), c, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestSweepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := peer.Config{Peer: peer.Peer{Python: sh(t), Script: "testdata/fake.sh"}, Settings: tiny(), Workers: []int{1, 2}, Count: 3}
	n := 0
	res, err := peer.Sweep(ctx, c, func(peer.Measurement) {
		if n++; n == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if len(res.Measurements) != 2 {
		t.Errorf("%d measurements returned, want the 2 made before the cancellation", len(res.Measurements))
	}
}
