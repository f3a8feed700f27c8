package ladder

import (
	"context"
	"fmt"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/train"
)

// Run runs the document's training loop at level on dev: per step, take a
// batch, copy it to the device, run the step. What is cached is the level
// table's (package level): where the level runs batching, a loader that
// caches what the level keeps of the stages before it; above, the output
// of the stage the level keeps, one batch made by the full pipeline, kept
// on the host (Batch's) or on the device (Upload's). The loader's stage
// statistics are in the result's Pipeline where the level runs a loader.
func Run(ctx context.Context, lv level.Level, cfg loader.Config, dev device.Device, tc train.Config) (train.Result, error) {
	if err := cfg.Validate(); err != nil {
		return train.Result{}, err
	}
	if err := tc.Validate(); err != nil {
		return train.Result{}, err
	}
	if err := Check(lv, cfg); err != nil {
		return train.Result{}, err
	}
	if lv.Loader() {
		ld, err := loader.New(ctx, lv, cfg, tc.Warmup+tc.Steps)
		if err != nil {
			return train.Result{}, err
		}
		res, err := train.Run(ctx, ld, dev, cfg.Batch, tc)
		res.Pipeline = ld.Stats()
		ds := ld.Data()
		res.Fetched, res.Failures = ds.Fetched, ds.Failures
		res.Samples, res.Requests, res.Retries, res.EpochSamples = ds.Samples, ds.Requests, ds.Retries, ds.Epoch
		res.RequestMean, res.RequestP99 = ds.RequestMean, ds.RequestP99
		res.Copied, res.CopyTime = ds.Copied, ds.CopyTime
		if cerr := ld.Close(); err == nil && cerr != nil {
			err = cerr
		}
		return res, err
	}
	kept, _ := lv.Kept(cfg.Source())
	if kept != level.Batch && kept != level.Upload {
		return train.Result{}, fmt.Errorf("level %s keeps the output of stage %s: the ladder keeps a batch only", lv, kept)
	}
	// One batch made by the full pipeline, then kept: on the host, or
	// on the device too.
	b, err := firstBatch(ctx, cfg)
	if err != nil {
		return train.Result{}, fmt.Errorf("caching a batch: %w", err)
	}
	if kept == level.Batch {
		return train.Run(ctx, train.Repeat{B: b}, dev, cfg.Batch, tc)
	}
	return train.OnDevice(ctx, b, dev, tc)
}

// Check reports whether level l can run cfg's pipeline: encoded needs a
// dataset on disk (loader.Config.Supports).
func Check(l level.Level, cfg loader.Config) error {
	if !l.Valid() {
		return fmt.Errorf("unknown level %d", int(l))
	}
	if !l.Loader() {
		return nil
	}
	return cfg.Supports(l)
}

// firstBatch runs the full pipeline for one batch and keeps it.
func firstBatch(ctx context.Context, cfg loader.Config) (*batching.Batch, error) {
	ld, err := loader.New(ctx, level.None, cfg, 1)
	if err != nil {
		return nil, err
	}
	b, err := ld.Next(ctx)
	if cerr := ld.Close(); err == nil {
		err = cerr
	}
	return b, err
}
