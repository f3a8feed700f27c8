package bucket_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// TestRegisterFlags checks the bucket flags' defaults and that Validate
// holds their bounds: zero takes the default, and a value outside
// MaxConcurrency or MinChunkSize..MaxChunkSize is refused naming its flag.
func TestRegisterFlags(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o bucket.Options
	o.RegisterFlags(fs)
	if err := fs.Parse([]string{"--s3-endpoint", "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	want := bucket.Options{Endpoint: "http://127.0.0.1:1", Concurrency: bucket.DefaultConcurrency, ChunkSize: bucket.DefaultChunkSize}
	if o != want {
		t.Errorf("defaults: %+v, want %+v", o, want)
	}
	for _, tc := range []struct {
		o    bucket.Options
		want string
	}{
		{bucket.Options{}, ""},
		{bucket.Options{Concurrency: bucket.MaxConcurrency, ChunkSize: bucket.MaxChunkSize}, ""},
		{bucket.Options{Concurrency: 1, ChunkSize: bucket.MinChunkSize}, ""},
		{bucket.Options{Concurrency: -1}, "--fetch-concurrency -1: want 1 to 1024"},
		{bucket.Options{Concurrency: bucket.MaxConcurrency + 1}, "--fetch-concurrency 1025"},
		{bucket.Options{ChunkSize: bucket.MinChunkSize - 1}, "--chunk-size 4095: want 4096 to 268435456"},
		{bucket.Options{ChunkSize: bucket.MaxChunkSize + 1}, "--chunk-size 268435457"},
	} {
		err := tc.o.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
