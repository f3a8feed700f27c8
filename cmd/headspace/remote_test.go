package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/s3server"
)

// startS3 starts the real S3-compatible server for one test, with its
// credentials in the environment the way a user sets them.
func startS3(t *testing.T) *s3server.Server {
	t.Helper()
	s, err := s3server.Start(context.Background(), s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_ENDPOINT_URL", s.Endpoint())
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	return s
}

// TestRemoteLadder: a dataset written, uploaded with `dataset upload`,
// indexed from the bucket and run through the ladder with --data s3://:
// the result records the store and the fetch counters.
func TestRemoteLadder(t *testing.T) {
	s := startS3(t)
	dir := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCLI("dataset", "write", "--out", dir, "--n", "24", "--raw-size", "32", "--format", "jpeg", "--layout", "shards", "--shard-size", "10"); code != 0 {
		t.Fatalf("write: %s", stderr)
	}
	code, out, stderr := runCLI("dataset", "upload", "--make-bucket", dir, "s3://train/ds")
	if code != 0 || !strings.Contains(out, "4 objects") {
		t.Fatalf("upload: exit %d, %q, %q", code, out, stderr)
	}
	code, out, stderr = runCLI("dataset", "index", "s3://train/ds")
	if code != 0 || !strings.Contains(out, "24 samples") || !strings.Contains(out, "listed 4 objects") {
		t.Fatalf("index: exit %d, %q, %q", code, out, stderr)
	}
	res := filepath.Join(t.TempDir(), "r.txt")
	code, _, stderr = runCLI("ladder", "--data", "s3://train/ds", "--levels", "none,local,encoded", "--transforms", "fast",
		"--workers", "1", "--steps", "2", "--count", "1", "--step", "1ms", "--batch", "4", "--crop", "16",
		"--fetch-concurrency", "3", "--chunk-size", "65536", "--out", res)
	if code != 0 {
		t.Fatalf("ladder: exit %d, %s", code, stderr)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"BenchmarkLadder/level=local/", " copy-MB/s", "data-store: s3", "fetch-concurrency: 3", "chunk-size: 65536", "price-source: AWS", " requests/sample", " req-p99-ns", " epoch-usd", "Unit requests/sample better=lower"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
	// The loaders, goroutine and process workers, read the bucket through
	// --s3-endpoint alone (not the environment): a process worker gets the
	// endpoint from its parent.
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv(testWorkerEnv, "1") // this test binary serves as the process worker
	if code, out, stderr := runCLI("loaders", "--data", "s3://train/ds", "--s3-endpoint", s.Endpoint(), "--workers", "1", "--repeats", "1", "--train-runs", "0", "--batches", "3", "--batch", "4", "--crop", "16"); code != 0 {
		t.Fatalf("loaders --data s3://: exit %d, %s %s", code, out, stderr)
	}
	t.Setenv("AWS_ENDPOINT_URL", s.Endpoint())
	if strings.Contains(string(b), "link:") {
		t.Errorf("a run without --link records a link:\n%s", b)
	}
	// The same through an emulated cross-region link, with a reset every
	// 5th request: retried, counted, and every setting recorded.
	res2 := filepath.Join(t.TempDir(), "r2.txt")
	code, _, stderr = runCLI("ladder", "--data", "s3://train/ds", "--levels", "none", "--transforms", "fast",
		"--workers", "1", "--steps", "2", "--count", "1", "--step", "1ms", "--batch", "4", "--crop", "16",
		"--link", "cross-region,reset=every:5", "--out", res2)
	if code != 0 {
		t.Fatalf("ladder --link: exit %d, %s", code, stderr)
	}
	b, err = os.ReadFile(res2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"link: custom", "link-latency: 30ms", "link-reset: every:5", " retries"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file of a --link run lacks %q:\n%s", want, b)
		}
	}
	// A run refused once its --link is up stops it (the package's goleak
	// check fails otherwise).
	code, _, stderr = runCLI("ladder", "--data", "s3://train/ds", "--levels", "none", "--crop", "16", "--batch", "4", "--link", "home", "--shard", "2/2")
	if code != 2 || !strings.Contains(stderr, "--shard") {
		t.Errorf("ladder --link --shard 2/2: exit %d, %s; want 2 and --shard", code, stderr)
	}
}

// TestRemoteBadInput: bad URLs, flags and servers are one line, exit 2.
func TestRemoteBadInput(t *testing.T) {
	s := startS3(t)
	local := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCLI("dataset", "write", "--out", local, "--n", "4", "--raw-size", "16"); code != 0 {
		t.Fatal(stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ladder", "--data", "s3://UPPER/x"}, "only a-z"},
		{[]string{"ladder", "--data", "s3://missing-bucket/x", "--levels", "none"}, "no such bucket"},
		{[]string{"ladder", "--data", "s3://train/x", "--s3-endpoint", "http://127.0.0.1:1"}, "cannot reach"},
		{[]string{"ladder", "--data", "s3://train/x", "--page-cache", "cold"}, "is in a bucket"},
		{[]string{"ladder", "--data", "s3://train/x", "--fetch-concurrency", "0"}, "--fetch-concurrency 0"},
		{[]string{"ladder", "--data", "s3://train/x", "--chunk-size", "10"}, "--chunk-size 10"},
		{[]string{"ladder", "--data", local, "--fetch-concurrency", "4"}, "needs --data s3://"},
		{[]string{"ladder", "--fetch-concurrency", "4"}, "needs --data"},
		{[]string{"ladder", "--data", "s3://train/x", "--link", "moon"}, "--link: "},
		{[]string{"ladder", "--data", "s3://train/x", "--link", "home", "--s3-endpoint", "https://s3.amazonaws.com"}, "server on this machine"},
		{[]string{"ladder", "--data", local, "--link", "home"}, "needs --data s3://"},
		{[]string{"dataset", "upload", local}, "want a dataset directory and an s3://"},
		{[]string{"dataset", "upload", local, "/tmp/x"}, "want s3://"},
		{[]string{"dataset", "upload", local, "s3://missing-bucket/x"}, "no such bucket"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "wrong")
	if code, _, stderr := runCLI("dataset", "index", "--s3-endpoint", s.Endpoint(), "s3://train/x"); code != 2 || !strings.Contains(stderr, "refused the credentials") {
		t.Errorf("wrong key: exit %d, %q", code, stderr)
	}
}
