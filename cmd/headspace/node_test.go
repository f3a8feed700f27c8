package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// tinyNode is a node small enough for -race.
var tinyNode = []string{"--raw-size", "48", "--crop", "16", "--batch", "4", "--step", "2ms", "--steps", "3", "--warmup", "1"}

// TestNodeCommand: a node sweep writes every point's records (each rank's
// and the node's, at both levels), prints the answer, resumes without
// measuring again, refuses a file of another setup, and --from rebuilds
// the table, the report and the plot.
func TestNodeCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "node.txt")
	args := append([]string{"node", "--accelerators", "1,2", "--out", out}, tinyNode...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "node-max-accelerators: ") || !strings.Contains(stdout, "runs out first: ") {
		t.Errorf("no answer printed:\n%s", stdout)
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range recs {
		names[string(r.Name)] = true
	}
	for _, want := range []string{
		"Node/accelerators=1/level=none", "Node/accelerators=1/level=none/rank=0", "Node/accelerators=1/level=host",
		"Node/accelerators=2/level=none", "Node/accelerators=2/level=none/rank=1", "Node/accelerators=2/level=host/rank=0",
	} {
		if !names[want+"-"+goMaxProcs()] {
			t.Errorf("no record %s in %v", want, names)
		}
	}
	if len(recs) != 2*(2+3) {
		t.Errorf("%d records, want 10 (2 levels × (1+1 and 2+1))", len(recs))
	}
	// Resumed: nothing left to measure, the same records.
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	if again, _ := resultfile.Read(out); len(again) != len(recs) {
		t.Errorf("resume measured again: %d records, had %d", len(again), len(recs))
	}
	// Another setup is refused.
	other := append([]string{"node", "--accelerators", "1", "--out", out}, tinyNode...)
	other = append(other, "--batch", "2")
	if code, _, stderr := runCLI(other...); code != 2 {
		t.Errorf("a file of another setup: exit %d, want 2: %s", code, stderr)
	}
	report, plot := filepath.Join(dir, "node.md"), filepath.Join(dir, "node.png")
	code, stdout, stderr = runCLI("node", "--from", out, "--report", report, "--plot", plot, "--min-au", "0.01")
	if code != 0 {
		t.Fatalf("--from: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "node-max-accelerators: 2") {
		t.Errorf("--from at --min-au 0.01: want both counts kept busy:\n%s", stdout)
	}
	for _, p := range []string{report, plot} {
		if !exists(p) {
			t.Errorf("%s not written", p)
		}
	}
}

// TestNodeRefusesBeforeStarting: an N the cores or the memory cannot
// hold is refused in one line, exit 2, before anything runs.
func TestNodeRefusesBeforeStarting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--accelerators", "1024", "--workers", "64"}, "threads on"},
		{[]string{"--accelerators", "32", "--raw-size", "16384", "--crop", "16", "--workers", "1", "--batch", "64"}, "memory"},
		{[]string{"--accelerators", "0"}, "--accelerators"},
		{[]string{"--min-au", "1.5"}, "--min-au"},
		{[]string{"--levels", "raw"}, "a node runs none"},
		{[]string{"--device", "cuda"}, "emulated"},
	} {
		code, _, stderr := runCLI(append(append([]string{"node"}, tinyNode...), tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestNodeShardsMerge: two Slurm array tasks, one node each, merge into
// the file one run would write.
func TestNodeShardsMerge(t *testing.T) {
	dir := t.TempDir()
	var shards []string
	for i := range 2 {
		out := filepath.Join(dir, "shard"+string(rune('0'+i))+".txt")
		args := append([]string{"node", "--accelerators", "1,2", "--levels", "none", "--shard", string(rune('0'+i)) + "/2", "--out", out}, tinyNode...)
		if code, _, stderr := runCLI(args...); code != 0 {
			t.Fatalf("shard %d: exit %d: %s", i, code, stderr)
		}
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged.txt")
	code, stdout, stderr := runCLI(append([]string{"merge", "--out", merged}, shards...)...)
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	recs, err := resultfile.Read(merged)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2+3 {
		t.Errorf("merged %d records, want 5:\n%s", len(recs), stdout)
	}
	// One shard alone is refused: the other node is missing.
	if code, _, _ := runCLI("merge", "--out", filepath.Join(dir, "one.txt"), shards[0]); code == 0 {
		t.Error("merging one shard of two succeeded")
	}
}

// goMaxProcs is the records' GOMAXPROCS suffix.
func goMaxProcs() string { return strconv.Itoa(runtime.GOMAXPROCS(0)) }

// exists says whether path is a file.
func exists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// TestWhatIfAccelerators: whatif --accelerators predicts AU per count
// from one rank, --verify measures each count beside it, --out keeps
// both, and --from prints the same from the file alone.
func TestWhatIfAccelerators(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "whatif-node.txt")
	args := append([]string{"whatif", "--accelerators", "1,2", "--verify", "--count", "1", "--workers", "1", "--out", out}, tinyNode...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"predicted-au", "median error on AU over 2 accelerator counts", "predicted node-max-accelerators: ", "runs out first: ", "would take:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in:\n%s", want, stdout)
		}
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range recs {
		kinds[strings.SplitN(string(r.Name), "/", 2)[0]]++
	}
	// The profile (1 rank and the node), the verify runs (1+1 and 2+1),
	// the predictions (2).
	if kinds["NodeWhatIfProfile"] != 2 || kinds["Node"] != 5 || kinds["NodeWhatIf"] != 2 {
		t.Errorf("records by kind %v, want NodeWhatIfProfile 2, Node 5, NodeWhatIf 2", kinds)
	}
	code, again, stderr := runCLI("whatif", "--from", out)
	if code != 0 {
		t.Fatalf("--from: exit %d: %s", code, stderr)
	}
	cut := func(s string) string { return s[:strings.Index(s, "results: ")] }
	if !strings.Contains(stdout, "results: ") || cut(stdout) != again {
		t.Errorf("--from differs from the run:\n%s\n---\n%s", stdout, again)
	}
}

// TestNodeOnDisk: the ranks read a dataset on disk, and the node's
// record says how many bytes a second they read.
func TestNodeOnDisk(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	if code, _, stderr := runCLI("dataset", "write", "--out", ds, "--n", "64", "--raw-size", "48", "--format", "jpeg"); code != 0 {
		t.Fatalf("dataset write: exit %d: %s", code, stderr)
	}
	out := filepath.Join(dir, "node.txt")
	code, _, stderr := runCLI("node", "--accelerators", "2", "--levels", "none", "--data", ds, "--crop", "16", "--batch", "4",
		"--step", "2ms", "--steps", "3", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if string(r.Name) != "Node/accelerators=2/level=none-"+goMaxProcs() {
			continue
		}
		if v, ok := resultfile.Value(r, "bytes/s"); !ok || v <= 0 {
			t.Errorf("the node read no bytes: %v", r.Values)
		}
		return
	}
	t.Errorf("no node record in %d records", len(recs))
}

// TestNodePeer: with --peer the PyTorch DDP peer (Debian's python3-torch,
// ci/deps.sh) runs every point after ours, its records beside ours, its
// table and answer printed; --from prints them again.
func TestNodePeer(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "node.txt")
	args := append([]string{"node", "--accelerators", "2", "--levels", "none", "--peer", "--peer-script", filepath.Join("..", "..", "peers", "torch", "node.py"), "--out", out}, tinyNode...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "the PyTorch DDP peer") || !strings.Contains(stdout, "peer node-max-accelerators: ") {
		t.Errorf("no peer table or answer:\n%s", stdout)
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	torch := 0
	for _, r := range recs {
		if strings.HasPrefix(string(r.Name), "NodeTorch/accelerators=2/level=none") {
			torch++
			if v, ok := resultfile.Value(r, "au"); !ok || !(v > 0 && v <= 1.01) {
				t.Errorf("%s: au %v", r.Name, v)
			}
		}
	}
	if torch != 3 {
		t.Errorf("%d peer records, want 3 (2 ranks and the node)", torch)
	}
	code, again, _ := runCLI("node", "--from", out)
	if code != 0 || !strings.Contains(again, "peer node-max-accelerators: ") {
		t.Errorf("--from: exit %d:\n%s", code, again)
	}
}
