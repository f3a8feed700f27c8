package loader

import (
	"cmp"
	"context"
	"fmt"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/internal/setting"
)

// Settings is the one builder of a pipeline's settings block (the
// configuration lines of its result file): what of it changes a number:
// everything but the per-point workers, transforms and placement. The raw
// size is written WxH whatever the flag said, so "256" and "256x256" are
// one setup. A dataset on disk adds DataSettings (its size and count are
// raw-size and samples).
func (c Config) Settings() []setting.Setting {
	out := []setting.Setting{
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
	if c.Dataset.Natural() { // noise, the document's, is left implicit as before it was a choice
		out = append(out, setting.Setting{Key: "content", Value: c.Dataset.Content})
	}
	if c.DeviceCrop {
		// The device transform's uploads: whole raw images (recorded only
		// when set, so the files of earlier sweeps keep their setup).
		out = append(out, setting.Setting{Key: "device-crop", Value: "true"})
	}
	return append(out, c.DataSettings()...)
}

// DataSettings is the configuration of c's dataset on disk (none without
// one): its identity from the manifest (format, layout, the manifest's
// SHA-256; not its path, which changes nothing), the page-cache mode and
// the failures allowed. Settings includes it. The dataset is described by
// its handle (DataHandle): the one WithData resolved, not inspected again.
func (c Config) DataSettings() []setting.Setting {
	if c.Data == "" {
		return nil
	}
	format, layout, sum := "unreadable", "unreadable", "unreadable"
	var in *ondisk.Info
	if h, err := c.DataHandle(context.Background()); err == nil {
		in = h.Info()
		format, layout, sum = in.Format, in.Layout, in.Sum
	}
	decoder, err := ondisk.DecoderName(c.Decoder)
	if err != nil {
		decoder = "unavailable"
	}
	out := []setting.Setting{
		{Key: "decoder", Value: decoder},
		{Key: "data-format", Value: format},
		{Key: "data-layout", Value: layout},
		{Key: "data-manifest-sha256", Value: sum},
		{Key: "page-cache", Value: cmp.Or(c.PageCache, "as-found")},
		{Key: "max-failures", Value: fmt.Sprint(c.MaxFailures)},
	}
	if c.Remote() {
		out = append(out, c.remoteSettings()...)
	}
	if c.scaled() {
		// Recorded only when set, so files made without it keep their
		// setup, and never compare as the same setup as files made with it.
		out = append(out, setting.Setting{Key: "decode-scale", Value: c.DecodeScaleSetting()})
	}
	if c.DecodesCrop() {
		// Recorded only when set, as decode-scale.
		out = append(out, setting.Setting{Key: "decode-crop", Value: DecodeCropSetting})
	}
	if in != nil && in.Kind != "headspace" {
		// A dataset the user brings: its images' sizes, and what is done
		// to those that differ from the raw size (the document's caveat
		// 2, input that varies in size, made measurable).
		out = append(out,
			setting.Setting{Key: "data-image-sizes", Value: in.Sizes},
			setting.Setting{Key: "data-resize", Value: c.resizeSetting()},
			setting.Setting{Key: "data-unreadable", Value: fmt.Sprint(in.Failed)},
		)
	}
	return out
}

// remoteSettings are DataSettings' lines for data in a bucket: where it
// is and how it is fetched (recorded only then, so the files of local
// data keep their setup).
func (c Config) remoteSettings() []setting.Setting {
	bo := c.Bucket
	out := []setting.Setting{
		{Key: "data-store", Value: "s3"},
		// Where the data is: a file of one server and bucket is never
		// resumed against another (the manifest's checksum alone would
		// let a copy elsewhere in, over another network).
		{Key: "data-url", Value: c.Data},
		{Key: "data-endpoint", Value: bucket.Setup(cmp.Or(c.Origin, bo.EndpointURL()))},
		{Key: "fetch-concurrency", Value: fmt.Sprint(c.fetchers())},
		{Key: "chunk-size", Value: fmt.Sprint(cmp.Or(bo.ChunkSize, bucket.DefaultChunkSize))},
		{Key: "fetch-retries", Value: fmt.Sprint(retries(bo.Retries))},
		{Key: "fetch-window", Value: WindowRule},
	}
	for _, kv := range bucket.S3Standard.Settings() {
		out = append(out, setting.Setting{Key: kv[0], Value: kv[1]})
	}
	if c.ShardReads == ondisk.ShardReadsWhole {
		// Recorded only when set, so the files of ranged reads keep
		// their setup.
		out = append(out, setting.Setting{Key: "shard-reads", Value: c.ShardReads})
	}
	return append(out, c.Link...)
}

// retries is the attempts after the first that bucket.Options.Retries r
// means.
func retries(r int) int {
	switch r {
	case 0:
		return bucket.DefaultRetries
	case -1:
		return 0
	}
	return r
}

// DecodeCropSetting is how result files record DecodeCrop on.
const DecodeCropSetting = DecodeCropOn + " (each JPEG's random crop decoded alone: libjpeg-turbo's jpeg_crop_scanline and jpeg_skip_scanlines, the pixels of the full decode's crop)"

// DecodeScaleSetting is DecodeScale with the factor it decodes at and the
// decoded size, as ondisk.DecodeScaleFor gives them for the raw size and
// the crop: "auto 1/4 (1024x1024 to 256x256)" (every image of a
// headspace dataset has the raw size, so one factor serves them all).
func (c Config) DecodeScaleSetting() string {
	w, h := c.Dataset.Width, c.Dataset.Height
	f, sw, sh, err := ondisk.DecodeScaleFor(w, h, c.Transforms.Crop)
	if err != nil {
		return c.DecodeScale + " (unavailable)"
	}
	return fmt.Sprintf("%s %s (%dx%d to %dx%d)", c.DecodeScale, f, w, h, sw, sh)
}

// resizeSetting is what a dataset the user brings is resized to: the raw
// size, or with DecodeScale auto the scaled raw size, each JPEG decoded
// at the smallest factor that still covers it.
func (c Config) resizeSetting() string {
	w, h := c.Dataset.Width, c.Dataset.Height
	if c.scaled() {
		if _, sw, sh, err := ondisk.DecodeScaleFor(w, h, c.Transforms.Crop); err == nil {
			return fmt.Sprintf("bilinear to %dx%d (decode-scale auto: %dx%d scaled)", sw, sh, w, h)
		}
	}
	return fmt.Sprintf("bilinear to %dx%d", w, h)
}
