package loader

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/pipeline"
)

// DataStats is what a loader read from a dataset on disk or in a bucket.
type DataStats struct {
	Fetched  int64 // bytes the fetch stage read (cached bytes not counted)
	Failures int64 // samples skipped within Config.MaxFailures
	Samples  int64 // samples the fetch stage read
	Epoch    int64 // samples in the dataset
	// From a bucket only: HTTP requests sent and retried, and the mean
	// and p99 latency of the successful ones (package bucket's counters,
	// over the loader's life: warm-up included).
	Requests, Retries       int64
	RequestMean, RequestP99 time.Duration
	// Level local: the bytes downloaded into the local copy before the
	// loader started, and how long that took (none when the copy was
	// already there).
	Copied   int64
	CopyTime time.Duration
}

// disk is the load stage of a dataset on disk, split in two:
//
//	index → fetch (Workers) → decode (Workers) → transform …
//
// fetch reads a sample's bytes (a file, or a member of a shard by offset)
// into a pooled buffer; decode turns them into a pooled raw sample. A
// sample that fails either way is skipped within MaxFailures: it is
// counted and the next sample that reads takes its place.
type disk struct {
	d        *ondisk.Dataset
	max      int64
	fetchers int           // goroutines of the fetch stage (Config.fetchers)
	base     bucket.Stats  // a bucket's counters when the loader started
	copied   ondisk.Copied // a level that keeps Network's output (local): what was downloaded into the local copy
	samples  atomic.Int64
	fetched  atomic.Int64
	// delivered counts each sample's fetches, and total is the samples
	// the loader is to deliver (batches × batch size): verify checks them
	// against each other, so a sample lost or delivered twice is caught.
	delivered []atomic.Int32
	total     int64
	failures  atomic.Int64
}

// encoded is a sample's bytes on their way from fetch to decode: data
// holds sample i's bytes in a buffer that is reused.
type encoded struct {
	i      int
	data   []byte
	cached bool // the cached bytes of a level that keeps Fetch's output: never recycled
}

// skip counts a failed sample if MaxFailures allows, and reports whether
// it did; otherwise the run stops with err.
func (k *disk) skip() bool {
	if k.failures.Add(1) > k.max {
		k.failures.Add(-1)
		return false
	}
	return true
}

// failed is the error that stops the run: err, and how many samples were
// skipped before it when some were.
func (k *disk) failed(err error) error {
	if n := k.failures.Load(); n > 0 {
		return fmt.Errorf("%w (after skipping %d failed samples, the most allowed)", err, n)
	}
	return err
}

// fetch reads sample i's bytes into e, or the next sample's that reads
// within MaxFailures.
func (k *disk) fetch(ctx context.Context, i int, e *encoded) error {
	n := k.d.Len()
	for tries := 0; tries < n; tries++ {
		j := (i + tries) % n
		data, err := k.d.Fetch(ctx, j, e.data)
		e.data = data
		if err == nil {
			e.i = j
			k.fetched.Add(int64(len(data)))
			k.samples.Add(1)
			k.delivered[j].Add(1)
			return nil
		}
		if ctx.Err() != nil || !k.skip() {
			return k.failed(err)
		}
	}
	return fmt.Errorf("loader: %s: no sample could be read", k.d.Dir())
}

// verify checks, once every sample the loader was to deliver has been
// fetched, that each sample of the dataset was fetched as many times as
// the index order asks (total ÷ Len, one more for the first total mod Len):
// every sample exactly once per epoch. A sample skipped within MaxFailures
// is replaced by another, which moves two counts each; beyond that, a
// mismatch is a sample lost or delivered twice, and an error naming them.
func (k *disk) verify() error {
	n := int64(len(k.delivered))
	if n == 0 || k.samples.Load() < k.total {
		return nil // interrupted, or a level that fetches nothing
	}
	var off int64
	var bad []string
	for j := range n {
		want := k.total / n
		if j < k.total%n {
			want++
		}
		got := int64(k.delivered[j].Load())
		if got != want {
			off += max(got-want, want-got)
			if len(bad) < 3 {
				bad = append(bad, fmt.Sprintf("sample %d %d times (want %d)", j, got, want))
			}
		}
	}
	if off > 2*k.failures.Load() {
		return fmt.Errorf("loader: %s: samples lost or delivered twice: %s", k.d.Dir(), strings.Join(bad, ", "))
	}
	return nil
}

