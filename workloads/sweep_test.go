package workloads

import (
	"github.com/headspace-bench/headspace/harness/level"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/loader"
)

// LadderPlan reads ShardSettings back into the points and shards the
// sweep itself selects.
func TestLadderPlanRoundTrip(t *testing.T) {
	l := DefaultLadder()
	l.Levels = []level.Level{level.Raw, level.Device, level.None}
	l.Workers = []int{1, 4}
	l.Placements = []loader.Placement{loader.Host, loader.Device}
	l.Pinned = []bool{true, false}
	l.Count = 3
	const shards = 5
	cfg := map[string]string{}
	for _, c := range l.ShardSettings(shards) {
		cfg[c.Key] = c.Value
	}
	p, err := SweepPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Shards != shards || p.Count != 3 || len(p.Keys) != len(cfg) {
		t.Errorf("plan: %d shards, count %d, keys %v", p.Shards, p.Count, p.Keys)
	}
	points := l.Points()
	if len(p.Points) != len(points) {
		t.Fatalf("%d points, want %d", len(p.Points), len(points))
	}
	for s := range shards {
		sh := l
		sh.Shard, sh.Shards = s, shards
		sel := sh.Selected()
		var got []string
		for i, name := range p.Points {
			if p.Shard[i] == s {
				got = append(got, name)
			}
		}
		if len(got) != len(sel) {
			t.Fatalf("shard %d: %d points, the sweep selects %d", s, len(got), len(sel))
		}
		for i, pt := range sel {
			if got[i] != pt.Name() {
				t.Errorf("shard %d point %d: %s, the sweep selects %s", s, i, got[i], pt.Name())
			}
		}
	}
}

func TestSweepPlanRefuses(t *testing.T) {
	good := map[string]string{}
	for _, c := range DefaultLadder().ShardSettings(2) {
		good[c.Key] = c.Value
	}
	for _, tc := range []struct{ key, value, want string }{
		{"sweep", "", `no "sweep" configuration line`},
		{"sweep", "loaders", `sweep "loaders": merge knows ladder and node`},
		{"sweep-levels", "none,gpu", `sweep-levels "none,gpu": unknown level "gpu"`},
		{"sweep-workers", "0", `sweep-workers "0": 0 must be positive`},
		{"sweep-pinned", "yes", `sweep-pinned "yes"`},
		{"sweep-count", "0", `sweep-count "0"`},
		{"shards", "", `no "shards" configuration line`},
	} {
		cfg := map[string]string{}
		for k, v := range good {
			cfg[k] = v
		}
		if tc.value == "" {
			delete(cfg, tc.key)
		} else {
			cfg[tc.key] = tc.value
		}
		if _, err := SweepPlan(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: error %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
}
