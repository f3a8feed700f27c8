package main

import (
	"context"
	"strings"
	"testing"
)

// TestDatasetVerifyBucket: dataset verify s3://BUCKET/PREFIX checks a
// dataset that dataset write and upload put there against the manifest
// at the prefix; a changed object fails naming it, a prefix with no
// manifest and a server that cannot be reached are told apart, each in
// one line. It used to read s3://… as a directory, and say "no manifest:
// not a dataset written by headspace dataset write" for all of them
// (issue 52).
func TestDatasetVerifyBucket(t *testing.T) {
	s := startS3(t)
	_, m := writeUpload(t, "s3://verify/ds", "--n", "24", "--layout", "shards", "--shard-size", "10")
	code, stdout, stderr := runCLI("dataset", "verify", "s3://verify/ds")
	if code != 0 || !strings.Contains(stdout, "s3://verify/ds: 3 objects match the manifest") {
		t.Fatalf("verify: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// An object of the same size, other bytes.
	c := clientFor(t, "s3://verify/ds")
	name := m.Files[0].Name
	junk := strings.Repeat("x", int(m.Files[0].Size))
	if err := c.Put(context.Background(), name, strings.NewReader(junk), int64(len(junk))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"s3://verify/ds"}, "s3://verify/ds/" + name + ": sha256 "},
		{[]string{"s3://verify/none"}, "s3://verify/none: not a dataset: no manifest.json (headspace dataset write), no .tar shards"},
	} {
		code, _, stderr := runCLI(append([]string{"dataset", "verify"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("verify %v: exit %d, stderr %q; want 2 and one line saying %q", tc.args, code, stderr, tc.want)
		}
	}
	s.Close()
	code, _, stderr = runCLI("dataset", "verify", "s3://verify/ds")
	if code != 2 || strings.Contains(stderr, "manifest") || !strings.Contains(stderr, s.Endpoint()) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("verify with the server down: exit %d, stderr %q; want 2 and one line naming the server, not the manifest", code, stderr)
	}
}
