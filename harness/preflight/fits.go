package preflight

import (
	"fmt"

	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Fits refuses a run whose buffers would not fit in the memory this
// machine has available: need is the estimate (loader.Config.MemoryEstimate
// and what the command keeps on top, such as caches). Where the available
// memory cannot be read (outside Linux) every run is let through.
func Fits(what string, need int64) error {
	avail, ok := machine.Memory()
	if !ok || need <= avail {
		return nil
	}
	return cli.Usagef("%s needs about %s of memory and this machine has %s available: use a smaller batch, image, prefetch or worker count", what, gib(need), gib(avail))
}

// FitsPipeline checks one loader (per process, times procs) and extra bytes.
func FitsPipeline(cfg loader.Config, procs int, extra int64) error {
	need := cfg.MemoryEstimate()
	if procs > 1 && need < (1<<62)/int64(procs) {
		need *= int64(procs)
	}
	if extra > 0 && need < 1<<62-extra {
		need += extra
	}
	return Fits(fmt.Sprintf("the pipeline (batch %d of %dx%d crops from %dx%d images, %d workers, prefetch %d)",
		cfg.Batch, cfg.Transforms.Crop, cfg.Transforms.Crop, cfg.Dataset.Width, cfg.Dataset.Height, cfg.Workers, cfg.Prefetch), need)
}

func gib(b int64) string {
	if b >= 1<<60 {
		return "more than an exbibyte"
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}
