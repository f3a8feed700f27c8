// Package device is the accelerator side of a training step: the transfer of
// a batch from host to device, and the step that runs the model on it.
//
// Device is the narrow interface that both the emulated accelerator here and
// the CUDA backend (package cuda) implement, so the caching ladder never
// knows which one it drives. Its semantics follow a CUDA stream:
//
//   - Upload copies a host batch to the device and returns once the host
//     buffer may be reused. With pinned memory the copy is a DMA that runs
//     while the previous step computes; pageable memory is slower.
//   - Step launches one training step (forward, loss, backward, update) on an
//     uploaded batch and returns as soon as it has started, after the step
//     before it has finished: the host runs at most one step ahead, as a
//     PyTorch loop does, so the next batch's loading and upload overlap the
//     current step.
//   - Sync waits until every step launched has finished.
//
// Accelerator utilisation (AU) is, as MLPerf Storage defines it, the time the
// device spends computing steps divided by the wall time of the run; Stats
// gives the first, the caller measures the second.
//
// A batching.Uint8 batch carries the masked crop before ConvertColor and
// Scale, one byte a value: the document's "postpone int8 to float32 datatype
// conversions to the GPU". Its upload moves a quarter of the bytes, and
// every step on it first runs the conversion (transforms.ConvertScale) on
// the device, a kernel whose time Stats counts apart, in ConvertTime.
package device

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/headspace-bench/headspace/batching"
)

// Buffer is a batch resident on a device.
type Buffer interface {
	// Bytes is the size of the batch on the device.
	Bytes() int64
}

// Stats are a device's cumulative counters.
type Stats struct {
	Uploads     int64
	UploadBytes int64
	UploadTime  time.Duration // time the copy engine was busy
	Steps       int64
	StepTime    time.Duration // time the compute engine ran model steps (for AU)
	// ConvertTime is the time the compute engine ran the uint8 → float32
	// conversion of uint8 batches (ConvertColor and Scale) before their
	// steps; it is not in StepTime.
	ConvertTime time.Duration
}

// Sub returns s − o, the counters of an interval.
func (s Stats) Sub(o Stats) Stats {
	return Stats{
		Uploads:     s.Uploads - o.Uploads,
		UploadBytes: s.UploadBytes - o.UploadBytes,
		UploadTime:  s.UploadTime - o.UploadTime,
		Steps:       s.Steps - o.Steps,
		StepTime:    s.StepTime - o.StepTime,
		ConvertTime: s.ConvertTime - o.ConvertTime,
	}
}

// Device is an accelerator that a training loop drives. A Device is used by
// one goroutine at a time.
type Device interface {
	// Name describes the device for result files, e.g. "emulated" or
	// "cuda:NVIDIA H100 80GB HBM3".
	Name() string
	// Upload copies b to the device; b may be reused when it returns.
	Upload(ctx context.Context, b *batching.Batch) (Buffer, error)
	// Step launches one training step on buf; see the package doc.
	Step(ctx context.Context, buf Buffer) error
	// Free gives buf's device memory back once the steps using it are done.
	Free(buf Buffer)
	// Sync waits until all launched steps have finished.
	Sync(ctx context.Context) error
	// Stats returns the cumulative counters.
	Stats() Stats
	// Close releases the device.
	Close() error
}

// EmulatedConfig sets the emulated accelerator's speeds.
type EmulatedConfig struct {
	// Step is the time one training step computes (workloads.DocumentStep
	// for the document 003's A10G).
	Step time.Duration
	// Pinned selects the pinned-memory bandwidth for uploads, as
	// DataLoader(pin_memory=True) does; false selects pageable.
	Pinned bool
	// PinnedBandwidth and PageableBandwidth are host-to-device copy speeds
	// in bytes per second.
	PinnedBandwidth, PageableBandwidth float64
	// ConvertBandwidth is an assumption, not a measurement: the speed of
	// the device's elementwise uint8 → float32 conversion kernel
	// (ConvertColor and Scale of a batching.Uint8 batch), in bytes of
	// float32 written per second, so converting a batch of n values takes
	// 4n / ConvertBandwidth. Zero means DefaultConvertBandwidth.
	ConvertBandwidth float64
}

// DefaultConvertBandwidth is the assumed conversion speed, 1000 GB/s of
// float32 written: an elementwise kernel that reads 1 byte and writes 4 a
// value runs near memory bandwidth, and an A10G's is 600 GB/s, an H100's
// over 3000 GB/s. A setting, not a measurement.
const DefaultConvertBandwidth = 1000e9

// DefaultEmulated is an A10G-like device's copies: assumed PCIe 4.0 x16
// speeds of 24 GB/s pinned and 12 GB/s pageable, and
// DefaultConvertBandwidth. These are settings, not measurements; a CUDA
// run measures the real ones. The step time is the workload's to set
// (workloads.DocumentStep for document 003); zero steps take no time.
func DefaultEmulated() EmulatedConfig {
	return EmulatedConfig{Pinned: true, PinnedBandwidth: 24e9, PageableBandwidth: 12e9, ConvertBandwidth: DefaultConvertBandwidth}
}

