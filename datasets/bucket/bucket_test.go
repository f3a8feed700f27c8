package bucket_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// newBucket makes a fresh bucket on the test server and a client for
// s3://NAME/prefix.
func newBucket(t *testing.T, name string, o bucket.Options) *bucket.Client {
	t.Helper()
	ctx := context.Background()
	u, err := bucket.ParseURL("s3://" + name + "/data/set")
	if err != nil {
		t.Fatal(err)
	}
	if o.Endpoint == "" {
		o.Endpoint = srv.Endpoint()
	}
	mk := o
	mk.Endpoint = srv.Endpoint()
	if err := makeBucket(ctx, u, mk); err != nil {
		t.Fatal(err)
	}
	c, err := bucket.Open(ctx, u, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func makeBucket(ctx context.Context, u bucket.URL, o bucket.Options) error {
	// Open refuses a missing bucket, so make it through a client of an
	// existing one's shape: MakeBucket needs only the endpoint.
	c, err := bucket.OpenUnchecked(u, o)
	if err != nil {
		return err
	}
	return c.MakeBucket(ctx)
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in, bucket, prefix, err string
	}{
		{"s3://data/a/b", "data", "a/b", ""},
		{"s3://data", "data", "", ""},
		{"s3://data/", "data", "", ""},
		{"s3://data/x/", "data", "x", ""},
		{"/local/dir", "", "", "want s3://"},
		{"s3://Data/x", "", "", "only a-z"},
		{"s3://ab/x", "", "", "3 to 63"},
		{"s3://data/a//b", "", "", "empty, . or .."},
		{"s3://data/a/../b", "", "", "empty, . or .."},
	} {
		u, err := bucket.ParseURL(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseURL(%q) = %v, want error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || u.Bucket != tc.bucket || u.Prefix != tc.prefix {
			t.Errorf("ParseURL(%q) = %+v, %v; want %s %q", tc.in, u, err, tc.bucket, tc.prefix)
		}
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"s3://data/a/b", "s3://x", "s3://a.b-c/../", "s3:///"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := bucket.ParseURL(s)
		if err != nil {
			return
		}
		again, err := bucket.ParseURL(u.String())
		if err != nil || again != u {
			t.Fatalf("ParseURL(%q) = %+v, but its String %q parses to %+v, %v", s, u, u.String(), again, err)
		}
	})
}

func TestPutListGetReadAt(t *testing.T) {
	ctx := context.Background()
	c := newBucket(t, "put-list-get", bucket.Options{ChunkSize: 4096})
	objs := map[string][]byte{}
	for i, size := range []int{0, 1, 4095, 4096, 4097, 20000} {
		b := make([]byte, size)
		rand.Read(b)
		name := fmt.Sprintf("cls%d/img%02d.jpg", i%2, i)
		objs[name] = b
		if err := c.Put(ctx, name, bytes.NewReader(b), int64(size)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(objs) {
		t.Fatalf("listed %d objects, want %d: %+v", len(list), len(objs), list)
	}
	for i, o := range list {
		if i > 0 && list[i-1].Name >= o.Name {
			t.Errorf("listing not in key order: %q before %q", list[i-1].Name, o.Name)
		}
		want, ok := objs[o.Name]
		if !ok || o.Size != int64(len(want)) {
			t.Fatalf("listed %q (%d bytes), want one of the uploaded names at its size", o.Name, o.Size)
		}
		got, err := c.Get(ctx, o.Name, o.Size, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get %s: %d bytes, %v; want the %d uploaded", o.Name, len(got), err, len(want))
		}
		if o.Size > 10 {
			p := make([]byte, o.Size-7)
			if err := c.ReadAt(ctx, o.Name, p, 5); err != nil || !bytes.Equal(p, want[5:o.Size-2]) {
				t.Fatalf("ReadAt %s [5, %d): %v or wrong bytes", o.Name, o.Size-2, err)
			}
		}
	}
	st := c.Stats()
	if st.Requests < int64(2*len(objs)) || st.Bytes == 0 || st.Retries != 0 || st.Failures != 0 || st.LatencyMean <= 0 || st.LatencyP99 < st.LatencyMean/2 {
		t.Errorf("stats after a clean run: %+v", st)
	}
	// A key that does not exist: not retried, named.
	_, err = c.Get(ctx, "cls0/missing.jpg", 10, nil)
	if err == nil || !strings.Contains(err.Error(), "s3://put-list-get/data/set/cls0/missing.jpg") || !strings.Contains(err.Error(), "NoSuchKey") {
		t.Errorf("missing key: %v", err)
	}
	if st2 := c.Stats(); st2.Retries != 0 || st2.Failures != 1 {
		t.Errorf("a missing key was retried or not counted as a failure: %+v", st2)
	}
}

// faulty is a reverse proxy in front of the server that spoils requests
// on a schedule: a 503 SlowDown, a body cut short, a reset connection.
type faulty struct {
	n     atomic.Int64
	fault func(n int64) string // "", "503", "truncate", "reset"
	rp    *httputil.ReverseProxy
}

func (f *faulty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Query().Has("location") || r.URL.Path == "/" {
		f.rp.ServeHTTP(w, r)
		return
	}
	switch f.fault(f.n.Add(1)) {
	case "503":
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		return
	case "truncate":
		rec := httptest.NewRecorder()
		f.rp.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
		panic(http.ErrAbortHandler) // the client sees the body end early
	case "norange":
		// A server that ignores Range answers 200 OK from the object's
		// start, with no Content-Range: the same bytes, relabelled.
		rec := httptest.NewRecorder()
		f.rp.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Range")
		w.WriteHeader(http.StatusOK)
		w.Write(rec.Body.Bytes())
		return
	case "reset":
		// Headers and part of the body, then a reset: mid-body, so net/http
		// cannot retry it on its own and the client must.
		rec := httptest.NewRecorder()
		f.rp.ServeHTTP(rec, r)
		conn, buf, _ := w.(http.Hijacker).Hijack()
		fmt.Fprintf(buf, "HTTP/1.1 %d OK\r\nContent-Length: %d\r\n\r\n", rec.Code, rec.Body.Len())
		buf.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
		buf.Flush()
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
		return
	}
	f.rp.ServeHTTP(w, r)
}

func TestRetriesFaults(t *testing.T) {
	ctx := context.Background()
	up, _ := url.Parse(srv.Endpoint())
	f := &faulty{rp: httputil.NewSingleHostReverseProxy(up)}
	f.rp.ErrorLog = nil
	f.fault = func(int64) string { return "" }
	ps := httptest.NewServer(f)
	defer ps.Close()
	c := newBucket(t, "retries", bucket.Options{Endpoint: ps.URL, Backoff: time.Millisecond})
	want := make([]byte, 50000)
	rand.Read(want)
	if err := c.Put(ctx, "shard-0.tar", bytes.NewReader(want), int64(len(want))); err != nil {
		t.Fatal(err)
	}
	for _, fault := range []string{"503", "truncate", "reset"} {
		t.Run(fault, func(t *testing.T) {
			before := c.Stats()
			f.n.Store(0)
			f.fault = func(n int64) string {
				if n <= 2 {
					return fault
				}
				return ""
			}
			p := make([]byte, 30000)
			if err := c.ReadAt(ctx, "shard-0.tar", p, 1000); err != nil {
				t.Fatalf("ReadAt through two %s faults: %v", fault, err)
			}
			if !bytes.Equal(p, want[1000:31000]) {
				t.Fatal("wrong bytes after retries")
			}
			st := c.Stats()
			if st.Retries-before.Retries != 2 || st.Failures != before.Failures {
				t.Errorf("two %s faults: retries %d, failures %d; want 2 and 0", fault, st.Retries-before.Retries, st.Failures-before.Failures)
			}
			if fault == "503" && st.SlowDowns-before.SlowDowns != 2 {
				t.Errorf("two 503s counted as %d", st.SlowDowns-before.SlowDowns)
			}
		})
	}
	t.Run("range ignored", func(t *testing.T) {
		f.fault = func(int64) string { return "norange" }
		err := c.ReadAt(ctx, "shard-0.tar", make([]byte, 10), 100)
		if err == nil || !strings.Contains(err.Error(), "Content-Range") {
			t.Fatalf("a server ignoring Range: %v, want an error naming Content-Range", err)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		f.fault = func(int64) string { return "503" }
		before := c.Stats()
		err := c.ReadAt(ctx, "shard-0.tar", make([]byte, 10), 0)
		if err == nil || !strings.Contains(err.Error(), "s3://retries/data/set/shard-0.tar") {
			t.Fatalf("a 503 every time: %v", err)
		}
		if st := c.Stats(); st.Retries-before.Retries != bucket.DefaultRetries || st.Failures-before.Failures != 1 {
			t.Errorf("a request failing every time: %+v (before %+v)", st, before)
		}
	})
}

// TestOpenErrors: each way Open can fail is one line naming the cause,
// well within OpenTimeout.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a := l.Addr().String()
		l.Close()
		return "http://" + a
	}()
	newBucket(t, "exists", bucket.Options{})
	for _, tc := range []struct {
		name, url, endpoint, key, want string
	}{
		{"unreachable", "s3://exists/x", closed, "", "cannot reach"},
		{"wrong key", "s3://exists/x", "", "nobody", "refused the credentials"},
		{"missing bucket", "s3://no-such-bucket/x", "", "", "no such bucket"},
		{"bad endpoint", "s3://exists/x", "ftp://127.0.0.1:1", "", "want http://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.key != "" {
				t.Setenv("AWS_ACCESS_KEY_ID", tc.key)
			}
			ep := tc.endpoint
			if ep == "" {
				ep = srv.Endpoint()
			}
			u, err := bucket.ParseURL(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			_, err = bucket.Open(ctx, u, bucket.Options{Endpoint: ep})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Open: %v; want one line with %q", err, tc.want)
			}
		})
	}
	t.Run("no credentials", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
		t.Setenv("HOME", t.TempDir())
		u, _ := bucket.ParseURL("s3://exists/x")
		_, err := bucket.Open(ctx, u, bucket.Options{Endpoint: srv.Endpoint()})
		if err == nil || !strings.Contains(err.Error(), "no credentials") {
			t.Fatalf("Open without credentials: %v", err)
		}
	})
}

