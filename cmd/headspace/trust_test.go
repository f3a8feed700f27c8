package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// ladderInto runs a tiny ladder of the device level into out.
func ladderInto(out string, extra ...string) (int, string, string) {
	args := append([]string{"ladder", "--workers", "1", "--transforms", "fast", "--levels", "device", "--out", out}, tinyLadder...)
	return runCLI(append(args, extra...)...)
}

// Result files are written over only by result files of the same setup.
func TestOutRefusesWhatIsNoResultsFile(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":    "module example.com/x\n\ngo 1.26\n",
		"main.go":   "package main\n",
		"image.png": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			append([]string{"ladder", "--workers", "1", "--levels", "device", "--out", path}, tinyLadder...),
			{"loaders", "--workers", "1", "--raw-size", "32", "--crop", "16", "--batch", "2", "--batches", "3", "--out", path},
		} {
			code, _, stderr := runCLI(args...)
			if code != 2 || !strings.Contains(stderr, path) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("%s over %s: exit %d, stderr %q; want 2 and one line naming it", args[0], name, code, stderr)
			}
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("%s was changed", name)
		}
	}
}

// A resumed file must match every setting; the refusal names the keys.
func TestResumeRefusesAnotherSetup(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.txt")
	if code, _, stderr := ladderInto(out); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "3"}, `steps: "2" in file, now "3"`},
		{[]string{"--pinned-gbps", "0.5"}, `emulated-pinned-gbps: "24" in file, now "0.5"`},
		{[]string{"--seed", "7"}, `seed: "1" in file, now "7"`},
		{[]string{"--prefetch", "3"}, `prefetch: "2" in file, now "3"`},
	} {
		code, _, stderr := ladderInto(out, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "holds results of a different setup") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
	// 48 and 48x48 are one setting.
	if code, _, stderr := ladderInto(out, "--raw-size", "48x48", "--count", "2"); code != 0 {
		t.Errorf("--raw-size 48x48 after 48: exit %d: %s", code, stderr)
	}
}

// Shards that share one file take turns: one after the other, the second
// resumes the first's file, and every result is kept.
func TestShardsTakeTurns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "shared.txt")
	args := func(shard string) []string {
		return append([]string{"ladder", "--workers", "1", "--transforms", "fast", "--levels", "device,host", "--shard", shard, "--out", out}, tinyLadder...)
	}
	for _, s := range []string{"0/2", "1/2"} {
		if code, _, stderr := runCLI(args(s)...); code != 0 {
			t.Fatalf("shard %s: exit %d: %s", s, code, stderr)
		}
	}
	rs, err := resultfile.Read(out)
	if err != nil || len(rs) != 2 {
		t.Fatalf("the shared file holds %d results (%v), want both shards' 2", len(rs), err)
	}
}

// A second writer of a file being written exits 2 naming the holder.
func TestSecondWriterRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "busy.txt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := append([]string{"ladder", "--workers", "1", "--transforms", "fast", "--levels", "device", "--out", out}, tinyLadder...)
	args = append(args, "--count", "100000")
	done := make(chan int)
	go func() { done <- run(ctx, args, &bytes.Buffer{}, &bytes.Buffer{}) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if rs, err := resultfile.Read(out); err == nil && len(rs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first writer wrote nothing in 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	code, _, stderr := ladderInto(out)
	cancel()
	<-done
	if want := fmt.Sprintf("being written by another run (process %d)", os.Getpid()); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("second writer: exit %d, stderr %q; want 2 with %q", code, stderr, want)
	}
}

// --fresh keeps the old file until the first new result: interrupted
// before it, the old file is whole.
func TestFreshKeepsOldFileUntilFirstResult(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.txt")
	if code, _, stderr := ladderInto(out); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	before, _ := os.ReadFile(out)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // interrupted at once
	args := append([]string{"ladder", "--workers", "1", "--transforms", "fast", "--levels", "device", "--fresh", "--out", out}, tinyLadder...)
	if code := run(ctx, append(args, "--steps", "3"), &bytes.Buffer{}, &bytes.Buffer{}); code != 130 {
		t.Errorf("interrupted --fresh: exit %d, want 130", code)
	}
	if after, _ := os.ReadFile(out); !bytes.Equal(after, before) {
		t.Error("--fresh changed the old file before any new result")
	}
	if code, _, stderr := ladderInto(out, "--fresh", "--steps", "3"); code != 0 {
		t.Fatalf("--fresh: exit %d: %s", code, stderr)
	}
	if rs, err := resultfile.Read(out); err != nil || len(rs) != 1 || rs[0].GetConfig("steps") != "3" {
		t.Errorf("after --fresh the file holds %d results (%v), want the new one", len(rs), err)
	}
}

// Links are written through, devices in place.
func TestOutThroughLinksAndDevices(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("target.txt", link); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if code, _, stderr := ladderInto(link); code != 0 {
		t.Fatalf("--out link: exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if rs, err := resultfile.Read(target); err != nil || len(rs) != 1 {
		t.Errorf("the link's target holds %d results (%v)", len(rs), err)
	}
	before, _ := os.Stat(os.DevNull)
	if code, _, stderr := ladderInto(os.DevNull); code != 0 {
		t.Fatalf("--out %s: exit %d: %s", os.DevNull, code, stderr)
	}
	if after, err := os.Stat(os.DevNull); err != nil || after.Mode() != before.Mode() {
		t.Errorf("%s became %v", os.DevNull, after.Mode())
	}
}

// Output paths are checked before anything is measured: the refusal
// comes with nothing written (analyze would have written --out first).
func TestOutputsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", "--plot", filepath.Join(dir, "nonexist", "p"), "--out", filepath.Join(dir, "an.txt")}, "does not exist"},
		{[]string{"sim", "--gif", dir}, "is a directory"},
		{[]string{"loaders", "--cpuprofile", filepath.Join(dir, "no", "cpu.pprof")}, "does not exist"},
		{[]string{"whatif", "--report", dir}, "is a directory"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, ".tmp") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "an.txt")); err == nil {
		t.Error("analyze wrote its --out after refusing its --plot")
	}
}
