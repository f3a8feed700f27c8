package loader

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/pipeline"
)

// transformSalt separates the transforms' random streams from the dataset's.
const transformSalt = 0x7472616e73666f72

// Loader is the input pipeline, with its cache, delivering batches in
// order. It implements batching.Loader.
type Loader struct {
	p       *pipeline.Pipeline
	out     *pipeline.Queue[*batching.Batch]
	batches *batching.Pool
	data    *disk // nil without Config.Data
}

var _ batching.Loader = (*Loader)(nil)

// processed is a transformed sample on its way to the collator: its values
// in data (float32 transfer) or pix (uint8 transfer).
type processed struct {
	data   []float32
	pix    []uint8
	label  int
	cached bool // the cached sample (level.Sample): never recycled
	// file, with a device that decodes (Config.DeviceDecodes), is the
	// sample's JPEG, and pix holds its header alone: the collator hands
	// the file to the batch by swapping buffers with its slot.
	file []byte
}

// newProcessed makes a sample buffer of the configuration's dtype.
func newProcessed(dt batching.DType, sampleLen int) *processed {
	if dt == batching.Uint8 {
		return &processed{pix: make([]uint8, sampleLen)}
	}
	return &processed{data: make([]float32, sampleLen)}
}

// New starts the pipeline for n batches, with what cache says cached:
//
//	index → load (Workers) → transform (Workers) → collate (Workers) → batch → batches (Prefetch)
//
// (fetch and decode in place of load for a dataset on disk or in a
// bucket). The level's cut decides, by the table of package level: a
// stage before the cut hands out the output of the stage the level keeps
// (level.Level.Kept), made once for sample 0 before timing (keepers), or
// nothing if that stage comes later; the stages from the cut on run.
// Batching, and what follows, always run.
func New(ctx context.Context, cache level.Level, cfg Config, n int) (*Loader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Supports(cache); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fmt.Errorf("number of batches %d must be positive", n)
	}
	w, err := newWiring(cfg, cache)
	if err != nil {
		return nil, err
	}
	// The dataset on disk, if any, prepared and opened before timing starts.
	if w.dk, err = cfg.openDisk(ctx, n); err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done && w.dk != nil && w.dk.d != nil {
			w.dk.d.Close()
		}
	}()
	// The cache of the stage the level keeps (the last before its cut),
	// made once, before timing starts, by that stage's keeper (Supports
	// checked there is one).
	if kept, ok := cache.Kept(cfg.Source()); ok {
		if w.cached, err = keepers[kept](ctx, w); err != nil {
			return nil, err
		}
	}
	p := pipeline.New(ctx)
	p.Record(cfg.Recorder)
	batches, err := w.start(p, n)
	if err != nil {
		p.Close()
		return nil, err
	}
	done = true
	return &Loader{p: p, out: batches, batches: w.pool, data: w.dk}, nil
}

// wiring is what the stages New starts share: the configuration and
// level, the buffers, the transforms, the dataset and the cache made
// before timing.
type wiring struct {
	cfg       Config
	cache     level.Level
	pool      *batching.Pool
	q, alive  int
	raws      *freelist[*datasets.Sample]
	outs      *freelist[*processed]
	impls     chan *transformer // one transform (with its scratch space) and random source per worker
	devDecode bool              // the device decodes the files (Config.DeviceDecodes at a level that decodes)
	dk        *disk             // nil without Config.Data
	cached    caches
}

// newWiring makes the batches' pool, the samples' free lists and one
// transformer per worker.
func newWiring(cfg Config, cache level.Level) (*wiring, error) {
	ds, W := cfg.Dataset, cfg.Workers
	sampleLen := cfg.SampleLen()
	dt := cfg.Placement.DType()
	pool, err := batching.NewPoolOf(dt, cfg.Batch, sampleLen)
	if err != nil {
		return nil, err
	}
	w := &wiring{cfg: cfg, cache: cache, pool: pool, q: queueCap(W), alive: samplesAlive(W)}
	w.raws = newFreelist(w.alive, func() *datasets.Sample { return datasets.NewSample(ds.Width, ds.Height) })
	// With a device that decodes (Config.DeviceDecodes) at a level that
	// runs the decode stage, the files go on to the batches and the host
	// makes each sample's header alone (deviceStages).
	w.devDecode = cfg.DeviceDecodes() && cache.Runs(level.Decode)
	outLen := sampleLen
	if w.devDecode {
		outLen = transforms.DeviceHeader
	}
	w.outs = newFreelist(w.alive, func() *processed { return newProcessed(dt, outLen) })
	// Handed out through a channel: the source lives in the heap once, so
	// passing it to Apply allocates nothing per sample.
	w.impls = make(chan *transformer, W)
	for range W {
		t, err := newTransformer(cfg)
		if err != nil {
			return nil, err
		}
		w.impls <- t
	}
	return w, nil
}