// TestCancel: a cancelled context ends a request at once, as its error.
func TestCancel(t *testing.T) {
	c := newBucket(t, "cancel", bucket.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Get(ctx, "x", 10, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v", err)
	}
}

// TestInterruptedUploadLeavesNoParts: a multipart upload cancelled part
// way is aborted: no incomplete upload is left on the server.
func TestInterruptedUploadLeavesNoParts(t *testing.T) {
	c := newBucket(t, "interrupted", bucket.Options{})
	big := make([]byte, bucket.PartSize+bucket.PartSize/2)
	ctx, cancel := context.WithCancel(context.Background())
	r := &cancelAfter{r: bytes.NewReader(big), after: bucket.PartSize + 1<<20, cancel: cancel}
	err := c.Put(ctx, "big.tar", r, int64(len(big)))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put cancelled part way: %v", err)
	}
	for _, u := range c.IncompleteUploads(context.Background()) {
		t.Errorf("an incomplete upload is left: %s", u)
	}
	if _, err := c.Get(context.Background(), "big.tar", 1, nil); err == nil {
		t.Error("the interrupted object exists")
	}
}

// cancelAfter cancels a context once after bytes have been read from it;
// a plain reader (no ReadAt), so the upload streams its parts.
type cancelAfter struct {
	r      *bytes.Reader
	after  int64
	read   int64
	cancel func()
}

