// Package bucket reads and writes datasets in S3-compatible object storage:
// the fetch stage of a loader whose data lives in a bucket.
//
// A Client wraps minio-go's low-level API (minio.Core: one HTTP request per
// call, no hidden goroutines, no hidden retries) with what a training
// loader needs and what headspace measures:
//
//   - at most Options.Concurrency requests in flight, whatever the number
//     of workers asking (the --fetch-concurrency of the loader);
//   - whole-object GETs for small files, ranged GETs for samples inside
//     shards, split into Options.ChunkSize pieces for large reads;
//   - retries with exponential backoff and jitter and a deadline per
//     attempt (resets, stalls, truncated bodies, 5xx and 503 SlowDown are
//     retried; 4xx answers such as NoSuchKey and AccessDenied are not);
//   - counters a result file records: requests, bytes, retries, failures,
//     503s, and the latency of each successful request (mean and p99).
//
// Credentials and the endpoint come the standard way: AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or the shared credentials
// file (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE), unless
// Options.AccessKey gives them explicitly; the endpoint from
// Options.Endpoint (--s3-endpoint), AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL,
// else AWS. An explicit endpoint is addressed path-style, as local servers
// need. Open checks the bucket within OpenTimeout, so wrong credentials, a
// missing bucket and an unreachable endpoint are one clear error.
package bucket

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/headspace-bench/headspace/internal/summary"
)

// Scheme prefixes a bucket URL: s3://BUCKET/PREFIX.
const Scheme = "s3://"

// The defaults of Options.
const (
	// DefaultConcurrency is the requests in flight at most: enough to
	// cover a cross-region round trip at the sample sizes of the anchors
	// (the S3 Connector's 16 workers), few enough for a small server.
	DefaultConcurrency = 16
	// DefaultChunkSize is the largest single ranged GET: 8 MiB, the low
	// end of the usual 8–16 MB advice.
	DefaultChunkSize = 8 << 20
	// DefaultRetries is the attempts after the first for one request.
	DefaultRetries = 4
	// DefaultRequestTimeout is the deadline of one attempt (MosaicML
	// Streaming's download timeout).
	DefaultRequestTimeout = 60 * time.Second
	// DefaultBackoff is the wait before the first retry; it doubles, with
	// jitter, up to maxBackoff.
	DefaultBackoff = 50 * time.Millisecond
	maxBackoff     = 2 * time.Second
	// OpenTimeout bounds Open's check of the endpoint, credentials and
	// bucket.
	OpenTimeout = 10 * time.Second
	// latencyWindow is how many request latencies the client keeps for
	// its mean and p99 (the most recent ones).
	latencyWindow = 1 << 16
)

// IsURL reports whether s names a bucket (s3://…) rather than a directory.
func IsURL(s string) bool { return strings.HasPrefix(s, Scheme) }

// URL is a bucket and a key prefix: s3://BUCKET/PREFIX.
type URL struct {
	Bucket string
	Prefix string // without leading or trailing slashes; "" is the whole bucket
}

// ParseURL parses s3://BUCKET[/PREFIX].
func ParseURL(s string) (URL, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return URL{}, fmt.Errorf("bucket: %q: want s3://BUCKET/PREFIX", s)
	}
	b, p, _ := strings.Cut(rest, "/")
	if err := validBucket(b); err != nil {
		return URL{}, fmt.Errorf("bucket: %q: %v", s, err)
	}
	p = strings.Trim(p, "/")
	if strings.Contains(p, "//") || strings.Contains("/"+p+"/", "/../") || strings.Contains("/"+p+"/", "/./") {
		return URL{}, fmt.Errorf("bucket: %q: prefix has an empty, . or .. element", s)
	}
	return URL{Bucket: b, Prefix: p}, nil
}