// openDisk prepares and opens Data (nil without it) for n batches: its
// page cache and the dataset (a level that keeps the network's output
// then swaps in its local copy: keepLocalCopy).
func (c Config) openDisk(ctx context.Context, n int) (*disk, error) {
	if c.Data == "" {
		return nil, nil
	}
	if err := c.PreparePageCache(ctx); err != nil {
		return nil, err
	}
	d, err := c.openData(ctx)
	if err != nil {
		return nil, err
	}
	if f := d.Manifest().Format; c.DeviceDecodes() && !strings.Contains(f, "jpeg") {
		d.Close()
		return nil, fmt.Errorf("decoder nvjpeg decodes JPEGs: %s holds %s", d.Dir(), f)
	}
	dk := &disk{d: d, max: int64(c.MaxFailures), fetchers: c.fetchers(),
		delivered: make([]atomic.Int32, d.Len()), total: int64(n) * int64(c.Batch)}
	if b := d.Bucket(); b != nil {
		dk.base = b.Stats()
	}
	return dk, nil
}

// start starts p's stages for n batches: the index through its window,
// one of the three ways to processed samples (synthetic, from Data, or
// Data's files for the device to decode), then collate and batch.
func (w *wiring) start(p *pipeline.Pipeline, n int) (*pipeline.Queue[*batching.Batch], error) {
	cfg, B, W := w.cfg, w.cfg.Batch, w.cfg.Workers
	if cfg.MeasureCPU {
		if err := p.MeasureCPU(); err != nil {
			return nil, err
		}
	}
	// The window bounds how far the pipeline runs ahead of the consumer:
	// a sample may enter only while fewer than Prefetch batches' worth of
	// samples are in flight, as DataLoader's prefetch_factor bounds it. The
	// collator returns a batch's tokens when it emits the batch. Without
	// it, the first batch's samples share the cores with several later
	// batches' and time to first batch grows with the worker count.
	//
	// Until the first batch is out the window admits that batch alone (the
	// rest of its room is taken by placeholder tokens, returned with the
	// first batch), so the first batch does not share the cores with the
	// batches after it.
	//
	// With data in a bucket it admits at least one sample per fetcher
	// (Config.Window), so every request --fetch-concurrency allows can be
	// in flight: Prefetch small batches would cap them.
	ahead := cfg.prefetch() * B
	if w.dk != nil {
		ahead = window(ahead, w.dk.fetchers, cfg.Remote())
	}
	held := ahead - B
	win, err := pipeline.NewWindow(ahead, held)
	if err != nil {
		return nil, err
	}
	idx, err := pipeline.WindowedSource(p, "index", n*B, w.q, win, func(i int) int { return i })
	if err != nil {
		return nil, err
	}
	var samples *pipeline.Queue[*processed]
	var loaded *pipeline.Queue[*datasets.Sample]
	switch {
	case w.devDecode:
		samples, err = w.deviceStages(p, idx)
	case w.dk != nil:
		loaded, err = w.diskStages(p, idx)
	default:
		loaded, err = w.loadStage(p, idx)
	}
	if err == nil && loaded != nil {
		samples, err = w.transformStage(p, loaded)
	}
	if err != nil {
		return nil, err
	}
	c := &collator{pool: w.pool, size: B, open: map[int]*openBatch{}, outs: w.outs, window: win, held: held, files: w.devDecode}
	filled, err := pipeline.Map(p, string(level.Collate), samples, W, w.q, c.copyIn)
	if err != nil {
		return nil, err
	}
	return pipeline.Aggregate(p, string(level.Batch), filled, cfg.prefetch(), c.emit, c.flush)
}

