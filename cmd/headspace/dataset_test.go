package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
)

func TestDatasetBadInputExits2(t *testing.T) {
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ds")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dataset"}, "want a verb"},
		{[]string{"dataset", "read"}, `unknown verb "read"`},
		{[]string{"dataset", "write"}, "--out: want the dataset directory"},
		{[]string{"dataset", "write", "--out", out, "--n", "0"}, "--n 0: want 1 to 10000000"},
		{[]string{"dataset", "write", "--out", out, "--raw-size", "0"}, "must be positive"},
		{[]string{"dataset", "write", "--out", out, "--raw-size", "9000"}, "--raw-size 9000x9000: at most 8192x8192"},
		{[]string{"dataset", "write", "--out", out, "--format", "gif"}, `--format "gif"`},
		{[]string{"dataset", "write", "--out", out, "--quality", "0"}, "--quality 0: want 1 to 100"},
		{[]string{"dataset", "write", "--out", out, "--layout", "zip"}, `--layout "zip"`},
		{[]string{"dataset", "write", "--out", out, "--shard-size", "0"}, "--shard-size 0"},
		{[]string{"dataset", "write", "--out", out, "--workers", "-1"}, "--workers -1"},
		{[]string{"dataset", "write", "--out", out, "--classes", "0"}, "--classes 0"},
		{[]string{"dataset", "write", "--out", out, "extra"}, `unexpected argument "extra"`},
		{[]string{"dataset", "write", "--out", other, "--n", "1", "--raw-size", "8"}, "holds no dataset"},
		{[]string{"dataset", "verify"}, "want one dataset directory"},
		{[]string{"dataset", "warm", other}, "no manifest"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		if !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: stderr %q, want one line containing %q", tc.args, stderr, tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused write created %s", out)
	}
}

func TestDatasetWriteVerifyWarmEvict(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	args := []string{"dataset", "write", "--out", dir, "--n", "5", "--raw-size", "16x8", "--format", "png", "--layout", "shards", "--shard-size", "2", "--seed", "4"}
	code, out, stderr := runCLI(args...)
	if code != 0 || !strings.Contains(out, "5 samples of 16x8 as png, shards; 3 files") {
		t.Fatalf("write: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	d, err := ondisk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	src := datasets.Synthetic{Width: 16, Height: 8, Classes: 10, N: 5, Seed: 4}
	got, want := datasets.NewSample(16, 8), datasets.NewSample(16, 8)
	for i := range 5 {
		if err := d.Fill(i, got); err != nil {
			t.Fatal(err)
		}
		src.Fill(i, want)
		if string(got.Image.Pix) != string(want.Image.Pix) || got.Label != want.Label {
			t.Errorf("sample %d differs from the synthetic sample of seed 4", i)
		}
	}
	// Again: refused without --force, replaced with it.
	if code, _, stderr := runCLI(args...); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("second write: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(append(args, "--force", "--format", "raw")...); code != 0 {
		t.Errorf("--force: exit %d, stderr %q", code, stderr)
	}
	if code, out, stderr := runCLI("dataset", "verify", dir); code != 0 || !strings.Contains(out, "3 files match") {
		t.Errorf("verify: exit %d, %q %q", code, out, stderr)
	}
	if code, out, stderr := runCLI("dataset", "warm", dir); code != 0 || !strings.Contains(out, "read 4 files") {
		t.Errorf("warm: exit %d, %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI("dataset", "evict", dir)
	switch {
	case runtime.GOOS == "linux" && (code != 0 || !strings.Contains(out, "evicted 4 files")):
		t.Errorf("evict: exit %d, %q %q", code, out, stderr)
	case runtime.GOOS != "linux" && (code != 2 || !strings.Contains(stderr, "not available on "+runtime.GOOS)):
		t.Errorf("evict: exit %d, %q %q", code, out, stderr)
	}
	// A corrupt shard: verify names it, exit 2 (bad input).
	shard := filepath.Join(dir, "shard-000001.tar")
	if err := os.WriteFile(shard, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("dataset", "verify", dir); code != 2 || !strings.Contains(stderr, shard) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("verify of a corrupt shard: exit %d, stderr %q", code, stderr)
	}
}

// TestDatasetWriteNaturalJPEG is issue 23's done-when: `dataset write
// --content natural --format jpeg --raw-size 1024` files average at most
// 15% of the raw size.
func TestDatasetWriteNaturalJPEG(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	code, out, stderr := runCLI("dataset", "write", "--content", "natural", "--format", "jpeg", "--raw-size", "1024", "--n", "4", "--layout", "files", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m, err := ondisk.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, f := range m.Files {
		fi, err := os.Stat(filepath.Join(dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		sum += fi.Size()
	}
	if frac := float64(sum) / float64(len(m.Files)) / (3 * 1024 * 1024); frac > 0.15 {
		t.Errorf("natural JPEGs average %.1f%% of the raw size, want ≤ 15%%", 100*frac)
	}
	if !strings.Contains(out, "natural content") {
		t.Errorf("stdout %q does not name the content", out)
	}
	if code, _, stderr := runCLI("dataset", "write", "--content", "leaves", "--out", dir+"2"); code != 2 || !strings.Contains(stderr, `--content "leaves"`) {
		t.Errorf("--content leaves: exit %d, stderr %q", code, stderr)
	}
}

// TestDatasetVerifyMissingShard: verify of a dataset that lacks files its
// manifest lists (an interrupted copy) exits 2, as bad input, with one
// line that counts and names them (issue 41: exit 1, "open …: no such
// file or directory" for the first alone).
func TestDatasetVerifyMissingShard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	if code, out, stderr := runCLI("dataset", "write", "--out", dir, "--n", "20", "--raw-size", "16", "--format", "jpeg", "--layout", "shards", "--shard-size", "4"); code != 0 {
		t.Fatalf("write: exit %d, %q %q", code, out, stderr)
	}
	for _, name := range []string{"shard-000001.tar", "shard-000003.tar"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr := runCLI("dataset", "verify", dir)
	want := dir + ": 2 of the 5 files its manifest lists are missing: shard-000001.tar, shard-000003.tar"
	if code != 2 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("verify: exit %d, stdout %q, stderr %q; want 2 and one line with %q", code, out, stderr, want)
	}
}