// ConvertBandwidthOrDefault is ConvertBandwidth with zero meaning
// DefaultConvertBandwidth.
func (c EmulatedConfig) ConvertBandwidthOrDefault() float64 {
	if c.ConvertBandwidth == 0 {
		return DefaultConvertBandwidth
	}
	return c.ConvertBandwidth
}

// ConvertTime is the time the conversion of a uint8 batch of values values
// takes at the configured ConvertBandwidth.
func (c EmulatedConfig) ConvertTime(values int) time.Duration {
	return time.Duration(float64(4*int64(values)) / c.ConvertBandwidthOrDefault() * 1e9)
}

// Validate reports a configuration that cannot run.
func (c EmulatedConfig) Validate() error {
	switch {
	case c.Step < 0:
		return fmt.Errorf("device: step time %v is negative", c.Step)
	case !(c.PinnedBandwidth > 0) || !(c.PageableBandwidth > 0):
		return fmt.Errorf("device: bandwidths must be positive (pinned %g, pageable %g B/s)", c.PinnedBandwidth, c.PageableBandwidth)
	case !(c.ConvertBandwidth >= 0) || math.IsInf(c.ConvertBandwidth, 0):
		return fmt.Errorf("device: conversion bandwidth %g B/s must be positive (or 0 for the default)", c.ConvertBandwidth)
	}
	return nil
}

// Emulated is an accelerator that takes the configured time for copies and
// steps by waiting, not by burning CPU (as the DLIO benchmark emulates
// compute), so the host's cores stay free for the input pipeline exactly as
// they would beside a real GPU.
type Emulated struct {
	cfg       EmulatedConfig
	timer     *time.Timer
	busyUntil time.Time // when the last launched step finishes
	stats     Stats
	closed    bool
}

// emulatedBuffer is an uploaded batch: its size, and for a uint8 batch the
// time its conversion takes before each step on it.
type emulatedBuffer struct {
	bytes   int64
	convert time.Duration
}

func (b *emulatedBuffer) Bytes() int64 { return b.bytes }

// NewEmulated returns an emulated device.
func NewEmulated(cfg EmulatedConfig) (*Emulated, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Emulated{cfg: cfg, timer: t}, nil
}

// Name implements Device.
func (e *Emulated) Name() string { return "emulated" }

// wait blocks until deadline or ctx is done, without allocating.
func (e *Emulated) wait(ctx context.Context, deadline time.Time) error {
	d := time.Until(deadline)
	if d <= 0 {
		return ctx.Err()
	}
	e.timer.Reset(d)
	select {
	case <-e.timer.C:
		return nil
	case <-ctx.Done():
		e.timer.Stop()
		return ctx.Err()
	}
}

// Upload implements Device: it waits for b.Bytes() / bandwidth, a quarter of
// the float32 payload for a uint8 batch.
func (e *Emulated) Upload(ctx context.Context, b *batching.Batch) (Buffer, error) {
	if e.closed {
		return nil, fmt.Errorf("device: upload on a closed device")
	}
	n := b.Bytes()
	bw := e.cfg.PageableBandwidth
	if e.cfg.Pinned {
		bw = e.cfg.PinnedBandwidth
	}
	d := time.Duration(float64(n) / bw * 1e9)
	if err := e.wait(ctx, time.Now().Add(d)); err != nil {
		return nil, fmt.Errorf("device: upload of batch %d: %w", b.Index, err)
	}
	e.stats.Uploads++
	e.stats.UploadBytes += n
	e.stats.UploadTime += d
	buf := &emulatedBuffer{bytes: n}
	if b.DType == batching.Uint8 {
		buf.convert = e.cfg.ConvertTime(len(b.Pix))
	}
	return buf, nil
}

// Step implements Device: the step starts when the previous one ends, and
// Step returns then. On a uint8 buffer the step first converts it, so the
// device is busy for the conversion and then the configured step time.
func (e *Emulated) Step(ctx context.Context, buf Buffer) error {
	if e.closed {
		return fmt.Errorf("device: step on a closed device")
	}
	eb, ok := buf.(*emulatedBuffer)
	if !ok {
		return fmt.Errorf("device: step on a buffer of another device (%T)", buf)
	}
	start := time.Now()
	if e.busyUntil.After(start) {
		start = e.busyUntil
	}
	if err := e.wait(ctx, start); err != nil {
		return fmt.Errorf("device: step: %w", err)
	}
	e.busyUntil = start.Add(eb.convert + e.cfg.Step)
	e.stats.Steps++
	e.stats.StepTime += e.cfg.Step
	e.stats.ConvertTime += eb.convert
	return nil
}

// Free implements Device.
func (e *Emulated) Free(Buffer) {}

// Sync implements Device.
func (e *Emulated) Sync(ctx context.Context) error {
	if err := e.wait(ctx, e.busyUntil); err != nil {
		return fmt.Errorf("device: sync: %w", err)
	}
	return nil
}

// Stats implements Device.
func (e *Emulated) Stats() Stats { return e.stats }

// Close implements Device.
func (e *Emulated) Close() error {
	e.closed = true
	e.timer.Stop()
	return nil
}
