package loader

import (
	"fmt"
	"math"
)

// queueCap is the capacity of the queues between stages for W workers.
func queueCap(workers int) int { return 2*workers + 2 }

// samplesAlive is the most raw (and processed) sample buffers alive at
// once: two queues and the workers on both sides of them.
func samplesAlive(workers int) int { return 2*queueCap(workers) + 2*workers + 2 }

// Limits on a configuration, beyond which a run is a typo rather than an
// experiment: they keep every size product far from overflow.
const (
	MaxSide     = 1 << 15 // raw image width or height, and the crop
	MaxBatch    = 1 << 16 // samples per batch
	MaxWorkers  = 1 << 10 // goroutines per stage
	MaxPrefetch = 1 << 10 // batches ahead
)

// Bounds reports the first field of c outside its limit.
func (c Config) Bounds() error {
	for _, f := range []struct {
		name  string
		v, hi int
	}{
		{"raw width", c.Dataset.Width, MaxSide},
		{"raw height", c.Dataset.Height, MaxSide},
		{"crop", c.Transforms.Crop, MaxSide},
		{"batch size", c.Batch, MaxBatch},
		{"workers", c.Workers, MaxWorkers},
		{"prefetch", c.Prefetch, MaxPrefetch},
	} {
		if f.v > f.hi {
			return fmt.Errorf("%s %d is over the limit of %d", f.name, f.v, f.hi)
		}
	}
	return nil
}

// BatchBytes is the size of one collated batch: its values in the
// placement's dtype and its int32 labels.
func (c Config) BatchBytes() int64 {
	return int64(c.Batch) * (int64(c.SampleLen())*int64(c.Placement.DType().Size()) + 4)
}

// MemoryEstimate is the host memory a loader of c holds at its peak, in
// bytes, from the buffers New allocates: every raw and processed sample
// buffer that can be alive at once, a transform's scratch space per worker
// (up to four raw images' worth for the naive path's copies), and the
// batches the prefetch window, the collator and the training loop hold
// (Prefetch + 3). An estimate, not a measurement: the Go runtime's own
// overhead comes on top. It saturates at math.MaxInt64 rather than
// overflowing; call Bounds first for sizes that mean something.
func (c Config) MemoryEstimate() int64 {
	raw := float64(c.Dataset.Width) * float64(c.Dataset.Height) * 3
	out := float64(c.SampleLen()) * float64(c.Placement.DType().Size())
	alive := float64(samplesAlive(c.Workers))
	est := alive*(raw+out) + float64(c.Workers)*4*raw + float64(c.prefetch()+3)*float64(c.BatchBytes())
	if est >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(est)
}
