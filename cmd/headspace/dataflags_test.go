package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets/ondisk"
)

// writeTiny writes a 16-sample 48² dataset in format and layout with the
// dataset command and returns its directory.
func writeTiny(t *testing.T, format, layout string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), format+"-"+layout)
	if code, _, stderr := runCLI("dataset", "write", "--n", "16", "--raw-size", "48", "--format", format, "--layout", layout, "--out", dir); code != 0 {
		t.Fatalf("dataset write: exit %d: %s", code, stderr)
	}
	return dir
}

// TestDataFlagsRefused checks the one-line refusals of the data flags on
// the commands that take them.
func TestDataFlagsRefused(t *testing.T) {
	dir := writeTiny(t, "png", "files")
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ladder", "--levels", "none,encoded"}, "level encoded needs a dataset on disk (--data)"},
		{[]string{"ladder", "--max-failures", "3"}, "--max-failures needs --data"},
		{[]string{"ladder", "--page-cache", "cold"}, "--page-cache needs --data"},
		{[]string{"ladder", "--data", dir, "--max-failures", "-1"}, "--max-failures -1: want 0 to"},
		{[]string{"ladder", "--data", dir, "--max-failures", "9999999999"}, "--max-failures 9999999999: want 0 to"},
		{[]string{"ladder", "--data", dir, "--page-cache", "tepid"}, `--page-cache "tepid": want warm or cold`},
		{[]string{"ladder", "--data", dir, "--raw-size", "64"}, "--raw-size 64x64 conflicts with --data " + dir + ", whose images are 48x48"},
		{[]string{"ladder", "--data", dir, "--seed", "99"}, "--seed 99 conflicts with --data"},
		{[]string{"ladder", "--data", empty}, "not a dataset: no manifest (headspace dataset write), no class subdirectories (ImageFolder), no .tar shards (WebDataset)"},
		{[]string{"analyze", "--data", empty}, "no manifest"},
		{[]string{"whatif", "--max-failures", "1"}, "--max-failures needs --data"},
		{[]string{"loaders", "--data", dir, "--raw-size", "32"}, "conflicts with --data"},
		{[]string{"peer", "--data", empty}, "no manifest"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
	if !ondisk.EvictAvailable {
		code, _, stderr := runCLI("ladder", "--data", dir, "--page-cache", "cold")
		if code != 2 || !strings.Contains(stderr, "eviction is not available") {
			t.Errorf("cold without eviction: exit %d, %q", code, stderr)
		}
	}
}

// TestLadderOnDisk runs the ladder over a JPEG dataset in shards with the
// default levels (encoded included), and checks the table attributes
// fetching and decoding, the file records the data's identity, read-MB/s
// and the fetch and decode times; and a corrupt file stops it with one
// line naming the file, or is skipped with --max-failures.
func TestLadderOnDisk(t *testing.T) {
	dir := writeTiny(t, "jpeg", "shards")
	out := filepath.Join(t.TempDir(), "r.txt")
	args := []string{"ladder", "--data", dir, "--crop", "16", "--batch", "4", "--step", "2ms", "--steps", "2", "--count", "1", "--workers", "2", "--transforms", "fast", "--out", out}
	if ondisk.EvictAvailable {
		args = append(args, "--page-cache", "cold")
	}
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"data " + dir + ": 16 jpeg samples in shards", "  encoded ", "fetching", "decoding"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	file := string(b)
	for _, want := range []string{"data-format: jpeg-q90", "data-layout: shards-of-1000", "data-manifest-sha256: ", "raw-size: 48x48", "samples: 16",
		"BenchmarkLadder/level=encoded/", "read-MB/s", "fetch-ns/sample", "decode-ns/sample"} {
		if !strings.Contains(file, want) {
			t.Errorf("result file lacks %q", want)
		}
	}
	if ondisk.EvictAvailable && !strings.Contains(file, "page-cache: cold") {
		t.Error("result file lacks page-cache: cold")
	}

	files := writeTiny(t, "png", "files")
	if err := os.WriteFile(filepath.Join(files, "000003.png"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"ladder", "--data", files, "--crop", "16", "--batch", "4", "--step", "1ms", "--steps", "2", "--warmup", "0", "--count", "1", "--workers", "1", "--transforms", "fast", "--levels", "none"}
	code, _, stderr = runCLI(base...)
	if code != 2 || !strings.Contains(stderr, "000003.png") || !strings.Contains(stderr, "sample 3") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("a corrupt file: exit %d, stderr %q; want 2 (bad input, issue 21 item 15) and one line naming the file and the sample", code, stderr)
	}
	out2 := filepath.Join(t.TempDir(), "f.txt")
	if code, _, stderr := runCLI(append(base, "--max-failures", "1", "--out", out2)...); code != 0 {
		t.Fatalf("--max-failures 1: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(out2); !strings.Contains(string(b), " failures") {
		t.Errorf("--max-failures 1: no failures metric in\n%s", b)
	}
}
