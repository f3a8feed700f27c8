package loader

import (
	"fmt"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/blocks/results"
)

// Settings is the one builder of a pipeline's settings block (the
// configuration lines of its result file): what of it changes a number:
// everything but the per-point workers, transforms and placement. The raw
// size is written WxH whatever the flag said, so "256" and "256x256" are
// one setup. A dataset on disk adds DataSettings (its size and count are
// raw-size and samples).
func (c Config) Settings() []results.Config {
	out := []results.Config{
		{Key: "batch", Value: fmt.Sprint(c.Batch)},
		{Key: "raw-size", Value: fmt.Sprintf("%dx%d", c.Dataset.Width, c.Dataset.Height)},
		{Key: "crop", Value: fmt.Sprint(c.Transforms.Crop)},
		{Key: "mask-ratio", Value: fmt.Sprint(c.Transforms.MaskRatio)},
		{Key: "samples", Value: fmt.Sprint(c.Dataset.N)},
		{Key: "classes", Value: fmt.Sprint(c.Dataset.Classes)},
		{Key: "seed", Value: fmt.Sprint(c.Dataset.Seed)},
		{Key: "prefetch", Value: fmt.Sprint(c.Prefetch)},
		{Key: "load-latency", Value: c.LoadLatency.String()},
	}
	if c.DeviceCrop {
		// The device transform's uploads: whole raw images (recorded only
		// when set, so the files of earlier sweeps keep their setup).
		out = append(out, results.Config{Key: "device-crop", Value: "true"})
	}
	return append(out, c.DataSettings()...)
}

// DataSettings is the configuration of c's dataset on disk (none without
// one): its identity from the manifest (format, layout, the manifest's
// SHA-256; not its path, which changes nothing), the page-cache mode and
// the failures allowed. Settings includes it.
func (c Config) DataSettings() []results.Config {
	if c.Data == "" {
		return nil
	}
	format, layout, sum := "unreadable", "unreadable", "unreadable"
	if m, err := ondisk.ReadManifest(c.Data); err == nil {
		format, layout = m.Format, m.Layout
		if m.Format == "jpeg" {
			format = fmt.Sprintf("jpeg-q%d", m.Quality)
		}
		if m.Layout == "shards" {
			layout = fmt.Sprintf("shards-of-%d", m.ShardSize)
		}
	}
	if s, err := ondisk.ManifestSum(c.Data); err == nil {
		sum = s
	}
	page := c.PageCache
	if page == "" {
		page = "as-found"
	}
	return []results.Config{
		{Key: "data-format", Value: format},
		{Key: "data-layout", Value: layout},
		{Key: "data-manifest-sha256", Value: sum},
		{Key: "page-cache", Value: page},
		{Key: "max-failures", Value: fmt.Sprint(c.MaxFailures)},
	}
}
