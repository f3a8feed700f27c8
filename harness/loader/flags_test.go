package loader

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
)

// applyFlags parses args onto a flag set holding every data flag and
// applies them to the default configuration.
func applyFlags(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var d DataFlags
	d.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	given := func(name string) bool {
		found := false
		fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
		return found
	}
	return d.Apply(DefaultConfig(), given)
}

// TestDataFlagsApply checks that the data flags fill a Config's data
// fields, with their defaults, and that a flag given without the data it
// applies to, or out of its range, is refused with an error naming it.
func TestDataFlagsApply(t *testing.T) {
	c, err := applyFlags(t)
	if err != nil || c.Data != "" || c.PageCache != "" || c.Decoder != "" || c.Bucket != (bucket.Options{}) {
		t.Errorf("no flags: %+v, %v; want the configuration unchanged", c, err)
	}
	c, err = applyFlags(t, "--data", "s3://train/ds", "--shard-reads", "whole", "--fetch-concurrency", "3", "--max-failures", "2")
	if err != nil {
		t.Fatal(err)
	}
	if c.Data != "s3://train/ds" || c.ShardReads != ondisk.ShardReadsWhole || c.PageCache != "" || c.MaxFailures != 2 ||
		c.Bucket.Concurrency != 3 || c.Bucket.ChunkSize != bucket.DefaultChunkSize || c.Decoder != ondisk.DecoderGo {
		t.Errorf("data in a bucket: %+v", c)
	}
	c, err = applyFlags(t, "--data", "/d")
	if err != nil || c.Data != "/d" || c.PageCache != PageWarm || c.ShardReads != "" || c.Bucket.Concurrency != 0 {
		t.Errorf("data on disk: %+v, %v; want page cache warm, no bucket settings", c, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fetch-concurrency", "4"}, "--fetch-concurrency needs --data"},
		{[]string{"--page-cache", "warm"}, "--page-cache needs --data"},
		{[]string{"--data", "/d", "--link", "home"}, "--link needs --data s3://BUCKET/PREFIX"},
		{[]string{"--data", "s3://train/ds", "--page-cache", "warm"}, "--page-cache: s3://train/ds is in a bucket"},
		{[]string{"--data", "s3://UPPER/ds"}, "only a-z"},
		{[]string{"--data", "s3://train/ds", "--fetch-concurrency", "1025"}, "--fetch-concurrency 1025: want 1 to 1024"},
		{[]string{"--data", "s3://train/ds", "--chunk-size", "10"}, "--chunk-size 10: want 4096 to 268435456"},
		{[]string{"--data", "s3://train/ds", "--shard-reads", "some"}, `--shard-reads "some": want ranged or whole`},
		{[]string{"--data", "/d", "--max-failures", "-1"}, "--max-failures -1: want 0 to"},
		{[]string{"--data", "/d", "--decoder", "gpu"}, `--decoder "gpu": want go, turbojpeg or nvjpeg`},
		{[]string{"--data", "/d", "--decode-scale", "half"}, `--decode-scale "half": want off or auto`},
		{[]string{"--data", "/d", "--decode-scale", "auto"}, "--decode-scale auto needs --decoder turbojpeg"},
		{[]string{"--data", "/d", "--page-cache", "tepid"}, `--page-cache "tepid": want warm or cold`},
	} {
		_, err := applyFlags(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