// validBucket checks S3's bucket naming rules (3–63 of a–z, 0–9, '.', '-',
// starting and ending with a letter or digit).
func validBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q must be 3 to 63 characters", b)
	}
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-'
		if !ok || (i == 0 || i == len(b)-1) && (c == '.' || c == '-') {
			return fmt.Errorf("bucket name %q: only a-z, 0-9, '.' and '-', starting and ending with a letter or digit", b)
		}
	}
	return nil
}

func (u URL) String() string {
	if u.Prefix == "" {
		return Scheme + u.Bucket
	}
	return Scheme + u.Bucket + "/" + u.Prefix
}

// Key is the object key of rel, a slash-separated name under the prefix.
func (u URL) Key(rel string) string {
	if u.Prefix == "" {
		return rel
	}
	return u.Prefix + "/" + rel
}

// Join is the URL of rel under u.
func (u URL) Join(rel string) string { return Scheme + u.Bucket + "/" + u.Key(rel) }

// Options configure a Client. The zero value takes every default.
type Options struct {
	// Endpoint is the server's URL (http://127.0.0.1:7070); "" takes
	// AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, then AWS.
	Endpoint string
	// Region is signed for; "" takes AWS_REGION, AWS_DEFAULT_REGION, then
	// us-east-1.
	Region string
	// Concurrency is the most requests in flight (DefaultConcurrency).
	Concurrency int
	// ChunkSize is the largest single GET of a read (DefaultChunkSize).
	ChunkSize int64
	// Retries is the attempts after the first (DefaultRetries); -1 means
	// none.
	Retries int
	// RequestTimeout is one attempt's deadline (DefaultRequestTimeout).
	RequestTimeout time.Duration
	// Backoff is the wait before the first retry (DefaultBackoff).
	Backoff time.Duration
	// Transport carries the requests; nil is a pooled transport with
	// keep-alive and Concurrency idle connections per host.
	Transport http.RoundTripper
	// AccessKey and SecretKey, when AccessKey is set, are the credentials,
	// used instead of the environment and the shared credentials file:
	// for a caller that starts its own server in-process (an experiment
	// against package s3server's), so that it need not change the
	// process's environment. Never recorded in a result file.
	AccessKey, SecretKey string
}

// withDefaults fills the zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	o.Endpoint = cmp.Or(o.Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"))
	o.Region = cmp.Or(o.Region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), "us-east-1")
	if err := o.Validate(); err != nil {
		return o, fmt.Errorf("bucket: %w", err)
	}
	o.Concurrency = cmp.Or(o.Concurrency, DefaultConcurrency)
	o.ChunkSize = cmp.Or(o.ChunkSize, DefaultChunkSize)
	switch {
	case o.Retries == 0:
		o.Retries = DefaultRetries
	case o.Retries == -1:
		o.Retries = 0
	case o.Retries < 0 || o.Retries > 100:
		return o, fmt.Errorf("bucket: retries %d out of -1..100", o.Retries)
	}
	if o.RequestTimeout < 0 {
		return o, fmt.Errorf("bucket: request timeout %v must be positive", o.RequestTimeout)
	}
	if o.Backoff < 0 {
		return o, fmt.Errorf("bucket: backoff %v must be positive", o.Backoff)
	}
	o.RequestTimeout = cmp.Or(o.RequestTimeout, DefaultRequestTimeout)
	o.Backoff = cmp.Or(o.Backoff, DefaultBackoff)
	return o, nil
}

// EndpointURL is the server o reads: Endpoint, else AWS_ENDPOINT_URL_S3,
// else AWS_ENDPOINT_URL, else AWS (https://s3.amazonaws.com).
func (o Options) EndpointURL() string {
	return cmp.Or(o.Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"), "https://s3.amazonaws.com")
}

// Setup is how a result file names the server at endpoint: the URL
// without a trailing slash, and for a server on this machine's loopback
// (127.0.0.1, ::1, localhost) without its port, which such a server (a
// test's, make bench-remote's) draws afresh at each start: two runs
// against servers on this machine are one setup, two servers elsewhere
// are two.
func Setup(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return strings.TrimRight(endpoint, "/")
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return u.Scheme + "://" + host
	}
	return u.Scheme + "://" + u.Host
}