func (r *cancelAfter) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.read += int64(n)
	if r.read >= r.after {
		r.cancel()
	}
	return n, err
}

// TestExplicitCredentials: Options.AccessKey and SecretKey are used
// instead of the environment: right keys open the bucket with wrong ones
// (or none) in the environment, and wrong explicit keys are refused
// with right ones there.
func TestExplicitCredentials(t *testing.T) {
	ctx := context.Background()
	newBucket(t, "explicit", bucket.Options{})
	u, _ := bucket.ParseURL("s3://explicit/x")
	t.Run("right keys, wrong environment", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "nobody")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
		if _, err := bucket.Open(ctx, u, bucket.Options{Endpoint: srv.Endpoint(), AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}); err != nil {
			t.Fatalf("Open with explicit keys: %v", err)
		}
	})
	t.Run("right keys, no environment", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
		if _, err := bucket.Open(ctx, u, bucket.Options{Endpoint: srv.Endpoint(), AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}); err != nil {
			t.Fatalf("Open with explicit keys: %v", err)
		}
	})
	t.Run("wrong keys, right environment", func(t *testing.T) {
		_, err := bucket.Open(ctx, u, bucket.Options{Endpoint: srv.Endpoint(), AccessKey: "nobody", SecretKey: "wrong"})
		if err == nil || !strings.Contains(err.Error(), "refused the credentials") {
			t.Fatalf("Open with wrong explicit keys: %v", err)
		}
	})
}
