package workloads

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/s3server"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// TestLocalCopyRateKeptOnRerun: level local's first attempt copies the
// bucket to local disk; when it is disturbed and its rerun (which finds
// the copy in place) is the attempt kept, the record still carries the
// copy's rate (copy-MB/s) beside reruns 1.
func TestLocalCopyRateKeptOnRerun(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()
	srv, err := s3server.Start(ctx, s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	bo := bucket.Options{Endpoint: srv.Endpoint(), Region: s3server.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}
	dir := filepath.Join(t.TempDir(), "ds")
	src := datasets.Synthetic{Width: 32, Height: 32, Classes: 4, N: 16, Seed: 1}
	if _, err := ondisk.Write(ctx, dir, src, ondisk.WriteOptions{Format: "jpeg", Layout: "files"}); err != nil {
		t.Fatal(err)
	}
	u, _ := bucket.ParseURL("s3://copy-rerun/ds")
	mk, err := bucket.OpenUnchecked(u, bo)
	if err != nil {
		t.Fatal(err)
	}
	if err := mk.MakeBucket(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := bucket.Open(ctx, u, bo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ondisk.Upload(ctx, c, dir); err != nil {
		t.Fatal(err)
	}

	l, env := tinyLadder()
	l.Levels, l.Count, l.Disturb = []level.Level{level.Local}, 1, disturb.DefaultPolicy()
	l.Pipeline.Bucket = bo
	l.Pipeline.Transforms.Crop = 16
	if l.Pipeline, err = l.Pipeline.WithDataContext(ctx, u.String()); err != nil {
		t.Fatal(err)
	}
	calls := withShares(t, 0.30, 0.02) // the first attempt disturbed, the rerun kept
	rs, err := l.Run(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if *calls != 2 || len(rs) != 1 {
		t.Fatalf("%d attempts, %d records; want 2 attempts, 1 record", *calls, len(rs))
	}
	if v, _ := resultfile.Value(rs[0], disturb.RerunsUnit); v != 1 {
		t.Errorf("reruns = %v, want 1", v)
	}
	if v, ok := resultfile.Value(rs[0], "copy-MB/s"); !ok || v <= 0 {
		t.Errorf("copy-MB/s = %v (present %v) in the kept rerun's record; want the first attempt's copy rate", v, ok)
	}
}