// endpoint splits an endpoint URL into minio's host and TLS setting.
func endpoint(e string) (host string, secure, explicit bool, err error) {
	if e == "" {
		return "s3.amazonaws.com", true, false, nil
	}
	u, err := url.Parse(e)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") {
		return "", false, false, fmt.Errorf("bucket: endpoint %q: want http://HOST[:PORT] or https://HOST[:PORT]", e)
	}
	return u.Host, u.Scheme == "https", true, nil
}

// Client reads and writes the objects under one URL. It is safe for
// concurrent use.
type Client struct {
	url   URL
	opts  Options
	core  minio.Core
	creds *credentials.Credentials
	sem   chan struct{}
	st    counters
}

// Object is a listed object: its name relative to the prefix, size, ETag
// and modification time.
type Object struct {
	Name    string
	Size    int64
	ETag    string
	ModTime time.Time
}

// Open makes a client for u and checks, within OpenTimeout, that the
// endpoint answers, the credentials are accepted and the bucket exists.
func Open(ctx context.Context, u URL, o Options) (*Client, error) {
	c, err := OpenUnchecked(u, o)
	if err != nil {
		return nil, err
	}
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// OpenUnchecked makes a client for u without asking the server anything:
// for MakeBucket, before the bucket exists.
func OpenUnchecked(u URL, o Options) (*Client, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	host, secure, explicit, err := endpoint(o.Endpoint)
	if err != nil {
		return nil, err
	}
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 2 * o.Concurrency
		t.MaxIdleConnsPerHost = 2 * o.Concurrency
		t.DisableCompression = true
		tr = t
	}
	c := &Client{url: u, opts: o, sem: make(chan struct{}, o.Concurrency)}
	tr = &countingTransport{next: tr, st: &c.st}
	lookup := minio.BucketLookupAuto
	if explicit {
		lookup = minio.BucketLookupPath
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
	})
	if o.AccessKey != "" {
		creds = credentials.NewStaticV4(o.AccessKey, o.SecretKey, "")
	}
	mc, err := minio.New(host, &minio.Options{
		Creds: creds, Secure: secure, Transport: tr, Region: o.Region,
		BucketLookup: lookup, MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("bucket: %s: %v", u, err)
	}
	c.core = minio.Core{Client: mc}
	c.creds = creds
	c.st.lat = make([]float64, 0, 1024)
	return c, nil
}

// check asks the server, within OpenTimeout, whether the bucket exists.
func (c *Client) check(ctx context.Context) error {
	if v, _ := c.creds.GetWithContext(nil); v.AccessKeyID == "" {
		return fmt.Errorf("bucket: %s: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in the shared credentials file", c.url)
	}
	cctx, cancel := context.WithTimeout(ctx, OpenTimeout)
	defer cancel()
	// A listing of one key, not a HEAD of the bucket: HEAD answers have
	// no body, so a refused key and a missing bucket look alike. It is
	// retried as any request is (a reset on the way is not a failure).
	err := c.do(cctx, "check "+c.url.String(), func(actx context.Context) (int64, error) {
		lctx, stop := context.WithCancel(actx)
		defer stop()
		for o := range c.core.Client.ListObjects(lctx, c.url.Bucket, minio.ListObjectsOptions{MaxKeys: 1}) {
			return 0, o.Err
		}
		return 0, actx.Err()
	})
	if err == nil {
		return nil
	}
	if errorResponse(err).Code == "NoSuchBucket" {
		return fmt.Errorf("bucket: %s: no such bucket at %s", c.url, c.Endpoint())
	}
	return c.explain(ctx, cctx, err)
}

