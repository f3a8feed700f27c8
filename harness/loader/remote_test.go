package loader

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/s3server"
)

// TestRemoteThroughFaultsLosesNothing: a dataset in a bucket, read through
// a link that resets a fifth of the requests, truncates a tenth and stalls
// 3% past the request deadline (drawn at random, seeded), gives batch for batch the same data as the directory it was
// uploaded from: every fault retried, counted, and every sample delivered
// exactly once per epoch (verify, at Close).
func TestRemoteThroughFaultsLosesNothing(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()
	srv, err := s3server.Start(ctx, s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	local := onDisk(t, "jpeg", "shards", 20, 2)
	u, _ := bucket.ParseURL("s3://faults/ds")
	direct := bucket.Options{Endpoint: srv.Endpoint(), Concurrency: 4}
	mk, err := bucket.OpenUnchecked(u, direct)
	must(t, err)
	must(t, mk.MakeBucket(ctx))
	c, err := bucket.Open(ctx, u, direct)
	must(t, err)
	if _, err := ondisk.Upload(ctx, c, local.Data); err != nil {
		t.Fatal(err)
	}
	lc, err := link.Parse("reset=0.2,truncate=0.1,stall=0.03,stall-for=2s")
	must(t, err)
	up, _ := url.Parse(srv.Endpoint())
	l, err := link.Start(ctx, up.Host, lc)
	must(t, err)
	defer l.Close()

	remote := local
	// Ten retries: a request fails for good only after 11 faults in a row
	// (about 0.33¹¹, 5·10⁻⁶, per request at these rates).
	remote.Bucket = bucket.Options{Endpoint: l.URL(), Concurrency: 3, Backoff: 1, RequestTimeout: 300 * time.Millisecond, Retries: 10}
	remote, err = remote.WithData("s3://faults/ds")
	must(t, err)
	const batches = 12 // 48 samples: two epochs of 20 and 8 more
	for _, lv := range []level.Level{level.None, level.Local} {
		want, wantLabels, _, err := drain(t, level.None, local, batches)
		must(t, err)
		got, gotLabels, ld, err := drain(t, lv, remote, batches)
		if err != nil {
			t.Fatalf("%s through faults: %v", lv, err)
		}
		for i := range want {
			if !slices.Equal(got[i], want[i]) || !slices.Equal(gotLabels[i], wantLabels[i]) {
				t.Fatalf("%s: batch %d from the bucket differs from the directory's", lv, i)
			}
		}
		ds := ld.Data()
		if lv == level.None && (ds.Retries == 0 || ds.Failures != 0 || ds.Requests == 0) {
			t.Errorf("%s: %+v: want retries counted, no failures", lv, ds)
		}
		if st := l.Stats(); st.Resets == 0 || st.Truncations == 0 || st.Stalls == 0 {
			t.Errorf("the link injected no faults: %+v", st)
		}
	}
}

// TestVerifyCatchesLostSamples: verify accepts every sample fetched as the
// index order asks, within two counts per skipped sample, and names the
// samples otherwise.
func TestVerifyCatchesLostSamples(t *testing.T) {
	for _, tc := range []struct {
		counts   []int32
		total    int64
		fetched  int64
		failures int64
		want     string
	}{
		{[]int32{2, 2, 1}, 5, 5, 0, ""},
		{[]int32{2, 1, 2}, 5, 5, 0, "sample 1 1 times (want 2), sample 2 2 times (want 1)"},
		{[]int32{3, 1, 1}, 5, 5, 0, "sample 0 3 times (want 2), sample 1 1 times (want 2)"},
		{[]int32{3, 1, 1}, 5, 6, 1, ""}, // one skipped sample, replaced
		{[]int32{0, 0, 0}, 5, 3, 0, ""}, // interrupted: not checked
	} {
		k := &disk{d: &ondisk.Dataset{}, delivered: make([]atomic.Int32, len(tc.counts)), total: tc.total}
		for j, c := range tc.counts {
			k.delivered[j].Store(c)
		}
		k.samples.Store(tc.fetched)
		k.failures.Store(tc.failures)
		err := k.verify()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("counts %v total %d failures %d: %v, want %q", tc.counts, tc.total, tc.failures, err, tc.want)
		}
	}
}

// TestWindow: with data in a bucket the window admits at least one sample
// per fetcher, so a small batch does not cap the requests in flight; a
// directory keeps Prefetch batches.
func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		data                         string
		batch, prefetch, concurrency int
		want                         int
	}{
		{"/data", 8, 2, 0, 16},
		{"s3://b/ds", 8, 2, 64, 64},
		{"s3://b/ds", 8, 2, 0, 16}, // bucket.DefaultConcurrency is 16
		{"s3://b/ds", 256, 2, 64, 512},
	} {
		c := Config{Data: tc.data, Batch: tc.batch, Prefetch: tc.prefetch, Bucket: bucket.Options{Concurrency: tc.concurrency}}
		if got := c.Window(); got != tc.want {
			t.Errorf("%s, batch %d × prefetch %d, %d in flight: window %d, want %d", tc.data, tc.batch, tc.prefetch, tc.concurrency, got, tc.want)
		}
	}
}
