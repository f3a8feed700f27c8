package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/internal/cli"
)

// The tests of issue 32 ("results you can trust, round 3") for datasets
// on disk: items 9 to 13. Item 11's permission test is
// trust3_linux_test.go's.

// ladderOver is a tiny ladder over dir at level none.
func ladderOver(dir string, extra ...string) []string {
	return append([]string{"ladder", "--data", dir, "--levels", "none", "--crop", "16", "--batch", "4", "--step", "1ms",
		"--steps", "2", "--count", "1", "--workers", "1", "--transforms", "fast"}, extra...)
}

// Item 9: a WebDataset shard cut at a tar header boundary (head -c) is
// not read as whole: dataset index counts one unreadable sample and names
// the shard, a run fails naming it (exit 2) or, with --max-failures,
// counts it.
func TestShardCutAtHeaderBoundary(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := fixture(t, "webdataset")
	shard := filepath.Join(dir, "train-0001.tar")
	b, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(shard)
	if err != nil {
		t.Fatal(err)
	}
	members, err := ondisk.IndexShard(f)
	f.Close()
	if err != nil || len(members) != 8 {
		t.Fatalf("the fixture's shard: %d members, %v", len(members), err)
	}
	cut := members[4].Offset - 512 // the third sample's header: two samples stay
	if err := os.WriteFile(shard, b[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("dataset", "index", dir)
	if code != 0 || !strings.Contains(stdout, "webdataset, 11 samples in 5 classes, jpeg, 1 unreadable") ||
		!strings.Contains(stdout, "unreadable: "+shard+" member (after sample00005.cls): tar: truncated: no end-of-archive marker") {
		t.Errorf("dataset index: exit %d, %q %q; want 11 samples (10 and the cut shard's one unreadable, named)", code, stdout, stderr)
	}
	code, _, stderr = runCLI(ladderOver(dir, "--batch", "12")...)
	oneLine2(t, "ladder over a cut shard", code, stderr, shard+" member (after sample00005.cls): tar: truncated")
	if code, _, stderr := runCLI(ladderOver(dir, "--batch", "12", "--max-failures", "4")...); code != 0 {
		t.Errorf("ladder --max-failures 4 over a cut shard: exit %d: %s", code, stderr)
	}
}

// Item 10: class directories that are symbolic links are classes, as in
// torchvision's ImageFolder: 15 samples in 3 classes, not 10 in 2.
func TestLinkedClassDirectories(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := fixture(t, "imagefolder") // cat, dog (with extra.png), eel: 4 JPEGs each
	elsewhere := filepath.Join(t.TempDir(), "fox")
	if err := os.Rename(filepath.Join(dir, "eel"), elsewhere); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"eel", "eel/again"} { // eel/again: a loop
		if err := os.Symlink(elsewhere, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI("dataset", "index", dir)
	if code != 0 || !strings.Contains(stdout, "imagefolder, 13 samples in 3 classes, jpeg+png, 0 unreadable") {
		t.Errorf("dataset index: exit %d, %q %q; want the linked class eel's 4 images (its link to itself not followed)", code, stdout, stderr)
	}
}

// Item 12: a cancelled context stops the indexing of --data and dataset
// index with the context's error: exit 130.
func TestIndexingInterrupted(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := fixture(t, "imagefolder")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var d loader.DataFlags
	fs := cli.NewFlagSet("test", "", nil)
	d.Register(fs)
	if err := cli.ParseFlags(fs, []string{"--data", dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Resolve(ctx, loader.DefaultConfig()); !errors.Is(err, context.Canceled) {
		t.Errorf("--data indexed under a cancelled context: %v; want context.Canceled", err)
	}
	for _, args := range [][]string{{"dataset", "index", dir}, ladderOver(dir)} {
		var o, e strings.Builder
		if code := run(ctx, args, &o, &e); code != 130 || !strings.Contains(e.String(), "interrupted") {
			t.Errorf("%v, cancelled: exit %d, %q; want 130", args[:2], code, e.String())
		}
	}
}

// Item 13: one exit status for one fault. A corrupt JPEG exits 2 in an
// ImageFolder as in a headspace dataset, with goroutine or process
// workers, and a folder whose only .tar is not a tar says so (not "raw
// size 0x0"): one line naming the file and what is wrong.
func TestBadDataExits2(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	folder := fixture(t, "imagefolder")
	broken := filepath.Join(folder, "cat", "cat1.jpg")
	os.WriteFile(broken, []byte("\xff\xd8\xff\xe0 this is not really a jpeg"), 0o644)

	ds := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCLI("dataset", "write", "--n", "4", "--raw-size", "32", "--format", "jpeg", "--layout", "files", "--out", ds); code != 0 {
		t.Fatalf("write: %d %s", code, stderr)
	}
	os.WriteFile(filepath.Join(ds, "000001.jpg"), []byte("\xff\xd8\xff\xe0 this is not really a jpeg"), 0o644)
	rehash(t, ds, "000001.jpg")

	notTar := t.TempDir()
	os.WriteFile(filepath.Join(notTar, "x.tar"), []byte("hello, not a tar\n"), 0o644)

	t.Setenv(testWorkerEnv, "1") // loaders --mode process: this binary is the worker
	loaders := func(mode string) []string {
		return []string{"loaders", "--data", folder, "--mode", mode, "--workers", "1", "--batch", "13", "--crop", "16"}
	}
	for _, tc := range []struct {
		what string
		args []string
		want string
	}{
		{"a corrupt JPEG in an ImageFolder", ladderOver(folder, "--batch", "13"), broken + ": bad header"},
		{"loaders --mode goroutine over it", loaders("goroutine"), broken + ": bad header"},
		{"loaders --mode process over it", loaders("process"), broken + ": bad header"},
		{"a corrupt JPEG in a headspace dataset", ladderOver(ds), filepath.Join(ds, "000001.jpg") + ": jpeg: "},
		{"ladder over a folder whose only .tar is not a tar", ladderOver(notTar), filepath.Join(notTar, "x.tar") + ": not a tar archive"},
		{"dataset index of it", []string{"dataset", "index", notTar}, filepath.Join(notTar, "x.tar") + ": not a tar archive"},
	} {
		code, _, stderr := runCLI(tc.args...)
		oneLine2(t, tc.what, code, stderr, tc.want)
		if strings.Contains(stderr, "0x0") {
			t.Errorf("%s: %q", tc.what, stderr)
		}
	}
}
