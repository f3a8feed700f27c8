package loader

import (
	"context"
	"fmt"

	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/pipeline"
)

// deviceStages adds, for a device that decodes (Config.DeviceDecodes),
// the fetch stage and, in place of decode and the host's transform, the
// transform stage's host half alone:
//
//	index → fetch (fetchers) → transform (Workers): check, draw the header → collate …
//
// Each file is checked from its header (a JPEG of the raw size,
// ondisk.Dataset.CheckJPEG: a file that is not is skipped within
// MaxFailures, as a file that does not decode is, its error naming it),
// the sample's random draws are made as the device transform's host half
// makes them (transforms.DeviceApplier.Header, on the sample position's
// stream), and the file goes on to the batch by a swap of buffers, not a
// copy. No pixel is made on the host: the device decodes the batch's
// files and transforms them (cuda.DeviceDecode).
func (w *wiring) deviceStages(p *pipeline.Pipeline, idx *pipeline.Queue[int]) (*pipeline.Queue[*processed], error) {
	k, ds := w.dk, w.cfg.Dataset
	fetched, bufs, err := w.fetchStage(p, idx)
	if err != nil {
		return nil, err
	}
	header := func(ctx context.Context, it pipeline.Item[*encoded]) (*processed, error) {
		var label int
		e, err := k.replacing(ctx, it.Value, func(e *encoded) (err error) { label, err = k.d.CheckJPEG(e.i, e.data); return err })
		if !e.cached {
			defer bufs.put(e)
		}
		if err != nil {
			return nil, err
		}
		out := w.outs.get()
		t := <-w.impls
		t.rng = prng.New(ds.Seed^transformSalt, uint64(it.Index))
		err = t.dev.Header(out.pix, ds.Width, ds.Height, &t.rng)
		w.impls <- t
		if err != nil {
			w.outs.put(out)
			return nil, fmt.Errorf("loader: sample %d: %w", e.i, err)
		}
		out.label = label
		if e.cached {
			out.file = append(out.file[:0], e.data...) // the kept bytes stay
		} else {
			out.file, e.data = e.data, out.file[:0]
		}
		return out, nil
	}
	return pipeline.Map(p, string(level.Transform), fetched, w.cfg.Workers, w.q, cut(w.cache, level.Transform, header, w.cached.out))
}
