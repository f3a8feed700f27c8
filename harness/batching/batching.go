// Package batching collates processed samples into the contiguous batches
// that are uploaded to a device, and defines Loader, the narrow interface
// through which the training loop receives them.
//
// A Batch is one [Size, 3, Crop, Crop] float32 tensor in a single slice plus
// Size int32 labels, the layout that torch's default_collate produces and a
// host-to-device copy wants. Batches come from a Pool and go back to it, so a
// steady-state run allocates no batch memory: with the document's sizes a
// batch is 201 MB, and allocating one per step would measure the garbage
// collector rather than the pipeline.
package batching

import (
	"context"
	"fmt"
	"sync"
)

// Batch is a collated batch of samples.
type Batch struct {
	Index     int       // position in the stream of batches, from 0
	Size      int       // samples in the batch
	SampleLen int       // float32 values per sample (3×Crop×Crop)
	Data      []float32 // Size×SampleLen values, sample-major
	Labels    []int32   // Size labels
}

// Sample returns the slot of sample j within the batch.
func (b *Batch) Sample(j int) []float32 {
	return b.Data[j*b.SampleLen : (j+1)*b.SampleLen : (j+1)*b.SampleLen]
}

// Bytes is the size of the batch's payload in bytes, labels included: what a
// host-to-device copy moves.
func (b *Batch) Bytes() int64 {
	return int64(len(b.Data))*4 + int64(len(b.Labels))*4
}

// Put copies one processed sample and its label into slot j.
func (b *Batch) Put(j int, sample []float32, label int) error {
	if j < 0 || j >= b.Size {
		return fmt.Errorf("batching: slot %d out of range [0, %d)", j, b.Size)
	}
	if len(sample) != b.SampleLen {
		return fmt.Errorf("batching: sample has %d values, batch slots hold %d", len(sample), b.SampleLen)
	}
	copy(b.Sample(j), sample)
	b.Labels[j] = int32(label)
	return nil
}

// Pool recycles batches of one shape. It is safe for concurrent use. It
// grows on demand and never blocks: how many batches are alive at once is
// bounded by the pipeline's queues, not by the pool, so a collator waiting on
// the pool can never deadlock a pipeline whose samples arrive out of order.
type Pool struct {
	size, sampleLen int

	mu        sync.Mutex
	free      []*Batch
	allocated int
}

// NewPool returns a pool of batches of size samples of sampleLen values.
func NewPool(size, sampleLen int) (*Pool, error) {
	if size <= 0 {
		return nil, fmt.Errorf("batching: batch size %d must be positive", size)
	}
	if sampleLen <= 0 {
		return nil, fmt.Errorf("batching: sample length %d must be positive", sampleLen)
	}
	return &Pool{size: size, sampleLen: sampleLen}, nil
}

// Get returns a batch from the pool, or a new one if none is free. Its
// contents are whatever the last user left; every slot is overwritten by
// collation.
func (p *Pool) Get() *Batch {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return b
	}
	p.allocated++
	p.mu.Unlock()
	return &Batch{
		Size:      p.size,
		SampleLen: p.sampleLen,
		Data:      make([]float32, p.size*p.sampleLen),
		Labels:    make([]int32, p.size),
	}
}

// Put returns a batch to the pool. Batches of another shape are dropped.
func (p *Pool) Put(b *Batch) {
	if b == nil || b.Size != p.size || b.SampleLen != p.sampleLen {
		return
	}
	p.mu.Lock()
	p.free = append(p.free, b)
	p.mu.Unlock()
}

// Allocated is how many batches the pool has made in all: the peak number
// alive at once.
func (p *Pool) Allocated() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.allocated
}

// Loader delivers batches to a training loop, in order.
type Loader interface {
	// Next returns the next batch, or io.EOF after the last one, or the
	// error that stopped the loader (which names the stage and the item).
	Next(ctx context.Context) (*Batch, error)
	// Release hands a batch back once the consumer is done with it (after
	// its upload has completed). Releasing a batch twice is a bug.
	Release(*Batch)
	// Close stops the loader and waits for everything it started. It is
	// safe to call more than once and after an error.
	Close() error
}
