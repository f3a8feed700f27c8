package ondisk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/harness/s3server"
)

// The real S3-compatible server of the remote tests, started by the first
// that needs it and stopped by TestMain.
var (
	s3once sync.Once
	s3srv  *s3server.Server
	s3err  error
)

func testServer(t *testing.T) *s3server.Server {
	t.Helper()
	s3once.Do(func() { s3srv, s3err = s3server.Start(context.Background(), s3server.Options{}) })
	if s3err != nil {
		t.Fatal(s3err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", s3srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3srv.SecretKey)
	t.Setenv("AWS_PROFILE", "")
	return s3srv
}

// uploadTo uploads dir to s3://NAME/ds on the test server and opens a
// client for it.
func uploadTo(t *testing.T, name, dir string) *bucket.Client {
	t.Helper()
	srv := testServer(t)
	ctx := context.Background()
	u, err := bucket.ParseURL("s3://" + name + "/ds")
	if err != nil {
		t.Fatal(err)
	}
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
	if _, err := Upload(ctx, c, dir); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRemoteMatchesLocal: every layout, uploaded to a bucket, reads the
// same samples (bytes, labels, decoded pixels) through OpenRemote as
// through OpenWith from the directory.
func TestRemoteMatchesLocal(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	j := encodeTest(t, "jpeg", 20, 12, 1)
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string)
	}{
		{"headspace-shards", func(t *testing.T, dir string) { write(t, dir, "jpeg", "shards") }},
		{"headspace-files", func(t *testing.T, dir string) { write(t, dir, "png", "files") }},
		{"imagefolder", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "b", "1.png"), encodeTest(t, "png", 20, 12, 2))
			writeFile(t, filepath.Join(dir, "a", "deep", "2.jpg"), j)
			writeFile(t, filepath.Join(dir, "a", "3.jpeg"), encodeTest(t, "jpeg", 40, 24, 3))
			writeFile(t, filepath.Join(dir, "b", "fake.jpg"), []byte("GIF89a-not-really"))
			writeFile(t, filepath.Join(dir, ".hidden", "4.jpg"), j)
		}},
		{"webdataset", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "s-0.tar"), tarOf(t, "k/000.jpg", j, "k/000.cls", []byte("3\n"), "k/001.png", encodeTest(t, "png", 20, 12, 2), "k/001.txt", []byte("zebra")))
			writeFile(t, filepath.Join(dir, "s-1.tar"), tarOf(t, "a.jpg", j, "a.cls", []byte("0")))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.make(t, dir)
			local := open(t, dir, Options{})
			c := uploadTo(t, "remote-"+tc.name, dir)
			ctx := context.Background()
			remote, err := OpenRemote(ctx, c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer remote.Close()
			if remote.Len() != local.Len() || remote.Manifest().Format != local.Manifest().Format {
				t.Fatalf("remote: %d samples of %s, local %d of %s", remote.Len(), remote.Manifest().Format, local.Len(), local.Manifest().Format)
			}
			url := "s3://remote-" + tc.name + "/ds"
			in, err := InspectWith(ctx, url, c.Options())
			if err != nil {
				t.Fatal(err)
			}
			lin, err := InspectWith(ctx, dir, bucket.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if in.Remote == nil || in.Count != lin.Count || in.Format != lin.Format || in.Layout != lin.Layout || in.Kind != lin.Kind || (in.Kind == "headspace" && in.Sum != lin.Sum) {
				t.Errorf("InspectWith(%s) = %+v, InspectWith(dir) = %+v", url, in, lin)
			}
			byURL, err := OpenWith(url, Options{Bucket: c.Options()})
			if err != nil || byURL.Len() != local.Len() || byURL.Bucket() == nil {
				t.Fatalf("OpenWith(%s): %v", url, err)
			}
			if r := remote.RemoteInfo(); r == nil || r.Objects == 0 || r.URL != "s3://remote-"+tc.name+"/ds" {
				t.Errorf("RemoteInfo = %+v", r)
			}
			w, h := local.DecodedShape()
			for i := range local.Len() {
				lb, lerr := local.Fetch(ctx, i, nil)
				rb, rerr := remote.Fetch(ctx, i, nil)
				if (lerr != nil) != (rerr != nil) {
					t.Fatalf("sample %d: local error %v, remote %v", i, lerr, rerr)
				}
				if lerr != nil {
					if !strings.Contains(rerr.Error(), "s3://remote-"+tc.name+"/ds/") {
						t.Errorf("sample %d: remote error does not name the object: %v", i, rerr)
					}
					continue
				}
				if !bytes.Equal(lb, rb) {
					t.Fatalf("sample %d: remote bytes differ from local (%d vs %d)", i, len(rb), len(lb))
				}
				ls, rs := datasets.NewSample(w, h), datasets.NewSample(w, h)
				if err := local.Decode(i, lb, ls); err != nil {
					t.Fatal(err)
				}
				if err := remote.Decode(i, rb, rs); err != nil {
					t.Fatal(err)
				}
				if ls.Label != rs.Label || !bytes.Equal(ls.Image.Pix, rs.Image.Pix) {
					t.Fatalf("sample %d: remote decodes to label %d, local %d (or pixels differ)", i, rs.Label, ls.Label)
				}
			}
			st := c.Stats()
			if st.Failures != 0 || st.Bytes == 0 {
				t.Errorf("stats: %+v", st)
			}
		})
	}
}

