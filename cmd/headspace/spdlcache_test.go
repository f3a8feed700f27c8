package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSPDLCacheRefusedBeforeRunning: peer --spdl-cache's bad flags are
// one line and exit 2, before anything runs (no --out written).
func TestSPDLCacheRefusedBeforeRunning(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.txt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--spdl-cache", "--workers", "1,2"}, "--workers 1,2: --spdl-cache takes one worker count"},
		{[]string{"--spdl-cache", "--data", "/tmp"}, "--data does not apply to --spdl-cache"},
		{[]string{"--spdl-cache", "--peers", "spdl"}, "--spdl-cache and --peers are two comparisons: run them apart"},
		{[]string{"--steps-after", "8"}, "--steps-after does not apply to the loaders' comparison"},
		{[]string{"--spdl-cache", "--workers", "2", "--steps-after", "6"}, "want at least 7 steps in each phase"},
		{[]string{"--spdl-cache", "--batches", "6"}, "return-caches-after 6, steps-after 30: want at least 7 steps"},
		{[]string{"--spdl-cache", "--crop", "300"}, "--crop 300 must fit the 256x256 images"},
		{[]string{"--spdl-cache", "--script", "no/such/train.py"}, "--script: stat no/such/train.py"},
		{[]string{"--spdl-cache", "--script", "../../examples/own-loop/train_cachedataloader.py", "--python", filepath.Join(t.TempDir(), "nope")}, "run `make peers-env`"},
	} {
		code, _, stderr := runCLI(append(append([]string{"peer"}, tc.args...), "--out", out)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("peer %v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("peer %v: %s written (%v), want nothing run", tc.args, out, err)
		}
	}
}

// TestSPDLCacheFrom: peer --from on a --spdl-cache results file rebuilds
// its report (harness/spdlcache's golden one), and refuses the flags of a
// run.
func TestSPDLCacheFrom(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "r.md")
	code, out, stderr := runCLI("peer", "--from", "../../harness/spdlcache/testdata/results.txt", "--report", rep)
	if code != 0 {
		t.Fatalf("peer --from: exit %d\n%s\n%s", code, out, stderr)
	}
	got, _ := os.ReadFile(rep)
	want, err := os.ReadFile("../../harness/spdlcache/testdata/report.md")
	if err != nil || !strings.HasPrefix(string(got), string(want)) {
		t.Errorf("--from's report differs from harness/spdlcache/testdata/report.md (%v):\n%s", err, got)
	}
	if !strings.Contains(out, "| headspace analyze (`ours`) |") {
		t.Errorf("stdout lacks the table:\n%s", out)
	}
	if code, _, stderr := runCLI("peer", "--from", "../../harness/spdlcache/testdata/results.txt", "--workers", "2"); code != 2 || !strings.Contains(stderr, "--workers") {
		t.Errorf("peer --from with --workers: exit %d, %q; want 2 naming --workers", code, stderr)
	}
}

// TestPeerFromByCodec: peer --from sends a file to the experiment whose
// codec owns its records' benchmark, whatever the bytes around them: a
// --spdl-cache file whose first line is its record (no configuration
// line before it) is still the side-by-side's, and a file of no peer
// experiment's benchmark is refused naming the loaders' comparison's.
func TestPeerFromByCodec(t *testing.T) {
	dir := t.TempDir()
	bare := filepath.Join(dir, "bare.txt")
	if err := os.WriteFile(bare, []byte("BenchmarkRealPeerHeadspace/peer=ours/workers=2 70 100 step-ns 50 cached-step-ns 50 headspace-%\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI("peer", "--from", bare)
	if code != 0 || !strings.Contains(out, "| headspace analyze (`ours`) |") {
		t.Errorf("peer --from %s: exit %d, stdout %q, stderr %q; want the side-by-side's table", bare, code, out, stderr)
	}
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, []byte("cores: 2\n\nBenchmarkLadder/level=none/workers=1/transforms=fast 1 1 ns/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("peer", "--from", other); code != 2 || !strings.Contains(stderr, "not a record of Peer") {
		t.Errorf("peer --from a ladder file: exit %d, %q; want 2, not a record of Peer", code, stderr)
	}
}
