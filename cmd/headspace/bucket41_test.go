package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
)

// The tests of issue 41's "Data in a bucket" at the command line: exit 2
// for the data's faults, as on disk; an index of a bucket that names what
// it cannot read; uploads that never leave a prefix reading as another
// dataset; resumes that never mix servers or buckets.

// clientFor opens a client for url on s (the test's credentials).
func clientFor(t *testing.T, url string) *bucket.Client {
	t.Helper()
	u, err := bucket.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bucket.Open(context.Background(), u, bucket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeUpload writes a headspace dataset and uploads it to url.
func writeUpload(t *testing.T, url string, args ...string) (dir string, m *ondisk.Manifest) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "ds")
	w := append([]string{"dataset", "write", "--out", dir, "--raw-size", "32", "--format", "jpeg"}, args...)
	if code, _, stderr := runCLI(w...); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI("dataset", "upload", "--make-bucket", dir, url); code != 0 {
		t.Fatalf("upload: %s", stderr)
	}
	m, err := ondisk.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

// TestBucketFaultsExit2: an object replaced by another of the same size,
// deleted or shrunk since the listing, and a WebDataset shard cut at a
// tar header boundary fail a run with exit 2 naming the object, as the
// same faults on disk do.
func TestBucketFaultsExit2(t *testing.T) {
	startS3(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, c *bucket.Client, dir string, m *ondisk.Manifest) (obj, want string)
	}{
		{"same size", func(t *testing.T, c *bucket.Client, dir string, m *ondisk.Manifest) (string, string) {
			f := m.Files[1]
			b, err := os.ReadFile(filepath.Join(dir, f.Name))
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0xff
			if err := c.Put(ctx, f.Name, bytes.NewReader(b), int64(len(b))); err != nil {
				t.Fatal(err)
			}
			return f.Name, "ETag"
		}},
		{"deleted", func(t *testing.T, c *bucket.Client, dir string, m *ondisk.Manifest) (string, string) {
			if err := c.Remove(ctx, m.Files[2].Name); err != nil {
				t.Fatal(err)
			}
			return m.Files[2].Name, "NoSuchKey"
		}},
		{"shrunk", func(t *testing.T, c *bucket.Client, dir string, m *ondisk.Manifest) (string, string) {
			if err := c.Put(ctx, m.Files[3].Name, strings.NewReader("short"), 5); err != nil {
				t.Fatal(err)
			}
			return m.Files[3].Name, "since the listing"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := "s3://fault-" + strings.ReplaceAll(tc.name, " ", "-") + "/ds"
			dir, m := writeUpload(t, url, "--n", "8", "--layout", "files")
			if code, _, stderr := runCLI("dataset", "index", url); code != 0 {
				t.Fatalf("index: %s", stderr)
			}
			obj, want := tc.change(t, clientFor(t, url), dir, m)
			code, _, stderr := runCLI(ladderOver(url, "--batch", "8")...)
			oneLine2(t, "ladder over a bucket whose object "+tc.name, code, stderr, url+"/"+obj)
			if !strings.Contains(stderr, want) {
				t.Errorf("ladder over a bucket whose object %s: %q; want it to say %q", tc.name, stderr, want)
			}
		})
	}

	// A WebDataset shard cut at a tar header boundary: the index counts
	// and names it, a run fails with exit 2 naming it.
	t.Run("cut shard", func(t *testing.T) {
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
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(shard, b[:members[4].Offset-512], 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runCLI("dataset", "upload", "--make-bucket", dir, "s3://cut-shard/wds"); code != 0 {
			t.Fatal(stderr)
		}
		where := "s3://cut-shard/wds/train-0001.tar member (after sample00005.cls): tar: truncated"
		code, stdout, stderr := runCLI("dataset", "index", "s3://cut-shard/wds")
		if code != 0 || !strings.Contains(stdout, "11 samples") || !strings.Contains(stdout, "1 unreadable") || !strings.Contains(stdout, "unreadable: "+where) {
			t.Errorf("dataset index s3:// of a cut shard: exit %d, %q %q; want 1 unreadable, named", code, stdout, stderr)
		}
		code, _, stderr = runCLI(ladderOver("s3://cut-shard/wds", "--batch", "12")...)
		oneLine2(t, "ladder over a cut shard in a bucket", code, stderr, where)
	})
}

// TestBucketIndexMissingShard: a headspace dataset missing a shard (what
// an upload cut short by an older headspace left) is indexed with its
// unreadable samples counted and the shard named.
func TestBucketIndexMissingShard(t *testing.T) {
	startS3(t)
	url := "s3://missing-shard/ds"
	_, m := writeUpload(t, url, "--n", "20", "--shard-size", "6")
	if err := clientFor(t, url).Remove(context.Background(), m.Files[1].Name); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("dataset", "index", url)
	if code != 0 || !strings.Contains(stdout, "20 samples") || !strings.Contains(stdout, "6 unreadable") ||
		!strings.Contains(stdout, "unreadable: "+url+"/"+m.Files[1].Name+": not in the listing") {
		t.Errorf("dataset index of a dataset missing a shard: exit %d, %q %q; want 6 unreadable, the shard named", code, stdout, stderr)
	}
}

// TestBucketIndexInterrupted: dataset index s3:// interrupted (its
// context cancelled, as SIGINT cancels main's) exits 130, not 2.
func TestBucketIndexInterrupted(t *testing.T) {
	startS3(t)
	writeUpload(t, "s3://index-sigint/ds", "--n", "4")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	if code := run(ctx, []string{"dataset", "index", "s3://index-sigint/ds"}, &o, &e); code != 130 {
		t.Errorf("dataset index s3:// interrupted: exit %d, %q; want 130", code, e.String())
	}
}

// TestBucketUploadRefusals: an upload onto a prefix that holds objects is
// refused (exit 2, nothing changed) unless --replace, after which the
// prefix reads as the new dataset alone; a dataset holding a named pipe
// is refused with exit 2 and nothing uploaded.
func TestBucketUploadRefusals(t *testing.T) {
	startS3(t)
	url := "s3://upload-onto/ds"
	writeUpload(t, url, "--n", "40", "--shard-size", "10")
	small := filepath.Join(t.TempDir(), "small")
	if code, _, stderr := runCLI("dataset", "write", "--out", small, "--n", "4", "--raw-size", "32"); code != 0 {
		t.Fatal(stderr)
	}
	code, _, stderr := runCLI("dataset", "upload", small, url)
	oneLine2(t, "upload onto a prefix holding a dataset", code, stderr, "already holds 5 objects")
	if code, stdout, stderr := runCLI("dataset", "index", url); code != 0 || !strings.Contains(stdout, "40 samples") {
		t.Errorf("after a refused upload: exit %d, %q %q; want the old 40 samples", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("dataset", "upload", "--replace", small, url); code != 0 {
		t.Fatalf("upload --replace: %s", stderr)
	}
	code, stdout, stderr := runCLI("dataset", "index", url)
	if code != 0 || !strings.Contains(stdout, "4 samples") || !strings.Contains(stdout, "listed 2 objects") {
		t.Errorf("after upload --replace: exit %d, %q %q; want the new 4 samples in 2 objects alone", code, stdout, stderr)
	}
}

// TestRemoteFromJunk: remote --from a file that is not a remote run's
// result file is bad input: exit 2, one line.
func TestRemoteFromJunk(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"junk.txt":  "junk\nmore junk\n",
		"other.txt": "BenchmarkFoo 1 2 ns/op\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("remote", "--from", p)
		oneLine2(t, "remote --from "+name, code, stderr, "--from "+p)
	}
}

// TestBucketResumeRefusesAnotherServerOrBucket: a ladder's file of data
// in one bucket on one server is not resumed against another bucket, or
// another server, holding the same dataset (exit 2, naming the setting);
// against the same, it is.
func TestBucketResumeRefusesAnotherServerOrBucket(t *testing.T) {
	s := startS3(t)
	dir, _ := writeUpload(t, "s3://resume-a/ds", "--n", "8")
	if code, _, stderr := runCLI("dataset", "upload", "--make-bucket", dir, "s3://resume-b/ds"); code != 0 {
		t.Fatal(stderr)
	}
	res := filepath.Join(t.TempDir(), "r.txt")
	ladder := func(url string, extra ...string) []string {
		return append(ladderOver(url, "--out", res, "--count", "1"), extra...)
	}
	if code, _, stderr := runCLI(ladder("s3://resume-a/ds")...); code != 0 {
		t.Fatalf("ladder: %s", stderr)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"data-url: s3://resume-a/ds", "data-endpoint: http://127.0.0.1\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the result file lacks %q:\n%s", want, b)
		}
	}
	if code, _, stderr := runCLI(ladder("s3://resume-a/ds", "--levels", "none,encoded")...); code != 0 {
		t.Errorf("resume against the same bucket: exit %d, %s", code, stderr)
	}
	code, _, stderr := runCLI(ladder("s3://resume-b/ds", "--levels", "none,encoded,raw")...)
	oneLine2(t, "resume against another bucket", code, stderr, "data-url")
	other := strings.Replace(s.Endpoint(), "127.0.0.1", "localhost", 1)
	code, _, stderr = runCLI(ladder("s3://resume-a/ds", "--levels", "none,encoded,raw", "--s3-endpoint", other)...)
	oneLine2(t, "resume against another server", code, stderr, "data-endpoint")
}

// TestBucketLocalSkipsUnusedOddKeys: an ImageFolder in a bucket with an
// unused hidden key that would leave a directory (cat/..\..\x.jpg) runs
// at level local as at level none: the copy skips it, as the index does.
func TestBucketLocalSkipsUnusedOddKeys(t *testing.T) {
	startS3(t)
	dir := fixture(t, "imagefolder")
	if code, _, stderr := runCLI("dataset", "upload", "--make-bucket", dir, "s3://odd-keys/if"); code != 0 {
		t.Fatal(stderr)
	}
	c := clientFor(t, "s3://odd-keys/if")
	if err := c.Put(context.Background(), `cat/..\..\x.jpg`, strings.NewReader("not an image"), 12); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(ladderOver("s3://odd-keys/if", "--levels", "none,local")...)
	if code != 0 {
		t.Errorf("ladder --levels none,local over a bucket with an unused odd key: exit %d, %s", code, stderr)
	}
}
