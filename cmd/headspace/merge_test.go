package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// shardedLadder is a tiny three-point ladder, run as shard i/n into out.
func shardedLadder(t *testing.T, out string, shard string, extra ...string) {
	t.Helper()
	args := append([]string{"ladder", "--workers", "1", "--transforms", "fast", "--levels", "device,host,sample", "--out", out}, tinyLadder...)
	if shard != "" {
		args = append(args, "--shard", shard)
	}
	if code, _, stderr := runCLI(append(args, extra...)...); code != 0 {
		t.Fatalf("ladder --shard %q: exit %d: %s", shard, code, stderr)
	}
}

// names and config of a results file: what must match between a merged
// file and a single-process run.
func namesAndConfig(t *testing.T, path string) ([]string, []string) {
	t.Helper()
	rs, err := resultfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var names, cfg []string
	for _, r := range rs {
		names = append(names, string(r.Name))
	}
	for _, c := range rs[0].Config {
		if c.File {
			cfg = append(cfg, c.Key+": "+string(c.Value))
		}
	}
	return names, cfg
}

// Three shards merge into the file a single-process run writes: the same
// points in the same order, the same configuration lines.
func TestMergeEqualsSingleRun(t *testing.T) {
	dir := t.TempDir()
	var shards []string
	for i := range 3 {
		s := filepath.Join(dir, fmt.Sprintf("shard-%d.txt", i))
		shardedLadder(t, s, fmt.Sprintf("%d/3", i))
		shards = append(shards, s)
	}
	merged, single := filepath.Join(dir, "merged.txt"), filepath.Join(dir, "single.txt")
	code, stdout, stderr := runCLI(append([]string{"merge", "--out", merged}, shards...)...)
	if code != 0 || !strings.Contains(stdout, "merged 3 results of 3 points from 3 shard files") {
		t.Fatalf("merge: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	shardedLadder(t, single, "")
	mn, mc := namesAndConfig(t, merged)
	sn, sc := namesAndConfig(t, single)
	if !slices.Equal(mn, sn) {
		t.Errorf("merged points %v\nsingle run's %v", mn, sn)
	}
	if !slices.Equal(mc, sc) {
		t.Errorf("merged config %v\nsingle run's %v", mc, sc)
	}
	// Merging again replaces the merged file (a results file).
	if code, _, stderr := runCLI(append([]string{"merge", "--out", merged}, shards...)...); code != 0 {
		t.Errorf("second merge over the merged file: exit %d: %s", code, stderr)
	}

	// Shards taken on a busy machine differ in exactly their
	// machine-busy lines, which describe the session, not the setup
	// (issue 41: CI's cluster test failed on this): they still merge,
	// and the merged file keeps each shard's line.
	for i, pressure := range []string{"59", "98"} {
		b, err := os.ReadFile(shards[i])
		if err != nil {
			t.Fatal(err)
		}
		line := resultfile.BusyKey + ": cpu pressure " + pressure + "% after waiting 30s\n"
		at := strings.Index(string(b), "\nBenchmark") + 1
		if err := os.WriteFile(shards[i], []byte(string(b[:at])+line+string(b[at:])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	busy := filepath.Join(dir, "busy.txt")
	if code, _, stderr := runCLI(append([]string{"merge", "--out", busy}, shards...)...); code != 0 {
		t.Fatalf("merge of shards that differ only in machine-busy: exit %d: %s", code, stderr)
	}
	bn, bc := namesAndConfig(t, busy)
	wantBusy := resultfile.BusyKey + ": shard-0.txt: cpu pressure 59% after waiting 30s; shard-1.txt: cpu pressure 98% after waiting 30s"
	if !slices.Equal(bn, sn) || !slices.Contains(bc, wantBusy) {
		t.Errorf("busy shards merged to points %v, config %v; want the single run's points and the line %q", bn, bc, wantBusy)
	}
	if rest := slices.DeleteFunc(bc, func(s string) bool { return s == wantBusy }); !slices.Equal(rest, sc) {
		t.Errorf("busy shards' merged config but machine-busy %v\nsingle run's %v", rest, sc)
	}
}

func TestMergeCLIRefuses(t *testing.T) {
	dir := t.TempDir()
	s := func(name string) string { return filepath.Join(dir, name) }
	for i := range 3 {
		shardedLadder(t, s(fmt.Sprintf("s%d.txt", i)), fmt.Sprintf("%d/3", i))
	}
	shardedLadder(t, s("steps.txt"), "1/3", "--steps", "3")        // another setup
	shardedLadder(t, s("pinned.txt"), "1/3", "--pinned-gbps", "5") // another device setting
	shardedLadder(t, s("two.txt"), "1/2")                          // another sharding
	shardedLadder(t, s("single.txt"), "")                          // not sharded
	shardedLadder(t, s("again.txt"), "1/3")                        // shard 1 twice
	if err := os.WriteFile(s("notes.txt"), []byte("my notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := s("merged.txt")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"another setup", []string{s("s0.txt"), s("steps.txt"), s("s2.txt")}, 1,
			[]string{"different setups", `steps: "2" in ` + s("s0.txt") + `, "3" in ` + s("steps.txt")}},
		{"another device setting", []string{s("s0.txt"), s("pinned.txt"), s("s2.txt")}, 1,
			[]string{`emulated-pinned-gbps: "24" in`}},
		{"another sharding", []string{s("s0.txt"), s("two.txt")}, 1, []string{`shards: "3" in`, `"2" in ` + s("two.txt")}},
		{"not sharded", []string{s("single.txt")}, 1, []string{`no "sweep" configuration line`, "--shard i/n"}},
		{"duplicate shard", []string{s("s0.txt"), s("s1.txt"), s("again.txt"), s("s2.txt")}, 1,
			[]string{"duplicate points", "Ladder/level=host/workers=1/transforms=fast/placement=host/pinned=true in " + s("s1.txt") + " and " + s("again.txt")}},
		{"same file twice", []string{s("s0.txt"), s("s0.txt")}, 1, []string{"is given twice"}},
		{"missing shard", []string{s("s0.txt"), s("s2.txt")}, 1,
			[]string{"1 of 3 points missing", "Ladder/level=host/workers=1/transforms=fast/placement=host/pinned=true (shard 1/3)", "--partial"}},
		{"unreadable shard", []string{s("s0.txt"), s("nope.txt")}, 1, []string{"reading shard", s("nope.txt")}},
		{"not a results file", []string{s("s0.txt"), s("notes.txt")}, 1, []string{s("notes.txt") + " holds no benchmark results"}},
		{"no shards", nil, 2, []string{"no shard files"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(append([]string{"merge", "--out", out}, tc.args...)...)
			if code != tc.code || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want %d and one line", code, stderr, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a refused merge wrote --out")
			}
		})
	}
	// The output policy: never over a file that is not a results file,
	// never over a shard.
	for _, tc := range []struct {
		out, want string
	}{
		{s("notes.txt"), "not a results file"},
		{s("s0.txt"), "is one of the shard files"},
		{"", "--out is required"},
		{filepath.Join(dir, "no-such-dir", "m.txt"), "no-such-dir"},
	} {
		code, _, stderr := runCLI("merge", "--out", tc.out, s("s0.txt"), s("s1.txt"), s("s2.txt"))
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("--out %q: exit %d, stderr %q; want 2 saying %q", tc.out, code, stderr, tc.want)
		}
	}
	if b, _ := os.ReadFile(s("notes.txt")); string(b) != "my notes\n" {
		t.Error("merge changed notes.txt")
	}
	// --partial (after the files) writes what there is and says what it lacks.
	code, stdout, stderr := runCLI("merge", "--out", out, s("s0.txt"), s("s2.txt"), "--partial")
	if code != 0 || !strings.Contains(stdout, "partial: 1 of 3 points missing") {
		t.Fatalf("--partial: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	rs, err := resultfile.Read(out)
	if err != nil || len(rs) != 2 {
		t.Fatalf("partial file: %d results, %v; want 2", len(rs), err)
	}
	if got := rs[0].GetConfig("partial"); got != "1 of 3 points missing or short of runs: Ladder/level=host/workers=1/transforms=fast/placement=host/pinned=true" {
		t.Errorf("partial line %q", got)
	}
}
