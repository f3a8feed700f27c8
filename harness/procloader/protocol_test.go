package procloader

import (
	"bytes"
	"testing"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/harness/loader"
)

// TestSpecCarriesTheBucket: a worker reads data in a bucket as its parent
// does: the endpoint, region, requests in flight, chunk size, retries and
// shard reads cross the pipe (credentials do not: the worker inherits the
// environment).
func TestSpecCarriesTheBucket(t *testing.T) {
	cfg := loader.Config{Data: "s3://b/ds", Batch: 4, Workers: 2,
		Bucket:     bucket.Options{Endpoint: "http://127.0.0.1:9", Region: "eu-west-1", Concurrency: 7, ChunkSize: 1 << 16, Retries: 3, AccessKey: "k", SecretKey: "s"},
		ShardReads: "whole"}
	var b bytes.Buffer
	if err := writeSpec(&b, newSpec(cfg, 0)); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Bytes(), []byte(`"s"`)) || bytes.Contains(b.Bytes(), []byte("SecretKey")) {
		t.Errorf("the spec carries credentials: %s", b.Bytes())
	}
	s, err := readSpec(&b)
	if err != nil {
		t.Fatal(err)
	}
	got := s.config()
	want := cfg.Bucket
	want.AccessKey, want.SecretKey = "", ""
	if got.Bucket != want || got.ShardReads != "whole" || got.Data != cfg.Data {
		t.Errorf("the worker's config: %+v, shard reads %q; want %+v", got.Bucket, got.ShardReads, want)
	}
}
