package procloader

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/headspace-bench/headspace/batching"
)

// beforeBatch, if set, is called by ServeWorker before it computes batch k:
// the tests' way to make a worker crash.
var beforeBatch func(k int, out io.Writer)

// ServeWorker is the body of a worker process (the hidden "worker"
// subcommand). It reads the start message from in, then answers every batch
// request on in with the whole batch on out, computed on this goroutine by
// loader.BatchFiller, until in reaches EOF (the parent is done) or ctx is
// cancelled. It returns nil on EOF.
func ServeWorker(ctx context.Context, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	s, err := readSpec(r)
	if err != nil {
		return fmt.Errorf("procloader worker: %w", err)
	}
	cfg := s.config()
	f, err := cfg.NewBatchFiller()
	if err != nil {
		return fmt.Errorf("procloader worker %d: %w", s.Worker, err)
	}
	defer f.Close()
	pool, err := batching.NewPool(cfg.Batch, cfg.Transforms.OutLen())
	if err != nil {
		return fmt.Errorf("procloader worker %d: %w", s.Worker, err)
	}
	b := pool.Get()
	w := bufio.NewWriterSize(out, 64<<10)
	for {
		k, err := readRequest(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("procloader worker %d: reading request: %w", s.Worker, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if beforeBatch != nil {
			beforeBatch(k, out)
		}
		if err := f.Fill(k, b); err != nil {
			return fmt.Errorf("procloader worker %d: %w", s.Worker, err)
		}
		if err := writeBatch(w, b); err != nil {
			return fmt.Errorf("procloader worker %d: writing batch %d: %w", s.Worker, k, err)
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("procloader worker %d: writing batch %d: %w", s.Worker, k, err)
		}
	}
}