// TestRemoteNotADataset: a prefix with nothing readable is one line
// naming it.
func TestRemoteNotADataset(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "jpeg", "files")
	c := uploadTo(t, "remote-empty", dir)
	u, _ := bucket.ParseURL("s3://remote-empty/elsewhere")
	c2, err := bucket.Open(context.Background(), u, c.Options())
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenRemote(context.Background(), c2, Options{})
	if err == nil || !strings.Contains(err.Error(), "s3://remote-empty/elsewhere: not a dataset") {
		t.Fatalf("OpenRemote of an empty prefix: %v", err)
	}
}

// TestCopyTo: the local copy of a dataset in a bucket reads as the
// original directory does, and a second copy downloads nothing.
func TestCopyTo(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	src := t.TempDir()
	write(t, src, "jpeg", "shards")
	c := uploadTo(t, "copy-to", src)
	ctx := context.Background()
	d, err := OpenRemote(ctx, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := d.LocalCopyDir()
	if err != nil || !strings.Contains(dir, "copy") {
		t.Fatalf("LocalCopyDir = %q, %v", dir, err)
	}
	got, err := d.CopyTo(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Objects != d.RemoteInfo().Objects || got.Bytes != d.RemoteInfo().Bytes {
		t.Errorf("copied %+v, listed %+v", got, d.RemoteInfo())
	}
	local, orig := open(t, dir, Options{}), open(t, src, Options{})
	for i := range orig.Len() {
		a, err1 := orig.Fetch(ctx, i, nil)
		b, err2 := local.Fetch(ctx, i, nil)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("sample %d of the copy differs: %v %v", i, err1, err2)
		}
	}
	again, err := d.CopyTo(ctx, dir)
	if err != nil || again.Objects != 0 {
		t.Errorf("a second copy: %+v, %v; want nothing copied", again, err)
	}
}

// TestCopyToRefusesEscapingNames: an object name that would leave the
// copy's directory is refused before anything is fetched when the
// dataset uses it, and skipped when it does not (an unused hidden or odd
// key: the index skips it, and so does the copy).
func TestCopyToRefusesEscapingNames(t *testing.T) {
	c := uploadTo(t, "copy-escape", func() string { d := t.TempDir(); write(t, d, "png", "files"); return d }())
	for _, name := range []string{"../evil.jpg", "a/../../evil.jpg", "/abs.jpg", `cat/..\..\x.jpg`} {
		d := &Dataset{dir: "s3://copy-escape/ds", remote: c, remoteInfo: &Remote{URL: "s3://copy-escape/ds"}, sizes: map[string]int64{name: 3},
			m: &Manifest{Files: []File{{Name: name, Size: 3}}}}
		_, err := d.CopyTo(context.Background(), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "leaves the copy's directory") || !errors.Is(err, ErrCorrupt) {
			t.Errorf("CopyTo with a used object named %q: %v; want it refused as bad data", name, err)
		}
		d.m = &Manifest{}
		dir := t.TempDir()
		if cp, err := d.CopyTo(context.Background(), dir); err != nil || cp.Objects != 0 {
			t.Errorf("CopyTo with an unused object named %q: %+v, %v; want it skipped", name, cp, err)
		}
	}
}

// TestIndexRemoteCachesTheListing: after IndexRemote, a new process (an
// empty memo) opens the URL from the cached listing, not a fresh one: an
// object added since is not seen, and the info says cached.
func TestIndexRemoteCachesTheListing(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := t.TempDir()
	write(t, dir, "jpeg", "shards")
	c := uploadTo(t, "cached-listing", dir)
	ctx := context.Background()
	in, p, err := IndexRemote(ctx, "s3://cached-listing/ds", c.Options())
	if err != nil || in.Remote.Cached || !strings.HasPrefix(filepath.Base(p), "s3-") {
		t.Fatalf("IndexRemote: %+v, %s, %v", in, p, err)
	}
	remoteMemo.Lock()
	clear(remoteMemo.m) // as a new process starts
	remoteMemo.Unlock()
	if err := c.Put(ctx, "extra.bin", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	d, err := OpenWith("s3://cached-listing/ds", Options{Bucket: c.Options()})
	if err != nil {
		t.Fatal(err)
	}
	if r := d.RemoteInfo(); !r.Cached || r.Objects != in.Remote.Objects || d.Len() != in.Count {
		t.Errorf("opened after IndexRemote: %+v, %d samples; want the cached listing of %d objects", r, d.Len(), in.Remote.Objects)
	}
	for i := range d.Len() {
		if _, err := d.Fetch(ctx, i, nil); err != nil {
			t.Fatalf("sample %d through the cached listing: %v", i, err)
		}
	}
}

// TestWholeShardReads: with ShardReads whole, every shard is fetched once
// (one GET each, below the chunk size) and its members served from
// memory, the same bytes as ranged reads; a shard is dropped once all its
// members were served.
func TestWholeShardReads(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	for _, layout := range []string{"headspace", "webdataset"} {
		t.Run(layout, func(t *testing.T) {
			dir := t.TempDir()
			shards := 3
			if layout == "headspace" {
				write(t, dir, "jpeg", "shards") // 7 samples in shards of 3
			} else {
				j := encodeTest(t, "jpeg", 20, 12, 1)
				for s := range shards {
					writeFile(t, filepath.Join(dir, fmt.Sprintf("s-%d.tar", s)), tarOf(t, "a.jpg", j, "a.cls", []byte("1"), "b.jpg", j, "b.cls", []byte("2")))
				}
			}
			c := uploadTo(t, "whole-"+layout, dir)
			ctx := context.Background()
			ranged, err := OpenRemote(ctx, c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			whole, err := OpenRemote(ctx, c, Options{ShardReads: ShardReadsWhole})
			if err != nil {
				t.Fatal(err)
			}
			before := c.Stats().Requests
			for i := range whole.Len() {
				a, err1 := ranged.Fetch(ctx, i, nil)
				b, err2 := whole.Fetch(ctx, i, nil)
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Fatalf("sample %d: ranged %v, whole %v, or the bytes differ", i, err1, err2)
				}
			}
			got := c.Stats().Requests - before
			if want := int64(whole.Len() + shards); got != want {
				t.Errorf("%d requests for %d ranged reads and %d whole shards, want %d", got, whole.Len(), shards, want)
			}
			if n := len(whole.whole.live); n != 0 {
				t.Errorf("%d shards still in memory after each member was served once", n)
			}
			if _, err := OpenRemote(ctx, c, Options{ShardReads: "streamed"}); err == nil || !strings.Contains(err.Error(), "want ranged or whole") {
				t.Errorf("ShardReads streamed: %v", err)
			}
		})
	}
}
