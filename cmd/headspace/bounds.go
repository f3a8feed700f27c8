package main

import (
	"fmt"

	"github.com/headspace-bench/headspace/harness/blocks/loader"
	"github.com/headspace-bench/headspace/harness/blocks/machine"
)

// The limits of the counting flags (steps, runs, batches): far beyond any
// experiment that ends today, and far from overflowing a product. The
// pipeline's own limits (sizes, batch, workers, prefetch) are
// loader.Config.Bounds'.
const (
	maxSteps   = 10_000_000
	maxCount   = 100_000
	maxBatches = 10_000_000
)

// firstErr is the first non-nil error: bad input is reported in one line.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// inRange checks a numeric flag against its documented bounds.
func inRange(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usagef("%s %d: want %d to %d", flag, v, lo, hi)
	}
	return nil
}

// fits refuses a run whose buffers would not fit in the memory this
// machine has available: need is the estimate (loader.Config.MemoryEstimate
// and what the command keeps on top, such as caches). Where the available
// memory cannot be read (outside Linux) every run is let through.
func fits(what string, need int64) error {
	avail, ok := machine.Memory()
	if !ok || need <= avail {
		return nil
	}
	return usagef("%s needs about %s of memory and this machine has %s available: use a smaller batch, image, prefetch or worker count", what, gib(need), gib(avail))
}

// fitsPipeline checks one loader (per process, times procs) and extra bytes.
func fitsPipeline(cfg loader.Config, procs int, extra int64) error {
	need := cfg.MemoryEstimate()
	if procs > 1 && need < (1<<62)/int64(procs) {
		need *= int64(procs)
	}
	if extra > 0 && need < 1<<62-extra {
		need += extra
	}
	return fits(fmt.Sprintf("the pipeline (batch %d of %dx%d crops from %dx%d images, %d workers, prefetch %d)",
		cfg.Batch, cfg.Transforms.Crop, cfg.Transforms.Crop, cfg.Dataset.Width, cfg.Dataset.Height, cfg.Workers, cfg.Prefetch), need)
}

func gib(b int64) string {
	if b >= 1<<60 {
		return "more than an exbibyte"
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}
