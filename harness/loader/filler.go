package loader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
)

// BatchFiller computes whole batches on one goroutine, sample after sample:
// load, transform and collate, as one PyTorch DataLoader worker process
// does. Batch k is bit-identical to batch k of New with level.None for
// the same Config: sample at position pos = k×Batch+j is dataset sample
// pos mod N transformed with the random stream of pos. A BatchFiller keeps
// scratch space, so it is used by one goroutine at a time.
type BatchFiller struct {
	cfg Config
	t   *transformer
	raw *datasets.Sample
	ds  datasets.Dataset // Config.Dataset, or the dataset on disk
}

// NewBatchFiller checks c and returns a filler for its batches, opening
// c.Data if set (its page cache is left as it is: PreparePageCache is the
// caller's). Workers, Prefetch and Recorder are not used. Close it.
func (c Config) NewBatchFiller() (*BatchFiller, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.DeviceDecodes() {
		return nil, errors.New("decoder nvjpeg: a batch filler makes pixels on the host; the device decodes the files of a loader's batches (goroutine workers)")
	}
	if c.DecodesCrop() {
		return nil, errors.New("--decode-crop on: a batch filler decodes whole images; the goroutine loader decodes the crop alone")
	}
	t, err := newTransformer(c)
	if err != nil {
		return nil, err
	}
	f := &BatchFiller{cfg: c, t: t, raw: datasets.NewSample(c.Dataset.Width, c.Dataset.Height), ds: c.Dataset}
	if c.Data != "" {
		if f.ds, err = c.openData(context.Background()); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Close closes the dataset on disk, if any.
func (f *BatchFiller) Close() error {
	if d, ok := f.ds.(*ondisk.Dataset); ok {
		return d.Close()
	}
	return nil
}

// Failures is the number of samples of a dataset on disk that Fill
// skipped (Config.MaxFailures).
func (f *BatchFiller) Failures() int64 {
	if d, ok := f.ds.(*ondisk.Dataset); ok {
		return d.Failures()
	}
	return 0
}

// Fill computes batch k (k >= 0) into b, which must have the configuration's
// batch size, sample length and dtype (a batch from a batching.Pool made
// with them), and sets b.Index to k.
func (f *BatchFiller) Fill(k int, b *batching.Batch) error {
	c := f.cfg
	sampleLen := c.SampleLen()
	switch {
	case k < 0:
		return fmt.Errorf("loader: batch %d must not be negative", k)
	case b == nil || b.Size != c.Batch || b.SampleLen != sampleLen || b.DType != c.Placement.DType() ||
		len(b.Data)+len(b.Pix) != c.Batch*sampleLen || len(b.Labels) != c.Batch:
		return fmt.Errorf("loader: batch %d: buffer does not hold %d samples of %d %s values", k, c.Batch, sampleLen, c.Placement.DType())
	}
	out := processed{}
	b.Index = k
	for j := range c.Batch {
		pos := k*c.Batch + j
		if c.LoadLatency > 0 {
			time.Sleep(c.LoadLatency)
		}
		if err := f.ds.Fill(pos%c.Dataset.N, f.raw); err != nil {
			return fmt.Errorf("loader: batch %d, sample %d: %w", k, pos, err)
		}
		if b.DType == batching.Uint8 {
			out.pix = b.SamplePix(j)
		} else {
			out.data = b.Sample(j)
		}
		if err := f.t.apply(context.Background(), &out, &f.raw.Image, c.Dataset.Seed, pos); err != nil {
			return fmt.Errorf("loader: batch %d, sample %d: %w", k, pos, err)
		}
		b.Labels[j] = int32(f.raw.Label)
	}
	return nil
}