// explain turns Open's failure into one line: unreachable, refused
// credentials, or the server's own words.
func (c *Client) explain(ctx, cctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if cctx.Err() != nil {
		return fmt.Errorf("bucket: %s: %s did not answer within %v", c.url, c.Endpoint(), OpenTimeout)
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) {
		return fmt.Errorf("bucket: %s: cannot reach %s: %v", c.url, c.Endpoint(), rootCause(err))
	}
	r := errorResponse(err)
	// 403 is every refusal (InvalidAccessKeyId, SignatureDoesNotMatch,
	// AccessDenied, ExpiredToken); versitygw answers an unknown key with
	// 404 XAdminUserNotFound.
	if r.StatusCode == http.StatusForbidden || r.Code == "InvalidAccessKeyId" || r.Code == "XAdminUserNotFound" {
		return fmt.Errorf("bucket: %s: %s refused the credentials (%s: %s): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or the profile", c.url, c.Endpoint(), r.Code, strings.TrimSuffix(r.Message, "."))
	}
	return fmt.Errorf("bucket: %s: %s: %v", c.url, c.Endpoint(), rootCause(err))
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// URL is the client's bucket and prefix.
func (c *Client) URL() URL { return c.url }

// Endpoint is the server the client talks to.
func (c *Client) Endpoint() string {
	u := c.core.EndpointURL()
	return u.Scheme + "://" + u.Host
}

// Options are the client's settings, defaults filled in.
func (c *Client) Options() Options { return c.opts }

// Where names rel for an error: s3://BUCKET/PREFIX/rel.
func (c *Client) Where(rel string) string { return c.url.Join(rel) }

// List lists every object under the prefix, names relative to it, in
// key order. A listing that fails or outlasts the request deadline goes
// on from the last key listed: it fails only when retries make no
// progress (DLIO's 50 million objects took hours to list; no deadline
// may cut that short while keys keep coming).
func (c *Client) List(ctx context.Context) ([]Object, error) {
	prefix := c.url.Prefix
	if prefix != "" {
		prefix += "/"
	}
	var out []Object
	after := ""
	for {
		before, done := after, false
		err := c.do(ctx, "list "+c.url.String(), func(ctx context.Context) (int64, error) {
			lctx, cancel := context.WithCancel(ctx)
			defer cancel() // ends minio-go's listing goroutine on an early return
			for o := range c.core.Client.ListObjects(lctx, c.url.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true, StartAfter: after}) {
				if o.Err != nil {
					return 0, o.Err
				}
				after = o.Key
				name := strings.TrimPrefix(o.Key, prefix)
				if name == "" || strings.HasSuffix(name, "/") {
					continue // a folder marker
				}
				out = append(out, Object{Name: name, Size: o.Size, ETag: strings.Trim(o.ETag, `"`), ModTime: o.LastModified})
			}
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			done = true
			return 0, nil
		})
		switch {
		case done:
			return out, nil
		case err != nil && (after == before || ctx.Err() != nil):
			return nil, err
		}
	}
}

// ErrChanged is wrapped by the error of a read of an object that is not
// as it was listed: deleted since (NoSuchKey), shorter or longer than the
// listed size, or replaced (another ETag). It is the data's fault, not
// the network's: it is never retried.
var ErrChanged = errors.New("object changed since the listing")

// changed is a permanent error that is ErrChanged.
type changed struct{ err error }

func (e changed) Error() string        { return e.err.Error() }
func (e changed) Unwrap() error        { return e.err }
func (e changed) Is(target error) bool { return target == ErrChanged }

// ReadAt reads len(p) bytes of rel from off, in ranged GETs of at most
// ChunkSize each. A short body is retried; an object shorter than asked
// is an error naming it.
func (c *Client) ReadAt(ctx context.Context, rel string, p []byte, off int64) error {
	return c.ReadListedAt(ctx, Object{Name: rel}, p, off)
}

