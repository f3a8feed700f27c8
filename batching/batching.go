// Package batching collates processed samples into the contiguous batches
// that are uploaded to a device, and defines Loader, the narrow interface
// through which the training loop receives them.
//
// A Batch is one [Size, 3, Crop, Crop] tensor in a single slice plus Size
// int32 labels, the layout that torch's default_collate produces and a
// host-to-device copy wants. Its values are float32 (Data), the finished
// transform, or uint8 (Pix), the masked crop before ConvertColor and Scale,
// which the device finishes: the document's "postpone int8 to float32
// datatype conversions to the GPU", a quarter of the bytes to copy.
//
// Batches come from a Pool and go back to it, so a steady-state run
// allocates no batch memory: with the document's sizes a float32 batch is
// 201 MB, and allocating one per step would measure the garbage collector
// rather than the pipeline.
package batching

import (
	"context"
	"fmt"
	"sync"
)

// DType is the element type of a batch's values.
type DType int

// The element types a batch can carry.
const (
	Float32 DType = iota // Data: the finished transform, 4 bytes a value
	Uint8                // Pix: the masked crop before ConvertColor and Scale, 1 byte a value
)

// DTypes lists the element types by name, as String writes them.
var DTypes = []string{"float32", "uint8"}

func (d DType) String() string {
	if d < 0 || int(d) >= len(DTypes) {
		return fmt.Sprintf("DType(%d)", int(d))
	}
	return DTypes[d]
}

// Size is the bytes of one value.
func (d DType) Size() int {
	if d == Uint8 {
		return 1
	}
	return 4
}

// Batch is a collated batch of samples. Exactly one of Data and Pix holds
// the values, as DType says.
type Batch struct {
	Index     int       // position in the stream of batches, from 0
	Size      int       // samples in the batch
	SampleLen int       // values per sample (3×Crop×Crop)
	DType     DType     // which of Data and Pix holds the values
	Data      []float32 // Float32: Size×SampleLen values, sample-major
	Pix       []uint8   // Uint8: Size×SampleLen values, sample-major
	Labels    []int32   // Size labels
	// JPEG, when not nil, holds each sample's JPEG file for the device to
	// decode (--decoder nvjpeg): sample j's Pix slot then carries only its
	// header (the host's random draws, transforms.DeviceHeader bytes) and
	// the device decodes JPEG[j] after it. The files belong to the
	// loader, which keeps them until the batch is released.
	JPEG [][]byte
}

// Sample returns the slot of sample j within a Float32 batch.
func (b *Batch) Sample(j int) []float32 {
	return b.Data[j*b.SampleLen : (j+1)*b.SampleLen : (j+1)*b.SampleLen]
}

// SamplePix returns the slot of sample j within a Uint8 batch.
func (b *Batch) SamplePix(j int) []uint8 {
	return b.Pix[j*b.SampleLen : (j+1)*b.SampleLen : (j+1)*b.SampleLen]
}

// Bytes is the size of the batch's payload in bytes, labels included: what a
// host-to-device copy moves, 4 bytes a value for Float32 and 1 for Uint8.
func (b *Batch) Bytes() int64 {
	return int64(len(b.Data))*4 + int64(len(b.Pix)) + int64(len(b.Labels))*4
}

// slot checks slot j and a sample of n values of dtype d for Put and PutUint8.
func (b *Batch) slot(j, n int, d DType) error {
	if b.DType != d {
		return fmt.Errorf("batching: a %s sample put into a %s batch", d, b.DType)
	}
	if j < 0 || j >= b.Size {
		return fmt.Errorf("batching: slot %d out of range [0, %d)", j, b.Size)
	}
	if n != b.SampleLen {
		return fmt.Errorf("batching: sample has %d values, batch slots hold %d", n, b.SampleLen)
	}
	return nil
}

// Put copies one processed float32 sample and its label into slot j of a
// Float32 batch.
func (b *Batch) Put(j int, sample []float32, label int) error {
	if err := b.slot(j, len(sample), Float32); err != nil {
		return err
	}
	copy(b.Sample(j), sample)
	b.Labels[j] = int32(label)
	return nil
}

// PutUint8 copies one uint8 sample (an ApplyUint8 output) and its label into
// slot j of a Uint8 batch.
func (b *Batch) PutUint8(j int, sample []uint8, label int) error {
	if err := b.slot(j, len(sample), Uint8); err != nil {
		return err
	}
	copy(b.SamplePix(j), sample)
	b.Labels[j] = int32(label)
	return nil
}

// Pool recycles batches of one shape and dtype. It is safe for concurrent use. It
// grows on demand and never blocks: how many batches are alive at once is
// bounded by the pipeline's queues, not by the pool, so a collator waiting on
// the pool can never deadlock a pipeline whose samples arrive out of order.
type Pool struct {
	size, sampleLen int
	dtype           DType

	mu        sync.Mutex
	free      []*Batch
	allocated int
}

// NewPool returns a pool of Float32 batches of size samples of sampleLen
// values.
func NewPool(size, sampleLen int) (*Pool, error) { return NewPoolOf(Float32, size, sampleLen) }

// NewPoolOf returns a pool of batches of dtype d, size samples of sampleLen
// values each.
func NewPoolOf(d DType, size, sampleLen int) (*Pool, error) {
	if size <= 0 {
		return nil, fmt.Errorf("batching: batch size %d must be positive", size)
	}
	if sampleLen <= 0 {
		return nil, fmt.Errorf("batching: sample length %d must be positive", sampleLen)
	}
	if d != Float32 && d != Uint8 {
		return nil, fmt.Errorf("batching: unknown %v", d)
	}
	return &Pool{size: size, sampleLen: sampleLen, dtype: d}, nil
}

// DType is the element type of the pool's batches.
func (p *Pool) DType() DType { return p.dtype }

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
	b := &Batch{Size: p.size, SampleLen: p.sampleLen, DType: p.dtype, Labels: make([]int32, p.size)}
	if p.dtype == Uint8 {
		b.Pix = make([]uint8, p.size*p.sampleLen)
	} else {
		b.Data = make([]float32, p.size*p.sampleLen)
	}
	return b
}

// Put returns a batch to the pool. Batches of another shape or dtype are
// dropped.
func (p *Pool) Put(b *Batch) {
	if b == nil || b.Size != p.size || b.SampleLen != p.sampleLen || b.DType != p.dtype {
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