// stats is what the loader read so far.
func (k *disk) stats() DataStats {
	ds := DataStats{Fetched: k.fetched.Load(), Failures: k.failures.Load(), Samples: k.samples.Load(), Epoch: int64(k.d.Len()),
		Copied: k.copied.Bytes, CopyTime: k.copied.Took}
	if c := k.d.Bucket(); c != nil {
		st := c.Stats()
		ds.Requests, ds.Retries = st.Requests-k.base.Requests, st.Retries-k.base.Retries
		ds.RequestMean, ds.RequestP99 = st.LatencyMean, st.LatencyP99
	}
	return ds
}

// replacing runs use on e, and while it fails and MaxFailures allows,
// fetches the next sample into e and runs use on it again: the failure
// path of a stage after fetch (decode, or a device decoder's check),
// which reads the replacement in its own worker, timed as that stage. It
// returns the sample used last (a new buffer if e held the cached bytes,
// which are never overwritten) and use's last error, counted against
// MaxFailures (disk.failed).
func (k *disk) replacing(ctx context.Context, e *encoded, use func(*encoded) error) (*encoded, error) {
	err := use(e)
	for err != nil {
		if ctx.Err() != nil || !k.skip() {
			return e, k.failed(err)
		}
		next := (e.i + 1) % k.d.Len()
		if e.cached {
			e = new(encoded) // never overwrite the cached bytes
		}
		if err = k.fetch(ctx, next, e); err == nil {
			err = use(e)
		}
	}
	return e, nil
}

// fetchStage adds the fetch stage of Data: sample it.Value's bytes (mod
// the dataset's length) in a buffer of the free list it returns, after
// Config.LoadLatency; where the level does not run it, the bytes kept
// before timing.
func (w *wiring) fetchStage(p *pipeline.Pipeline, idx *pipeline.Queue[int]) (*pipeline.Queue[*encoded], *freelist[*encoded], error) {
	k, latency := w.dk, w.cfg.LoadLatency
	// A buffer per sample alive, and one per fetcher beyond the workers
	// (data in a bucket runs more fetchers than workers).
	bufs := newFreelist(w.alive+max(0, k.fetchers-w.cfg.Workers), func() *encoded { return new(encoded) })
	n := k.d.Len()
	fetch := func(ctx context.Context, it pipeline.Item[int]) (*encoded, error) {
		if latency > 0 {
			time.Sleep(latency)
		}
		e := bufs.get()
		if err := k.fetch(ctx, it.Value%n, e); err != nil {
			bufs.put(e)
			return nil, err
		}
		return e, nil
	}
	fetched, err := pipeline.Map(p, string(level.Fetch), idx, k.fetchers, w.q, cut(w.cache, level.Fetch, fetch, w.cached.enc))
	return fetched, bufs, err
}

// diskStages adds Data's fetch and decode stages: each runs where the
// level runs it, and hands out what was made of it before timing
// (w.cached) where it does not, as the load stage does without Data.
func (w *wiring) diskStages(p *pipeline.Pipeline, idx *pipeline.Queue[int]) (*pipeline.Queue[*datasets.Sample], error) {
	k := w.dk
	fetched, bufs, err := w.fetchStage(p, idx)
	if err != nil {
		return nil, err
	}
	crop, ds := w.cfg.DecodesCrop(), w.cfg.Dataset
	decode := func(ctx context.Context, it pipeline.Item[*encoded]) (*datasets.Sample, error) {
		s := w.raws.get()
		use := func(e *encoded) error { return k.d.Decode(e.i, e.data, s) }
		if crop {
			// The crop the transform will draw for this position: the
			// first draws of its random stream (transformer.apply).
			rng := prng.New(ds.Seed^transformSalt, uint64(it.Index))
			c := w.cfg.Transforms.Crop
			top, left := transforms.CropOrigin(c, ds.Width, ds.Height, &rng)
			r := turbojpeg.Rect{X: left, Y: top, W: c, H: c}
			use = func(e *encoded) error { return k.d.DecodeCrop(e.i, e.data, s, r) }
		}
		e, err := k.replacing(ctx, it.Value, use)
		if !e.cached {
			bufs.put(e)
		}
		if err != nil {
			w.raws.put(s)
			return nil, err
		}
		return s, nil
	}
	return pipeline.Map(p, string(level.Decode), fetched, w.cfg.Workers, w.q, cut(w.cache, level.Decode, decode, w.cached.raw))
}