// loadStage is the synthetic fill's load stage: the fill, after
// Config.LoadLatency.
func (w *wiring) loadStage(p *pipeline.Pipeline, idx *pipeline.Queue[int]) (*pipeline.Queue[*datasets.Sample], error) {
	ds, latency := w.cfg.Dataset, w.cfg.LoadLatency
	load := func(ctx context.Context, it pipeline.Item[int]) (*datasets.Sample, error) {
		if latency > 0 {
			time.Sleep(latency)
		}
		if err := ctx.Err(); err != nil {
			return nil, err // before allocating a sample, which cannot be interrupted
		}
		s := w.raws.get()
		if err := ds.FillContext(ctx, it.Value%ds.N, s); err != nil {
			w.raws.put(s)
			return nil, err
		}
		return s, nil
	}
	return pipeline.Map(p, string(level.Load), idx, w.cfg.Workers, w.q, cut(w.cache, level.Load, load, w.cached.raw))
}

// transformStage is the transform stage on loaded's raw samples.
func (w *wiring) transformStage(p *pipeline.Pipeline, loaded *pipeline.Queue[*datasets.Sample]) (*pipeline.Queue[*processed], error) {
	seed, cachedRaw := w.cfg.Dataset.Seed, w.cached.raw
	transform := func(ctx context.Context, it pipeline.Item[*datasets.Sample]) (*processed, error) {
		raw := it.Value
		out := w.outs.get()
		t := <-w.impls
		err := t.apply(ctx, out, &raw.Image, seed, it.Index)
		w.impls <- t
		out.label = raw.Label
		if raw != cachedRaw {
			w.raws.put(raw)
		}
		if err != nil {
			w.outs.put(out)
			return nil, err
		}
		return out, nil
	}
	return pipeline.Map(p, string(level.Transform), loaded, w.cfg.Workers, w.q, cut(w.cache, level.Transform, transform, w.cached.out))
}

// caches is the output of the stage a level keeps (level.Level.Kept), and
// of the stages it needs first, for sample 0, made before timing; nil
// for the stages after it.
type caches struct {
	enc *encoded         // Fetch's: one sample's bytes
	raw *datasets.Sample // Load's or Decode's: one raw sample (Transform's input too)
	out *processed       // Transform's: one processed sample (of raw)
}

// keepers is, per stage before batching whose output a level can keep
// (level.Level.Kept), the code that makes that output once, before
// timing: for sample 0, or for the network read a local copy of the
// bucket. A level cut at a stage that has a keeper needs no code here; a
// level that keeps a stage with none the loader refuses, naming it
// (Config.Supports). A stage at or after batching keeps a whole batch:
// the ladder's (package ladder), with no loader.
var keepers = map[level.Stage]func(context.Context, *wiring) (caches, error){
	level.Load:      keepRaw,
	level.Network:   keepLocalCopy,
	level.Fetch:     keepBytes,
	level.Decode:    keepRaw,
	level.Transform: keepProcessed,
}

// keepLocalCopy keeps the network's output: a local copy of the bucket's
// objects, made before timing starts (once per listing), which the fetch
// stage then reads as a directory is read, on Workers fetchers.
func keepLocalCopy(ctx context.Context, w *wiring) (caches, error) {
	d, copied, err := w.cfg.localCopy(ctx, w.dk.d) // closes the bucket's
	w.dk.d, w.dk.copied, w.dk.base = d, copied, bucket.Stats{}
	w.dk.fetchers = w.cfg.Workers
	return caches{}, err
}

// keepBytes keeps fetch's output: sample 0's bytes.
func keepBytes(ctx context.Context, w *wiring) (caches, error) {
	data, err := w.dk.d.Fetch(ctx, 0, nil)
	if err != nil {
		return caches{}, err
	}
	return caches{enc: &encoded{data: data, cached: true}}, nil
}

// keepRaw keeps the output of load, or of decode: raw sample 0.
func keepRaw(ctx context.Context, w *wiring) (caches, error) {
	m := caches{raw: datasets.NewSample(w.cfg.Dataset.Width, w.cfg.Dataset.Height)}
	if w.dk != nil {
		return m, w.dk.d.Fill(0, m.raw)
	}
	return m, w.cfg.Dataset.FillContext(ctx, 0, m.raw)
}

