package workloads

import (
	"context"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/blocks/loader"
	"github.com/headspace-bench/headspace/harness/blocks/procloader"
	"github.com/headspace-bench/headspace/harness/engines/loadbench"
)

// Loaders is SPDL's thread-based loading against PyTorch's process-based
// DataLoader (document 002), with goroutines for threads: time to first
// batch, samples/s, peak resident memory and CPU time per mode and worker
// count.
type Loaders struct {
	Config  loadbench.Config
	Modes   []string
	Workers []int
}

// The article's claims for SPDL's thread-based loading over PyTorch's
// processes: 3× the loading throughput, 2× faster training, half the
// memory; and SPDL's table's time to first batch from 1 to 32 workers:
// 1.05× for threads and 30.8× for processes.
const (
	LoadersDocumentThroughput = 3.0
	LoadersDocumentTraining   = 2.0
	LoadersDocumentMemory     = 0.5
	LoadersDocumentTTFBThread = 1.05
	LoadersDocumentTTFBProc   = 30.8
)

// DefaultLoaders is SPDL's sweep: both modes at 1 to 32 workers, batches
// of 32 from the document 003's pipeline, 40 batches a run. worker starts
// the process workers (normally this binary's `headspace worker`).
func DefaultLoaders(worker procloader.Options) Loaders {
	p := loader.DefaultConfig()
	p.Batch = 32
	return Loaders{
		Config:  loadbench.Config{Pipeline: p, Batches: 40, Worker: worker},
		Modes:   loadbench.Modes,
		Workers: []int{1, 2, 4, 8, 16, 32},
	}
}

// QuickLoaders runs both modes at 1 and 2 workers on tiny batches.
func QuickLoaders(worker procloader.Options) Loaders {
	l := DefaultLoaders(worker)
	p := &l.Config.Pipeline
	p.Dataset.Width, p.Dataset.Height, p.Transforms.Crop, p.Batch = 96, 96, 32, 8
	l.Config.Batches, l.Workers = 4, []int{1, 2}
	return l
}

// Run measures every mode at every worker count and returns the
// measurements and their records (BenchmarkLoaders/mode=…/workers=…).
// each, if set, sees every measurement as it is made.
func (l Loaders) Run(ctx context.Context, each func(loadbench.Measurement)) ([]loadbench.Measurement, []*benchfmt.Result, error) {
	ms, err := loadbench.Sweep(ctx, l.Config, l.Modes, l.Workers, each)
	recs := make([]*benchfmt.Result, len(ms))
	for i, m := range ms {
		recs[i] = m.Benchmark()
	}
	return ms, recs, err
}
