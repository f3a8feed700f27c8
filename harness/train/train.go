// Package train is the training loop the document times: per step, take a
// batch from a loader, copy it to the device, run the step. It measures
// what the caching ladder and the headspace analysis compare: wall time
// per step, the time the loop waited for input, and the device's own
// counters over the measured steps.
//
// The loop runs Warmup steps before it measures (the pipeline fills, the
// document drops its first step), then Steps measured steps. The device
// runs one step ahead of the host (see package device), so a step's upload
// and the next batch's loading overlap the step before.
package train

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Config says how long a training loop runs.
type Config struct {
	Steps  int // measured steps
	Warmup int // steps run before measuring (pipeline fill); the document drops 1
	// OnStep, if set, is called after every step, warm-up included, with
	// the step's index and duration.
	OnStep func(i int, d time.Duration)
	// Model, if set, records every measured step as a span (stage "model").
	Model *pipeline.Track
	// Barrier, if set, is called before every step is launched, warm-up
	// included, with the step's index, once the step's batch is on the
	// device: a rank of a node waits there for the other ranks (the
	// all-reduce barrier, package barrier). Its error stops the loop.
	Barrier func(ctx context.Context, i int) error
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	if c.Steps <= 0 {
		return fmt.Errorf("steps %d must be positive", c.Steps)
	}
	if c.Warmup < 0 {
		return fmt.Errorf("warm-up steps %d must not be negative", c.Warmup)
	}
	return nil
}

// Result is one measured run of the training loop.
type Result struct {
	Device    string          // the device's name
	Batch     int             // samples per batch
	Steps     int             // measured steps
	Wall      time.Duration   // from the first measured step to the device's last finish
	StepTimes []time.Duration // per measured step, as the document's loop times them
	// InputWait is the time the training loop spent waiting for the next
	// batch from the loader.
	InputWait time.Duration
	// Waits is each measured step's input wait, beside StepTimes.
	Waits []time.Duration
	// BarrierWait is the time the measured steps spent in Config.Barrier.
	BarrierWait time.Duration
	DeviceStats device.Stats   // over the measured steps
	Pipeline    pipeline.Stats // the loader's stages, when there is one
	// Fetched is the bytes the loader read from a dataset on disk and
	// Failures the samples it skipped, when it read one.
	Fetched, Failures int64
	// From a bucket: the samples fetched, the HTTP requests and retries,
	// and the mean and p99 request latency.
	Samples, Requests, Retries int64
	EpochSamples               int64 // the dataset's samples
	// Level local: the bytes downloaded into the local copy first, and
	// how long it took.
	Copied                  int64
	CopyTime                time.Duration
	RequestMean, RequestP99 time.Duration
}

// StepsPerSec is measured steps over wall time.
func (r Result) StepsPerSec() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Steps) / r.Wall.Seconds()
}

// SamplesPerSec is StepsPerSec times the batch size.
func (r Result) SamplesPerSec() float64 { return r.StepsPerSec() * float64(r.Batch) }

// AU is accelerator utilisation in percent: device step time over wall time.
func (r Result) AU() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return 100 * r.DeviceStats.StepTime.Seconds() / r.Wall.Seconds()
}

// UploadBytesPerBatch is the bytes copied to the device per measured
// upload (device.Stats.UploadBytes over Uploads), or 0 where the measured
// steps uploaded nothing (a device-cached batch): a quarter of the float32
// payload, labels aside, for uint8 batches.
func (r Result) UploadBytesPerBatch() float64 {
	if r.DeviceStats.Uploads <= 0 {
		return 0
	}
	return float64(r.DeviceStats.UploadBytes) / float64(r.DeviceStats.Uploads)
}

// InputBound is the share of wall time the loop waited for input, in [0, 1].
func (r Result) InputBound() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return r.InputWait.Seconds() / r.Wall.Seconds()
}

// Repeat is a loader that hands out one batch forever: the host cache.
type Repeat struct{ B *batching.Batch }

// Next implements batching.Loader.
func (r Repeat) Next(context.Context) (*batching.Batch, error) { return r.B, nil }

// Release implements batching.Loader.
func (r Repeat) Release(*batching.Batch) {}