// keepProcessed keeps transform's output: sample 0 processed (of the raw
// sample keepRaw makes).
func keepProcessed(ctx context.Context, w *wiring) (caches, error) {
	m, err := keepRaw(ctx, w)
	if err != nil {
		return m, err
	}
	m.out = newProcessed(w.cfg.Placement.DType(), w.cfg.SampleLen())
	m.out.label, m.out.cached = m.raw.Label, true
	t := <-w.impls
	err = t.apply(ctx, m.out, &m.raw.Image, w.cfg.Dataset.Seed, 0)
	w.impls <- t
	return m, err
}

// cut is stage s's function at level lv: f where lv runs s; where it does
// not, a stage that hands out v, the output made before timing (keepers).
func cut[In, Out any](lv level.Level, s level.Stage, f func(context.Context, pipeline.Item[In]) (Out, error), v Out) func(context.Context, pipeline.Item[In]) (Out, error) {
	if !lv.Runs(s) {
		return func(context.Context, pipeline.Item[In]) (Out, error) { return v, nil }
	}
	if ran := stageRan; ran != nil {
		return func(ctx context.Context, it pipeline.Item[In]) (Out, error) { ran(s); return f(ctx, it) }
	}
	return f
}

// stageRan, set by a test only, is told of every item a stage's own code
// processes (not a cache's), so the test can check the table's cut. Nil,
// it costs nothing: cut returns the stage's function as it is.
var stageRan func(level.Stage)

// transformer is one worker's transform and random source.
type transformer struct {
	t   transforms.Transform
	u8  transforms.Uint8Applier   // t, when the placement is Device
	dev *transforms.DeviceApplier // the device transform's host half, alone
	// pre takes a raw sample that is its crop already (Config.DecodeCrop:
	// the decode stage decoded the crop alone) of an image of w×h.
	pre  transforms.Precropped
	w, h int
	rng  prng.Source
}

// newTransformer makes a worker's transform for cfg's implementation and
// placement.
func newTransformer(cfg Config) (*transformer, error) {
	if cfg.Impl == transforms.DeviceName {
		d, err := transforms.NewDeviceApplier(cfg.Transforms, cfg.DeviceCrop)
		if err != nil {
			return nil, err
		}
		return &transformer{dev: d}, nil
	}
	t, err := transforms.New(cfg.Impl, cfg.Transforms)
	if err != nil {
		return nil, err
	}
	tr := &transformer{t: t}
	if cfg.DecodesCrop() {
		p, ok := t.(transforms.Precropped)
		if !ok || cfg.Placement != Host {
			return nil, errDecodeCropImpl
		}
		tr.pre, tr.w, tr.h = p, cfg.Dataset.Width, cfg.Dataset.Height
	}
	if cfg.Placement == Device {
		u, ok := t.(transforms.Uint8Applier)
		if !ok {
			return nil, fmt.Errorf("placement device: transforms %q cannot stop before ConvertColor", cfg.Impl)
		}
		tr.u8 = u
	}
	return tr, nil
}

// apply transforms src into out with the random stream of sample position
// pos: Apply for placement Host, ApplyUint8 for placement Device.
//
// A transform that is transforms.Interruptible (naive) stops when ctx
// ends, however large the image.
func (t *transformer) apply(ctx context.Context, out *processed, src *datasets.Image, seed uint64, pos int) error {
	t.rng = prng.New(seed^transformSalt, uint64(pos))
	if t.dev != nil {
		return t.dev.ApplyDevice(out.pix, src, &t.rng)
	}
	if it, ok := t.t.(transforms.Interruptible); ok {
		if t.u8 != nil {
			return it.ApplyUint8Context(ctx, out.pix, src, &t.rng)
		}
		return it.ApplyContext(ctx, out.data, src, &t.rng)
	}
	if t.u8 != nil {
		return t.u8.ApplyUint8(out.pix, src, &t.rng)
	}
	if t.pre != nil && (src.Width != t.w || src.Height != t.h) {
		return t.pre.ApplyPrecropped(out.data, src, t.w, t.h, &t.rng)
	}
	return t.t.Apply(out.data, src, &t.rng)
}

