package ondisk

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// The tests of issue 41's "Data in a bucket": a bucket's faults are the
// data's faults, as on disk (ErrCorrupt, exit 2), named; an index of a
// bucket counts and names what it cannot read; an upload never leaves a
// prefix that reads as a dataset it is not.

// mustFetchCorrupt fetches sample i and wants ErrCorrupt naming what.
func mustFetchCorrupt(t *testing.T, d *Dataset, i int, what ...string) {
	t.Helper()
	_, err := d.Fetch(context.Background(), i, nil)
	if err == nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("sample %d: %v; want a bad-data error (ErrCorrupt)", i, err)
	}
	for _, w := range what {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("sample %d: %v; want it to say %q", i, err, w)
		}
	}
}

// TestBucketObjectChangedSinceListing: an object replaced by another of
// the same size, deleted, or shrunk after the listing fails its samples
// as bad data naming the object, in every layout and for the local copy
// (level local); the samples of unchanged objects still read.
func TestBucketObjectChangedSinceListing(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()

	t.Run("files", func(t *testing.T) {
		dir := t.TempDir()
		m := write(t, dir, "png", "files")
		c := uploadTo(t, "changed-files", dir)
		d, err := OpenRemote(ctx, c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		f0, f1, f2 := m.Files[0], m.Files[1], m.Files[2]
		same := bytes.Repeat([]byte{'x'}, int(f0.Size)) // the same size, other bytes
		if err := c.Put(ctx, f0.Name, bytes.NewReader(same), f0.Size); err != nil {
			t.Fatal(err)
		}
		if err := c.Remove(ctx, f1.Name); err != nil {
			t.Fatal(err)
		}
		if err := c.Put(ctx, f2.Name, bytes.NewReader(same[:f2.Size/2]), f2.Size/2); err != nil {
			t.Fatal(err)
		}
		mustFetchCorrupt(t, d, 0, c.Where(f0.Name), "ETag")
		mustFetchCorrupt(t, d, 1, c.Where(f1.Name), "NoSuchKey")
		mustFetchCorrupt(t, d, 2, c.Where(f2.Name), "since the listing")
		if _, err := d.Fetch(ctx, 3, nil); err != nil {
			t.Errorf("sample 3, unchanged: %v", err)
		}
		// Level local's copy of the same listing: the replaced object is
		// bad data, named, not a failure of the run.
		cd, err := d.LocalCopyDir()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.CopyTo(ctx, cd); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "since the listing") {
			t.Errorf("CopyTo of a changed bucket: %v; want ErrCorrupt naming the change", err)
		}
	})

	t.Run("shards", func(t *testing.T) {
		dir := t.TempDir()
		m := write(t, dir, "jpeg", "shards") // shards of 3
		c := uploadTo(t, "changed-shards", dir)
		var ds []*Dataset
		for _, whole := range []string{ShardReadsRanged, ShardReadsWhole} {
			d, err := OpenRemote(ctx, c, Options{ShardReads: whole})
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		s0, s1 := m.Files[0], m.Files[1]
		b, err := os.ReadFile(filepath.Join(dir, s1.Name))
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-2000] ^= 0xff // the same size: one byte of the last member's image
		if err := c.Put(ctx, s1.Name, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
		if err := c.Put(ctx, s0.Name, bytes.NewReader(b[:1024]), 1024); err != nil { // shrunk
			t.Fatal(err)
		}
		for i, whole := range []string{ShardReadsRanged, ShardReadsWhole} {
			d := ds[i]
			mustFetchCorrupt(t, d, 4, c.Where(m.Files[1].Name))
			mustFetchCorrupt(t, d, 0, c.Where(m.Files[0].Name))
			if _, err := d.Fetch(ctx, 6, nil); err != nil {
				t.Errorf("%s: sample 6, in an unchanged shard: %v", whole, err)
			}
		}
	})

	t.Run("imagefolder", func(t *testing.T) {
		dir := t.TempDir()
		a, b := encodeTest(t, "jpeg", 20, 12, 1), encodeTest(t, "jpeg", 20, 12, 2)
		writeFile(t, filepath.Join(dir, "cat", "1.jpg"), a)
		writeFile(t, filepath.Join(dir, "dog", "2.jpg"), a)
		c := uploadTo(t, "changed-folder", dir)
		d, err := OpenRemote(ctx, c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		other := slices.Clone(b)
		if len(other) != len(a) {
			other = slices.Clone(a)
			other[len(other)/2] ^= 0xff
		}
		if err := c.Put(ctx, "cat/1.jpg", bytes.NewReader(other), int64(len(other))); err != nil {
			t.Fatal(err)
		}
		mustFetchCorrupt(t, d, 0, c.Where("cat/1.jpg"), "ETag")
		if _, err := d.Fetch(ctx, 1, nil); err != nil {
			t.Errorf("dog/2.jpg, unchanged: %v", err)
		}
	})
}

// TestBucketIndexNamesUnreadable: IndexRemote counts and names what it
// cannot read, as the index of a directory does: a headspace dataset
// missing a shard, and a WebDataset shard cut at a tar header boundary,
// whose lost sample then fails as bad data.
func TestBucketIndexNamesUnreadable(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()

	dir := t.TempDir()
	m := write(t, dir, "jpeg", "shards") // 7 samples: shards of 3, 3, 1
	c := uploadTo(t, "index-missing", dir)
	if err := c.Remove(ctx, m.Files[1].Name); err != nil {
		t.Fatal(err)
	}
	in, _, err := IndexRemote(ctx, "s3://index-missing/ds", c.Options())
	if err != nil {
		t.Fatal(err)
	}
	if in.Count != 7 || in.Failed != 3 || len(in.Unreadable) != 1 ||
		!strings.Contains(in.Unreadable[0], c.Where(m.Files[1].Name)+": not in the listing") {
		t.Errorf("index of a dataset missing a shard: %d samples, %d unreadable, %q; want 7, 3 and the shard named", in.Count, in.Failed, in.Unreadable)
	}

	wds := t.TempDir()
	j := encodeTest(t, "jpeg", 20, 12, 1)
	writeFile(t, filepath.Join(wds, "a.tar"), tarOf(t, "s1.jpg", j, "s1.cls", []byte("1")))
	whole := tarOf(t, "s2.jpg", j, "s2.cls", []byte("0"), "s3.jpg", j, "s3.cls", []byte("1"))
	members, err := IndexShard(bytes.NewReader(whole))
	if err != nil {
		t.Fatal(err)
	}
	cut := whole[:members[2].Offset-512] // at s3.jpg's header: s2 stays
	writeFile(t, filepath.Join(wds, "b.tar"), cut)
	c2 := uploadTo(t, "index-cut", wds)
	in, _, err = IndexRemote(ctx, "s3://index-cut/ds", c2.Options())
	if err != nil {
		t.Fatal(err)
	}
	if in.Failed != 1 || len(in.Unreadable) != 1 || !strings.Contains(in.Unreadable[0], c2.Where("b.tar")) || !strings.Contains(in.Unreadable[0], "truncated") {
		t.Fatalf("index of a cut shard: %d unreadable, %q; want 1, naming b.tar as truncated", in.Failed, in.Unreadable)
	}
	d, err := OpenWith("s3://index-cut/ds", Options{Bucket: c2.Options()})
	if err != nil {
		t.Fatal(err)
	}
	bad := -1
	for i := range d.Len() {
		if _, err := d.Fetch(ctx, i, nil); err != nil {
			bad = i
			mustFetchCorrupt(t, d, i, c2.Where("b.tar"))
		}
	}
	if bad < 0 {
		t.Errorf("no sample of the cut shard failed")
	}
}

// putRecorder records the object requests a client sends, in order.
type putRecorder struct {
	mu   sync.Mutex
	reqs []string // "PUT key", "DELETE key"
}

func (p *putRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if (r.Method == http.MethodPut || r.Method == http.MethodDelete) && strings.Count(r.URL.Path, "/") > 2 { // an object's, not the bucket's
		p.mu.Lock()
		p.reqs = append(p.reqs, r.Method+" "+r.URL.Path)
		p.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (p *putRecorder) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reqs)
}

// TestUploadManifestLastAndReplace: the manifest is uploaded last; a
// prefix that holds objects is refused (nothing uploaded) unless Replace,
// which deletes the old manifest first and the old objects the new
// dataset lacks, so the prefix reads as the new dataset alone.
func TestUploadManifestLastAndReplace(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()
	srv := testServer(t)
	rec := &putRecorder{}
	o := bucket.Options{Endpoint: srv.Endpoint(), Concurrency: 4, Transport: rec}
	u, _ := bucket.ParseURL("s3://upload-order/ds")
	mk, err := bucket.OpenUnchecked(u, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := mk.MakeBucket(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := bucket.Open(ctx, u, o)
	if err != nil {
		t.Fatal(err)
	}
	big := t.TempDir()
	write(t, big, "png", "files") // 7 files
	up, err := Upload(ctx, c, big)
	if err != nil || up.Objects != 8 {
		t.Fatalf("Upload: %+v, %v", up, err)
	}
	reqs := rec.list()
	if len(reqs) != 8 || !strings.HasSuffix(reqs[len(reqs)-1], "/"+ManifestName) {
		t.Errorf("uploads in order %q; want the manifest last", reqs)
	}

	small := t.TempDir()
	ws := tiny
	ws.N = 2
	if _, err := Write(ctx, filepath.Join(small, "ds"), ws, WriteOptions{Format: "png", Layout: "files"}); err != nil {
		t.Fatal(err)
	}
	small = filepath.Join(small, "ds")
	before := len(rec.list())
	if _, err := Upload(ctx, c, small); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "already holds 8 objects") {
		t.Fatalf("Upload onto a prefix holding a dataset: %v; want it refused", err)
	}
	if n := len(rec.list()); n != before {
		t.Errorf("a refused upload sent %d requests that change objects", n-before)
	}
	if _, err := UploadWith(ctx, c, small, UploadOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
	reqs = rec.list()[before:]
	if len(reqs) == 0 || reqs[0] != "DELETE /upload-order/ds/"+ManifestName || reqs[len(reqs)-1] != "PUT /upload-order/ds/"+ManifestName {
		t.Errorf("a replacing upload's requests %q: want the old manifest deleted first and the new one put last", reqs)
	}
	objs, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Errorf("after --replace the prefix holds %d objects; want the new dataset's 3", len(objs))
	}
	remoteMemo.Lock()
	clear(remoteMemo.m)
	remoteMemo.Unlock()
	d, err := OpenRemote(ctx, c, Options{})
	if err != nil || d.Len() != 2 {
		t.Fatalf("after --replace: %v, %d samples; want 2", err, lenOf(d))
	}
}

func lenOf(d *Dataset) int {
	if d == nil {
		return -1
	}
	return d.Len()
}

// uploadRefused uploads dir to an empty prefix and wants it refused
// before anything is uploaded, naming bad.
func uploadRefused(t *testing.T, name, dir, bad string) {
	t.Helper()
	srv := testServer(t)
	ctx := context.Background()
	u, _ := bucket.ParseURL("s3://" + name + "/ds")
	o := bucket.Options{Endpoint: srv.Endpoint(), Concurrency: 4}
	mk, err := bucket.OpenUnchecked(u, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := mk.MakeBucket(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := bucket.Open(ctx, u, o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Upload(ctx, c, dir)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), bad) {
		t.Errorf("Upload of a dataset with %s: %v; want it refused naming it", bad, err)
	}
	if objs, err := c.List(ctx); err != nil || len(objs) != 0 {
		t.Errorf("after a refused upload the prefix holds %d objects (%v); want none", len(objs), err)
	}
}

// TestBucketOversizeImageIsCorrupt: an ImageFolder object listed over
// MaxUserImageBytes (256 MiB) is indexed as unreadable, named, and its
// sample fails as bad data (ErrCorrupt, exit 2), as on disk; it is never
// fetched.
func TestBucketOversizeImageIsCorrupt(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "cat", "1.jpg"), encodeTest(t, "jpeg", 20, 12, 1))
	c := uploadTo(t, "oversize", dir)
	objs, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The listing as a bucket holding a 300 MiB image would give it (the
	// opener refuses it by its listed size, before any request).
	objs = append(objs, bucket.Object{Name: "dog/big.jpg", Size: 300 << 20, ETag: "x"})
	meta := &remoteMeta{c: c, info: &Remote{URL: c.URL().String()}, sizes: map[string]int64{}, etags: map[string]string{}, kind: KindImageFolder}
	for _, o := range objs {
		meta.sizes[o.Name], meta.etags[o.Name] = o.Size, o.ETag
	}
	if meta.x, err = remoteIndex(ctx, c, KindImageFolder, objs, remoteOpener(ctx, c, meta.sizes, meta.etags)); err != nil {
		t.Fatal(err)
	}
	in := meta.describe()
	if in.Failed != 1 || len(in.Unreadable) != 1 || !strings.Contains(in.Unreadable[0], c.Where("dog/big.jpg")) {
		t.Errorf("index with a 300 MiB image: %d unreadable, %q; want it counted and named", in.Failed, in.Unreadable)
	}
	d, err := meta.dataset(Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Stats().Requests
	for i := range d.Len() {
		if meta.x.Files[meta.x.Samples[i].File] == "dog/big.jpg" {
			mustFetchCorrupt(t, d, i, c.Where("dog/big.jpg"), "more than")
		}
	}
	if n := c.Stats().Requests - before; n != 0 {
		t.Errorf("%d requests for an object over the limit; want none", n)
	}
}