// ReadListedAt is ReadAt of the listed object o: each answer must be of
// o's size and ETag (a zero field is not checked), or the read fails
// with ErrChanged, naming the object.
func (c *Client) ReadListedAt(ctx context.Context, o Object, p []byte, off int64) error {
	for done := 0; done < len(p); {
		n := min(int64(len(p)-done), c.opts.ChunkSize)
		if err := c.get(ctx, o, p[done:done+int(n)], off+int64(done), true); err != nil {
			return err
		}
		done += int(n)
	}
	return nil
}

// Get reads the whole of rel, size bytes as listed, into buf (grown if
// needed) with one GET (ranged GETs of ChunkSize for a larger object).
func (c *Client) Get(ctx context.Context, rel string, size int64, buf []byte) ([]byte, error) {
	return c.GetListed(ctx, Object{Name: rel, Size: size}, buf)
}

// GetListed is Get of the listed object o: the answer must be of o's
// size and ETag (an empty ETag is not checked), or the read fails with
// ErrChanged, naming the object.
func (c *Client) GetListed(ctx context.Context, o Object, buf []byte) ([]byte, error) {
	size := o.Size
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if size <= c.opts.ChunkSize {
		return buf, c.get(ctx, o, buf, 0, false)
	}
	return buf, c.ReadListedAt(ctx, o, buf, 0)
}

// get fills p from o at off with one request (and its retries): a
// ranged GET, or a whole-object GET when ranged is false (off is then 0
// and p the whole object). An answer that shows the object is not as
// listed (another ETag, another size, no such key, a range beyond its
// end) is ErrChanged.
func (c *Client) get(ctx context.Context, o Object, p []byte, off int64, ranged bool) error {
	rel := o.Name
	key := c.url.Key(rel)
	err := c.do(ctx, "get "+c.Where(rel), func(ctx context.Context) (int64, error) {
		var opts minio.GetObjectOptions
		if ranged {
			if err := opts.SetRange(off, off+int64(len(p))-1); err != nil {
				return 0, permanent{err}
			}
		}
		body, _, h, err := c.core.GetObject(ctx, c.url.Bucket, key, opts)
		if err != nil {
			return 0, err
		}
		defer body.Close()
		if etag := strings.Trim(h.Get("ETag"), `"`); o.ETag != "" && etag != "" && etag != o.ETag {
			return 0, changed{fmt.Errorf("replaced since the listing: ETag %s, listed %s", etag, o.ETag)}
		}
		if want := fmt.Sprintf("bytes %d-%d/", off, off+int64(len(p))-1); ranged && !strings.HasPrefix(h.Get("Content-Range"), want) {
			// A server that ignores Range sends the object from its
			// start: the bytes would be another sample's.
			return 0, permanent{fmt.Errorf("asked for %s, the server answered Content-Range %q", strings.TrimSuffix(want, "/"), h.Get("Content-Range"))}
		}
		if ranged && o.Size > 0 {
			_, total, _ := strings.Cut(h.Get("Content-Range"), "/")
			if total != "*" && total != fmt.Sprint(o.Size) {
				return 0, changed{fmt.Errorf("%s bytes, listed %d (changed since the listing)", total, o.Size)}
			}
		}
		if cl := h.Get("Content-Length"); !ranged && cl != "" && cl != fmt.Sprint(len(p)) {
			return 0, changed{fmt.Errorf("%s bytes, listed %d (changed since the listing)", cl, len(p))}
		}
		n, err := io.ReadFull(body, p)
		if err == nil && !ranged {
			// The whole object must be exactly as listed.
			var one [1]byte
			if m, _ := body.Read(one[:]); m > 0 {
				return int64(n), changed{fmt.Errorf("object is longer than the %d bytes listed (changed since the listing?)", len(p))}
			}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			// A body that ended early: retried, as a network error is.
			err = fmt.Errorf("truncated body: %d of %d bytes", n, len(p))
		}
		return int64(n), err
	})
	switch errorResponse(err).Code {
	case "NoSuchKey":
		return changed{fmt.Errorf("%w (deleted since the listing?)", err)}
	case "InvalidRange":
		return changed{fmt.Errorf("%w (shorter than listed: changed since the listing?)", err)}
	}
	return err
}