// collator is batching, in two stages: "collate" workers copy processed
// samples into their batch's slot, in parallel (a batch's samples finish
// together when the workers are many, and one goroutine copying them one
// after the other would hold the batch back); the "batch" stage counts the
// filled slots and emits complete batches in index order, whatever order
// the samples arrive in.
type collator struct {
	pool *batching.Pool
	size int
	outs *freelist[*processed]
	// window holds a token per sample in flight; see NewLoader. held is
	// the placeholder tokens to return with the first batch.
	window *pipeline.Window
	held   int
	next   int  // the next batch to emit; the batch stage's alone
	files  bool // the batches carry JPEG files (Config.DeviceDecodes)

	mu    sync.Mutex
	open  map[int]*openBatch
	spare []*openBatch // recycled bookkeeping
}

type openBatch struct {
	b      *batching.Batch
	filled int
}

// batch returns batch k's buffer, taking one from the pool on first use.
func (c *collator) batch(k int) *batching.Batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	ob := c.open[k]
	if ob == nil {
		if n := len(c.spare); n > 0 {
			ob, c.spare = c.spare[n-1], c.spare[:n-1]
		} else {
			ob = new(openBatch)
		}
		ob.b, ob.filled = c.pool.Get(), 0
		ob.b.Index = k
		if c.files && ob.b.JPEG == nil {
			ob.b.JPEG = make([][]byte, ob.b.Size)
		}
		c.open[k] = ob
	}
	return ob.b
}

// copyIn is the collate stage: it copies one sample into its slot and
// passes on the batch's index.
func (c *collator) copyIn(_ context.Context, it pipeline.Item[*processed]) (int, error) {
	k, slot := it.Index/c.size, it.Index%c.size
	s := it.Value
	b := c.batch(k)
	var err error
	if s.file != nil {
		// A file for the device to decode: the header into the slot,
		// the file into the batch, in exchange for the slot's old one.
		copy(b.SamplePix(slot), s.pix)
		b.Labels[slot] = int32(s.label)
		b.JPEG[slot], s.file = s.file, b.JPEG[slot][:0]
	} else if b.DType == batching.Uint8 {
		err = b.PutUint8(slot, s.pix, s.label)
	} else {
		err = b.Put(slot, s.data, s.label)
	}
	if !s.cached {
		c.outs.put(s)
	}
	return k, err
}

// emit is the batch stage: it counts filled slots and emits every batch
// that is complete, in order.
func (c *collator) emit(_ context.Context, it pipeline.Item[int], e *pipeline.Emitter[*batching.Batch]) error {
	c.mu.Lock()
	c.open[it.Value].filled++
	c.mu.Unlock()
	for {
		c.mu.Lock()
		ob := c.open[c.next]
		if ob == nil || ob.filled < c.size {
			c.mu.Unlock()
			return nil
		}
		b := ob.b
		delete(c.open, c.next)
		c.spare = append(c.spare, ob)
		c.mu.Unlock()
		c.window.Release(c.size + c.held)
		c.held = 0
		if !e.Emit(pipeline.Item[*batching.Batch]{Index: c.next, Value: b}) {
			return nil
		}
		c.next++
	}
}

func (c *collator) flush(context.Context, *pipeline.Emitter[*batching.Batch]) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.open) > 0 {
		return fmt.Errorf("%d batches left incomplete", len(c.open))
	}
	return nil
}

// Next implements batching.Loader.
func (l *Loader) Next(ctx context.Context) (*batching.Batch, error) {
	it, err := l.out.Next(ctx)
	return it.Value, err
}

// Release implements batching.Loader.
func (l *Loader) Release(b *batching.Batch) { l.batches.Put(b) }

// Close implements batching.Loader.
func (l *Loader) Close() error {
	err := l.p.Close()
	if l.data != nil {
		return cmp.Or(err, l.data.verify(), l.data.d.Close())
	}
	return err
}

// Data is what the loader read from a dataset on disk: the bytes fetched
// and the samples skipped (Config.MaxFailures). Zero without Config.Data.
func (l *Loader) Data() DataStats {
	if l.data == nil {
		return DataStats{}
	}
	return l.data.stats()
}

// Stats returns the pipeline's statistics.
func (l *Loader) Stats() pipeline.Stats { return l.p.Stats() }

// Allocated is the number of batch buffers the loader has made: the peak
// number of batches alive at once.
func (l *Loader) Allocated() int { return l.batches.Allocated() }
