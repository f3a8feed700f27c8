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
	// One batch made by the full pipeline, then kept by the stage's
	// keeper (Check refused a stage without one).
	kept, _ := lv.Kept(cfg.Source())
	b, err := firstBatch(ctx, cfg)
	if err != nil {
		return train.Result{}, fmt.Errorf("caching a batch: %w", err)
	}
	return keepers[kept](ctx, b, dev, cfg.Batch, tc)
}

// keepers is, per stage at or after batching whose output a level can
// keep (level.Level.Kept), how the training loop runs on that output: one
// batch made by the full pipeline (firstBatch), repeated on the host
// (batch's output) or kept on the device (upload's). A level cut at a
// stage that has a keeper needs no code here; Check refuses one that
// keeps a stage with none, naming it. The stages before batching are
// the loader's (package loader).
var keepers = map[level.Stage]func(ctx context.Context, b *batching.Batch, dev device.Device, batch int, tc train.Config) (train.Result, error){
	level.Batch: func(ctx context.Context, b *batching.Batch, dev device.Device, batch int, tc train.Config) (train.Result, error) {
		return train.Run(ctx, train.Repeat{B: b}, dev, batch, tc)
	},
	level.Upload: func(ctx context.Context, b *batching.Batch, dev device.Device, _ int, tc train.Config) (train.Result, error) {
		return train.OnDevice(ctx, b, dev, tc)
	},
}

// Check reports whether level l can run cfg's pipeline: encoded needs a
// dataset on disk (loader.Config.Supports), and the stage l keeps needs a
// cache, the loader's or, above batching, the ladder's (keepers).
func Check(l level.Level, cfg loader.Config) error {
	if !l.Valid() {
		return fmt.Errorf("unknown level %d", int(l))
	}
	if l.Loader() {
		return cfg.Supports(l)
	}
	if kept, _ := l.Kept(cfg.Source()); keepers[kept] == nil {
		return fmt.Errorf("level %s keeps the output of stage %s: the ladder keeps a batch only", l, kept)
	}
	return nil
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