// Put uploads r (size bytes) as rel; minio-go splits an object larger
// than PartSize into a multipart upload, which Put aborts if it fails or
// ctx ends, so no parts are left behind. r must be an io.Seeker to be
// retried.
func (c *Client) Put(ctx context.Context, rel string, r io.Reader, size int64) error {
	key := c.url.Key(rel)
	seeker, canRetry := r.(io.Seeker)
	first := true
	err := c.do(ctx, "put "+c.Where(rel), func(ctx context.Context) (int64, error) {
		if !first {
			if !canRetry {
				return 0, permanent{errors.New("upload failed and its source cannot be re-read")}
			}
			if _, err := seeker.Seek(0, io.SeekStart); err != nil {
				return 0, permanent{err}
			}
		}
		first = false
		_, err := c.core.Client.PutObject(ctx, c.url.Bucket, key, r, size, minio.PutObjectOptions{
			PartSize: PartSize, ContentType: "application/octet-stream", DisableContentSha256: true,
		})
		return 0, err
	})
	if err != nil && size > PartSize {
		// A multipart upload that failed or was interrupted leaves its
		// parts on the server, billed and invisible to a listing.
		// minio-go aborts the uploads it started and saw fail; this
		// covers the rest (an attempt cut off between two parts), within
		// its own short deadline, since ctx may be done.
		actx, cancel := context.WithTimeout(context.Background(), abortTimeout)
		defer cancel()
		c.core.Client.RemoveIncompleteUpload(actx, c.url.Bucket, key)
	}
	return err
}

// Remove deletes rel (a missing object is no error, as in S3).
func (c *Client) Remove(ctx context.Context, rel string) error {
	key := c.url.Key(rel)
	return c.do(ctx, "remove "+c.Where(rel), func(ctx context.Context) (int64, error) {
		return 0, c.core.Client.RemoveObject(ctx, c.url.Bucket, key, minio.RemoveObjectOptions{})
	})
}

// PartSize is the part size of a multipart upload: Put uploads an
// object larger than it in parts.
const PartSize = 16 << 20

// abortTimeout bounds the abort of a failed multipart upload.
const abortTimeout = 5 * time.Second

// MakeBucket creates the URL's bucket if it does not exist (for uploads
// to a fresh local server).
func (c *Client) MakeBucket(ctx context.Context) error {
	ok, err := c.core.Client.BucketExists(ctx, c.url.Bucket)
	if err == nil && ok {
		return nil
	}
	if err := c.core.Client.MakeBucket(ctx, c.url.Bucket, minio.MakeBucketOptions{Region: c.opts.Region}); err != nil {
		return fmt.Errorf("bucket: make %s: %v", c.url.Bucket, err)
	}
	return nil
}

// permanent marks an error that is not retried.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// retryable reports whether an attempt's error is worth another attempt.
func retryable(err error) bool {
	var p permanent
	var ch changed
	if errors.As(err, &p) || errors.As(err, &ch) {
		return false
	}
	r := errorResponse(err)
	if r.StatusCode != 0 {
		return r.StatusCode >= 500 || r.StatusCode == http.StatusTooManyRequests || r.Code == "SlowDown" || r.Code == "RequestTimeout"
	}
	return true // a network error: reset, refused, timeout, EOF, a truncated body
}