// Close implements batching.Loader.
func (r Repeat) Close() error { return nil }

// Run runs the training loop over any loader: per step, Next, Upload,
// Release, Step. It measures c.Steps steps after c.Warmup, and the time
// the loop waited in Next (input wait). batch is the samples per batch,
// for SamplesPerSec.
func Run(ctx context.Context, ld batching.Loader, dev device.Device, batch int, c Config) (Result, error) {
	return loop(ctx, dev, batch, c, func(i int, measured bool, res *Result) (device.Buffer, error) {
		t := time.Now()
		b, err := ld.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		if measured {
			w := time.Since(t)
			res.InputWait += w
			res.Waits = append(res.Waits, w)
		}
		buf, err := dev.Upload(ctx, b)
		ld.Release(b)
		return buf, err
	}, true)
}

// OnDevice runs the training loop on one batch uploaded once: the device
// cache, where only the model step runs.
func OnDevice(ctx context.Context, b *batching.Batch, dev device.Device, c Config) (Result, error) {
	buf, err := dev.Upload(ctx, b)
	if err != nil {
		return Result{}, err
	}
	defer dev.Free(buf)
	return loop(ctx, dev, b.Size, c, func(int, bool, *Result) (device.Buffer, error) { return buf, nil }, false)
}

// loop is the training loop: next gives each step's device buffer; free
// says whether to free it after the step.
func loop(ctx context.Context, dev device.Device, batch int, c Config, next func(i int, measured bool, res *Result) (device.Buffer, error), free bool) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Device: dev.Name(), Batch: batch, Steps: c.Steps, StepTimes: make([]time.Duration, 0, min(c.Steps, 1<<16))}
	var t0 time.Time
	var s0 device.Stats
	for i := range c.Warmup + c.Steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		measured := i >= c.Warmup
		if i == c.Warmup {
			if err := dev.Sync(ctx); err != nil {
				return res, err
			}
			t0, s0 = time.Now(), dev.Stats()
		}
		start := time.Now()
		buf, err := next(i, measured, &res)
		if err != nil {
			return res, err
		}
		if c.Barrier != nil {
			t := time.Now()
			if err := c.Barrier(ctx, i); err != nil {
				if free {
					dev.Free(buf)
				}
				return res, fmt.Errorf("step %d: %w", i, err)
			}
			if measured {
				res.BarrierWait += time.Since(t)
			}
		}
		err = dev.Step(ctx, buf)
		if free {
			dev.Free(buf)
		}
		if err != nil {
			return res, fmt.Errorf("step %d: %w", i, err)
		}
		end := time.Now()
		if measured {
			res.StepTimes = append(res.StepTimes, end.Sub(start))
			c.Model.Add(i, start, end)
		}
		if c.OnStep != nil {
			c.OnStep(i, end.Sub(start))
		}
	}
	if err := dev.Sync(ctx); err != nil {
		return res, err
	}
	res.Wall = time.Since(t0)
	res.DeviceStats = dev.Stats().Sub(s0)
	return res, nil
}

// Summary is the distribution of a run's measured step times: tail
// stalls, where a loader falls behind now and then, show in P99 and Max
// long before they move the median.
type Summary struct {
	P50, P90, P99, Max time.Duration
}

// StepSummary summarises the measured step times through
// internal/summary: the median (P50), the percentiles of
// montanaflynn/stats v0.7.1 (the nearest-rank method) and the largest;
// the zero Summary when there are none.
func (r Result) StepSummary() Summary {
	if len(r.StepTimes) == 0 {
		return Summary{}
	}
	f := make([]float64, len(r.StepTimes))
	for i, t := range r.StepTimes {
		f[i] = float64(t)
	}
	d := func(v float64) time.Duration {
		if math.IsNaN(v) {
			return 0
		}
		return time.Duration(v)
	}
	// Percentile and Max leave f as it is; Median sorts it, so it comes last.
	p90, p99, mx := summary.Percentile(f, 90), summary.Percentile(f, 99), summary.Max(f)
	return Summary{P50: d(summary.Median(f)), P90: d(p90), P99: d(p99), Max: d(mx)}
}
