package ladder

import (
	"context"
	"fmt"
	"time"

	"github.com/headspace-bench/headspace/harness/batching"
	"github.com/headspace-bench/headspace/harness/device"
	"github.com/headspace-bench/headspace/harness/pipeline"
)

// RunConfig says how long a training loop runs.
type RunConfig struct {
	Steps  int // measured steps
	Warmup int // steps run before measuring (pipeline fill); the document drops 1
	// OnStep, if set, is called after every step, warm-up included, with
	// the step's index and duration.
	OnStep func(i int, d time.Duration)
	// Model, if set, records every measured step as a span (stage "model").
	Model *pipeline.Track
}

// Result is one measured run of the training loop at one level.
type Result struct {
	Level     Level
	Config    Config
	Device    string
	Steps     int             // measured steps
	Wall      time.Duration   // from the first measured step to the device's last finish
	StepTimes []time.Duration // per measured step, as the document's loop times them
	// InputWait is the time the training loop spent waiting for the next
	// batch from the loader (levels none, raw, sample).
	InputWait time.Duration
	// Waits is each measured step's input wait, beside StepTimes.
	Waits       []time.Duration
	DeviceStats device.Stats   // over the measured steps
	Pipeline    pipeline.Stats // the loader's stages, when there is one
}

// StepsPerSec is measured steps over wall time.
func (r Result) StepsPerSec() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Steps) / r.Wall.Seconds()
}

// SamplesPerSec is StepsPerSec times the batch size.
func (r Result) SamplesPerSec() float64 { return r.StepsPerSec() * float64(r.Config.Batch) }

// AU is accelerator utilisation in percent: device step time over wall time.
func (r Result) AU() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return 100 * r.DeviceStats.StepTime.Seconds() / r.Wall.Seconds()
}

// UploadBytesPerBatch is the bytes copied to the device per measured
// upload (device.Stats.UploadBytes over Uploads), or 0 where the measured
// steps uploaded nothing (level device): a quarter of the float32 payload,
// labels aside, for a uint8 transfer.
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

// Run runs the document's training loop at level on dev: per step, take a
// batch, copy it to the device, run the step. What is cached depends on
// the level; see Level.
func Run(ctx context.Context, level Level, cfg Config, dev device.Device, rc RunConfig) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if err := rc.validate(); err != nil {
		return Result{}, err
	}
	if level < None || level > Device {
		return Result{}, fmt.Errorf("unknown level %d", int(level))
	}
	var res Result
	var err error
	switch level {
	case None, Raw, Sample:
		var loader *Loader
		loader, err = NewLoader(ctx, level, cfg, rc.Warmup+rc.Steps)
		if err != nil {
			return Result{}, err
		}
		res, err = Train(ctx, loader, dev, rc)
		res.Pipeline = loader.Stats()
		if cerr := loader.Close(); err == nil && cerr != nil {
			err = cerr
		}
	case Host, Device:
		// One batch made by the full pipeline, then kept.
		var kept *batching.Batch
		kept, err = firstBatch(ctx, cfg)
		if err != nil {
			return Result{}, fmt.Errorf("caching a batch: %w", err)
		}
		if level == Host {
			res, err = Train(ctx, repeat{kept}, dev, rc)
		} else {
			res, err = stepOnly(ctx, kept, dev, rc)
		}
	}
	res.Level, res.Config = level, cfg
	return res, err
}

func (rc RunConfig) validate() error {
	if rc.Steps <= 0 {
		return fmt.Errorf("steps %d must be positive", rc.Steps)
	}
	if rc.Warmup < 0 {
		return fmt.Errorf("warm-up steps %d must not be negative", rc.Warmup)
	}
	return nil
}

// firstBatch runs the full pipeline for one batch and keeps it.
func firstBatch(ctx context.Context, cfg Config) (*batching.Batch, error) {
	loader, err := NewLoader(ctx, None, cfg, 1)
	if err != nil {
		return nil, err
	}
	b, err := loader.Next(ctx)
	if cerr := loader.Close(); err == nil {
		err = cerr
	}
	return b, err
}

// repeat is a loader that hands out one batch forever: the host cache.
type repeat struct{ b *batching.Batch }

func (r repeat) Next(context.Context) (*batching.Batch, error) { return r.b, nil }
func (r repeat) Release(*batching.Batch)                       {}
func (r repeat) Close() error                                  { return nil }

// Train runs the training loop over any loader: per step, Next, Upload,
// Release, Step. It measures rc.Steps steps after rc.Warmup, and the time
// the loop waited in Next (input wait).
func Train(ctx context.Context, ld batching.Loader, dev device.Device, rc RunConfig) (Result, error) {
	return loop(ctx, dev, rc, func(i int, measured bool, res *Result) (device.Buffer, error) {
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

// stepOnly is the device cache: one upload, then steps on it.
func stepOnly(ctx context.Context, b *batching.Batch, dev device.Device, rc RunConfig) (Result, error) {
	buf, err := dev.Upload(ctx, b)
	if err != nil {
		return Result{}, err
	}
	defer dev.Free(buf)
	return loop(ctx, dev, rc, func(int, bool, *Result) (device.Buffer, error) { return buf, nil }, false)
}

// loop is the training loop: next gives each step's device buffer; free
// says whether to free it after the step.
func loop(ctx context.Context, dev device.Device, rc RunConfig, next func(i int, measured bool, res *Result) (device.Buffer, error), free bool) (Result, error) {
	if err := rc.validate(); err != nil {
		return Result{}, err
	}
	res := Result{Device: dev.Name(), Steps: rc.Steps, StepTimes: make([]time.Duration, 0, rc.Steps)}
	var t0 time.Time
	var s0 device.Stats
	for i := range rc.Warmup + rc.Steps {
		measured := i >= rc.Warmup
		if i == rc.Warmup {
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
			rc.Model.Add(i, start, end)
		}
		if rc.OnStep != nil {
			rc.OnStep(i, end.Sub(start))
		}
	}
	if err := dev.Sync(ctx); err != nil {
		return res, err
	}
	res.Wall = time.Since(t0)
	res.DeviceStats = dev.Stats().Sub(s0)
	return res, nil
}