// do runs one request with the concurrency limit, retries, backoff and a
// deadline per attempt, counting each attempt, its bytes and its latency.
func (c *Client) do(ctx context.Context, what string, attempt func(ctx context.Context) (int64, error)) error {
	backoff := c.opts.Backoff
	var last error
	for try := 0; try <= c.opts.Retries; try++ {
		if try > 0 {
			c.st.retries.Add(1)
			wait := backoff/2 + rand.N(backoff)
			backoff = min(2*backoff, maxBackoff)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("bucket: %s: %w", what, ctx.Err())
			case <-t.C:
			}
		}
		select {
		case c.sem <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("bucket: %s: %w", what, ctx.Err())
		}
		actx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
		start := time.Now()
		n, err := attempt(actx)
		took := time.Since(start)
		timedOut := actx.Err() == context.DeadlineExceeded
		cancel()
		<-c.sem
		c.st.bytes.Add(n)
		if err == nil {
			c.st.latency(took)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("bucket: %s: %w", what, ctx.Err())
		}
		if timedOut {
			err = fmt.Errorf("no answer within %v: %w", c.opts.RequestTimeout, err)
		}
		last = err
		if !retryable(err) {
			break
		}
	}
	c.st.failures.Add(1)
	return fmt.Errorf("bucket: %s: %w", what, explainCode(last))
}

// explainCode adds the S3 error code to a server's answer, where there is
// one ("NoSuchKey: The specified key does not exist.").
func explainCode(err error) error {
	r := errorResponse(err)
	if r.Code != "" && !strings.Contains(err.Error(), r.Code) {
		return fmt.Errorf("%s: %w", r.Code, err)
	}
	return err
}

// countingTransport counts every HTTP request the client sends and every
// 503 answer, whatever minio-go call sent it.
type countingTransport struct {
	next http.RoundTripper
	st   *counters
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.st.requests.Add(1)
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
		t.st.slowDowns.Add(1)
	}
	return resp, err
}

// Stats are a client's counters since it was opened.
type Stats struct {
	Requests  int64 // HTTP requests sent, retries included (GET, LIST, PUT, HEAD)
	Bytes     int64 // body bytes received
	Retries   int64 // attempts after a failed one
	Failures  int64 // requests that failed after every retry
	SlowDowns int64 // 503 (SlowDown) answers
	// LatencyMean and LatencyP99 are over the successful requests (the
	// most recent latencyWindow of them): from sending to the last byte.
	LatencyMean, LatencyP99 time.Duration
}

// counters are the client's running counts.
type counters struct {
	requests, bytes, retries, failures, slowDowns atomic.Int64
	mu                                            sync.Mutex
	lat                                           []float64 // seconds, a ring of at most latencyWindow
	pos                                           int
}

func (s *counters) latency(d time.Duration) {
	s.mu.Lock()
	if len(s.lat) < latencyWindow {
		s.lat = append(s.lat, d.Seconds())
	} else {
		s.lat[s.pos] = d.Seconds()
		s.pos = (s.pos + 1) % latencyWindow
	}
	s.mu.Unlock()
}

// Stats reads the counters.
func (c *Client) Stats() Stats {
	s := Stats{
		Requests: c.st.requests.Load(), Bytes: c.st.bytes.Load(), Retries: c.st.retries.Load(),
		Failures: c.st.failures.Load(), SlowDowns: c.st.slowDowns.Load(),
	}
	c.st.mu.Lock()
	lat := append([]float64(nil), c.st.lat...)
	c.st.mu.Unlock()
	if len(lat) > 0 {
		s.LatencyMean = time.Duration(summary.Mean(lat) * float64(time.Second))
		s.LatencyP99 = time.Duration(summary.Percentile(lat, 99) * float64(time.Second))
	}
	return s
}

// errorResponse is the server's S3 error inside err, or the zero value.
func errorResponse(err error) minio.ErrorResponse {
	var r minio.ErrorResponse
	if errors.As(err, &r) {
		return r
	}
	return minio.ToErrorResponse(err)
}

// IncompleteUploads lists the keys of the multipart uploads under the
// prefix that were started and neither completed nor aborted.
func (c *Client) IncompleteUploads(ctx context.Context) []string {
	var out []string
	for u := range c.core.Client.ListIncompleteUploads(ctx, c.url.Bucket, c.url.Prefix, true) {
		if u.Err == nil {
			out = append(out, u.Key)
		}
	}
	return out
}
