package loader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/internal/setting"
)

// Config is the input pipeline's configuration: what is loaded, how it is
// transformed, how it is batched and where the last conversion runs.
type Config struct {
	Dataset    datasets.Synthetic // raw data: size, classes, seed
	Transforms transforms.Config  // crop and mask ratio
	Impl       string             // transform implementation: "naive", "fast" or "device" (transforms.DeviceName)
	// DeviceCrop, with Impl "device", ships whole raw images and the
	// device crops them too; otherwise the host crops and ships the
	// unmasked crop (transforms.DeviceApplier). Other implementations
	// ignore it, so one sweep can compare them.
	DeviceCrop bool
	Batch      int // samples per batch; the document uses 256
	Workers    int // goroutines per stage (load, transform, collate)
	Prefetch   int // batches ready ahead of the training loop; 0 means 2
	// LoadLatency is added to every raw sample's load, as a wait that uses
	// no CPU: the latency of remote storage (the document's "slow data
	// retrieval"). Zero for the document's in-memory FakeDataset.
	LoadLatency time.Duration
	// Placement says where ConvertColor and Scale run: on the host (the
	// batches carry float32) or on the device (uint8 batches, a quarter of
	// the bytes to upload).
	Placement Placement
	// Recorder, if set, records every task of every worker for a timeline.
	Recorder *pipeline.Recorder
	// MeasureCPU measures each stage's CPU time besides its task time
	// (pipeline.Pipeline.MeasureCPU; Linux only, New fails elsewhere).
	MeasureCPU bool
	// Data, if set, is a dataset directory written by `headspace dataset
	// write` (package ondisk), read instead of the synthetic fill: the
	// load stage becomes fetch (read a sample's bytes) then decode.
	// Dataset must describe it; WithData sets it from the manifest. An
	// s3://BUCKET/PREFIX URL reads it from object storage (package
	// bucket): the fetch stage then runs Bucket.Concurrency requests in
	// flight, whatever Workers is.
	Data string
	// Bucket is how Data at an s3:// URL is read: endpoint, requests in
	// flight (--fetch-concurrency), chunk size, retries. Ignored for a
	// directory.
	Bucket bucket.Options
	// ShardReads is how a member of a shard in a bucket is fetched:
	// ondisk.ShardReadsRanged ("" too) or ondisk.ShardReadsWhole (the
	// shard read whole, once, its members served from memory).
	ShardReads string
	// Link is the emulated network between the loader and the bucket's
	// server, as its settings (package link): recorded in the result
	// file; nil without one.
	Link []setting.Setting
	// Origin is the bucket's server when Bucket.Endpoint is an emulated
	// link's (the link's upstream); "" when Bucket.Endpoint is the
	// server. Recorded as data-endpoint.
	Origin string
	// MaxFailures is how many samples of Data that cannot be fetched or
	// decoded are skipped (and counted) before the run stops; a skipped
	// sample is replaced by the next one that reads, so batches keep
	// their size. 0 stops at the first.
	MaxFailures int
	// Decoder decodes Data's JPEGs: ondisk.DecoderGo ("" too),
	// ondisk.DecoderTurbo (libjpeg-turbo), or ondisk.DecoderNvjpeg: the
	// device decodes them (DeviceDecodes).
	Decoder string
	// DecodeScale is ondisk.DecodeScaleAuto to decode Data's JPEGs at a
	// reduced scale: with ondisk.DecoderTurbo, at the smallest TurboJPEG
	// scaling factor of 1/2, 1/4 and 1/8 (turbojpeg.Fit) whose output still holds the random crop
	// (ondisk.Options.DecodeMinSide = Transforms.Crop), and the
	// transforms run on the smaller image. The crop is then drawn from a
	// downscaled image, another sample distribution than the document's
	// RandomCrop on the full image: a remedy the user opts into, like
	// storing smaller raw images. "" or ondisk.DecodeScaleOff decode at
	// full size.
	DecodeScale string
	// DecodeCrop is DecodeCropOn to decode only each sample's random crop
	// of Data's JPEGs: the decode stage draws the crop's origin from the
	// sample's random stream (transforms.CropOrigin, the transform's
	// first draws), and ondisk's DecodeCrop decodes the crop's rows and
	// columns alone (libjpeg-turbo's libjpeg API), pixels equal to the full
	// decode's crop; the fast transform then takes the crop as cut
	// (transforms.Precropped), so every sample's tensor is the one a full
	// decode gives. Needs ondisk.DecoderTurbo, the fast transforms on the
	// host, no scaled decode, and the goroutine loader. "" or
	// DecodeCropOff decode whole images.
	DecodeCrop string
	// PageCache is what happens to Data's files in the page cache before
	// each loader starts: "" leaves them as they are, PageWarm reads them
	// once, PageCold evicts them (Linux only).
	PageCache string

	// data is Data as WithDataContext resolved it, which DataHandle gives
	// while it still describes Data and Bucket. Unexported, so never
	// encoded: a rank's spec (package node, JSON of Config) and a worker's
	// (package procloader) carry Data alone, and a process that needs the
	// handle resolves Data again (DataHandle).
	data *ondisk.Handle
}

// The page-cache modes of Config.PageCache.
const (
	PageWarm = "warm"
	PageCold = "cold"
)

// MaxMaxFailures bounds Config.MaxFailures: more skipped samples than
// that is a broken dataset, not a measurement.
const MaxMaxFailures = 1 << 20

// Placement is where the transform's last steps, ConvertColor and Scale,
// run.
type Placement int

// The placements.
const (
	// Host finishes the transform on the host: float32 batches.
	Host Placement = iota
	// Device stops the host's transform after RandomMask
	// (transforms.Uint8Applier): batches carry one byte a value and the
	// device converts them before each step — the document's "postpone
	// int8 to float32 datatype conversions to the GPU".
	Device
)

// Placements lists the placements by name, as String writes them.
var Placements = []string{"host", "device"}

func (p Placement) String() string {
	if p < 0 || int(p) >= len(Placements) {
		return fmt.Sprintf("Placement(%d)", int(p))
	}
	return Placements[p]
}

// ParsePlacement parses "host" or "device".
func ParsePlacement(s string) (Placement, error) {
	if i := slices.Index(Placements, s); i >= 0 {
		return Placement(i), nil
	}
	return 0, fmt.Errorf("unknown placement %q (want host or device)", s)
}

// DType is the element type of the batches the placement uploads.
func (p Placement) DType() batching.DType {
	if p == Device {
		return batching.Uint8
	}
	return batching.Float32
}

// DefaultConfig is the document's pipeline: 1024×1024 raw images cropped to
// 256, batches of 256, 4 workers, the naive transforms, converted on the
// host.
func DefaultConfig() Config {
	return Config{
		Dataset:    datasets.DefaultSynthetic(),
		Transforms: transforms.DefaultConfig(),
		Impl:       "naive",
		Batch:      256,
		Workers:    4,
		Prefetch:   2,
	}
}

// Validate reports the first problem with c, in words a user can act on:
// a field out of its range (Bounds included) or a combination that cannot
// run.
func (c Config) Validate() error {
	if err := c.Bounds(); err != nil {
		return err
	}
	if err := c.Dataset.Validate(); err != nil {
		return err
	}
	if err := c.Transforms.Validate(c.Dataset.Width, c.Dataset.Height); err != nil {
		return err
	}
	if err := c.validateImpl(); err != nil {
		return err
	}
	switch {
	case c.Batch <= 0:
		return fmt.Errorf("batch size %d must be positive", c.Batch)
	case c.Workers <= 0:
		return fmt.Errorf("workers %d must be positive", c.Workers)
	case c.Prefetch < 0:
		return fmt.Errorf("prefetch %d must not be negative", c.Prefetch)
	case c.LoadLatency < 0:
		return fmt.Errorf("load latency %v must not be negative", c.LoadLatency)
	}
	if err := c.validateData(); err != nil {
		return err
	}
	return c.validateDeviceDecode()
}

// validateData checks the data fields (Data and what reads it), as
// DataFlags.Apply does: the one check of the data flags, whose errors
// name them.
func (c Config) validateData() error {
	switch {
	case c.MaxFailures < 0 || c.MaxFailures > MaxMaxFailures:
		return fmt.Errorf("--max-failures %d: want 0 to %d", c.MaxFailures, MaxMaxFailures)
	case c.Data == "" && c.MaxFailures > 0:
		return fmt.Errorf("--max-failures %d needs a dataset on disk (--data)", c.MaxFailures)
	case c.Decoder != "" && !slices.Contains(ondisk.Decoders, c.Decoder):
		return fmt.Errorf("--decoder %q: want go, turbojpeg or nvjpeg", c.Decoder)
	case c.Data == "" && c.Decoder != "" && c.Decoder != ondisk.DecoderGo:
		return fmt.Errorf("--decoder %s needs a dataset on disk (--data)", c.Decoder)
	}
	if err := c.validateDecodeScale(); err != nil {
		return err
	}
	if err := c.validateDecodeCrop(); err != nil {
		return err
	}
	switch {
	case c.PageCache != "" && c.PageCache != PageWarm && c.PageCache != PageCold:
		return fmt.Errorf("--page-cache %q: want warm or cold", c.PageCache)
	case c.PageCache == PageCold && !ondisk.EvictAvailable:
		return fmt.Errorf("--page-cache cold: page-cache eviction is not available on %s; use warm", runtime.GOOS)
	case c.Data == "" && c.PageCache != "":
		return fmt.Errorf("--page-cache %s needs a dataset on disk (--data)", c.PageCache)
	case c.Remote() && c.PageCache != "":
		return fmt.Errorf("--page-cache %s: %s is in a bucket, not on this machine's disk", c.PageCache, c.Data)
	case CheckShardReads(c.ShardReads) != nil:
		return CheckShardReads(c.ShardReads)
	case c.ShardReads != "" && !c.Remote():
		return fmt.Errorf("--shard-reads %s needs a dataset in a bucket (--data s3://BUCKET/PREFIX)", c.ShardReads)
	}
	return c.Bucket.Validate()
}

// WindowRule is the loader's window with data in a bucket, as result
// files record it (fetch-window): Prefetch batches, and at least one
// sample per fetcher.
const WindowRule = "max(prefetch×batch, fetch-concurrency)"

// Window is the samples the loader lets into its pipeline at once:
// Prefetch batches, and with data in a bucket at least one sample per
// fetcher (WindowRule), so that a small batch does not cap the requests
// in flight. A level that reads a local copy (level.Local) fetches on
// Workers and keeps Prefetch batches.
func (c Config) Window() int {
	return window(c.prefetch()*c.Batch, c.fetchers(), c.Remote())
}

// window is the one place of WindowRule: ahead samples (Prefetch
// batches), or with remote data at least fetchers.
func window(ahead, fetchers int, remote bool) int {
	if remote {
		return max(ahead, fetchers)
	}
	return ahead
}

// Remote reports whether Data is in a bucket (an s3:// URL).
func (c Config) Remote() bool { return bucket.IsURL(c.Data) }

// Source is where c's samples come from, as the level table names it:
// the synthetic fill without Data, a bucket for an s3:// URL, a dataset
// on disk otherwise.
func (c Config) Source() level.Source {
	switch {
	case c.Data == "":
		return level.Synthetic
	case c.Remote():
		return level.Bucket
	}
	return level.Disk
}

// fetchers is how many goroutines run the fetch stage: Workers for a
// directory, the requests in flight for a bucket.
func (c Config) fetchers() int {
	if !c.Remote() {
		return c.Workers
	}
	if c.Bucket.Concurrency > 0 {
		return c.Bucket.Concurrency
	}
	return bucket.DefaultConcurrency
}

// scaled reports whether DecodeScale asks for a scaled decode.
func (c Config) scaled() bool { return c.DecodeScale == ondisk.DecodeScaleAuto }

// validateDecodeScale checks DecodeScale against the decoder and the
// device transform (the format of Data is checked when it is opened).
func (c Config) validateDecodeScale() error {
	switch {
	case c.DecodeScale != "" && c.DecodeScale != ondisk.DecodeScaleOff && !c.scaled():
		return fmt.Errorf("--decode-scale %q: want off or auto", c.DecodeScale)
	case !c.scaled():
		return nil
	case c.Data == "":
		return errors.New("--decode-scale auto needs a dataset on disk (--data)")
	case c.DeviceDecodes():
		return errors.New("--decode-scale auto is TurboJPEG's scaled decoding: not with --decoder nvjpeg")
	case c.Decoder != ondisk.DecoderTurbo:
		return errors.New("--decode-scale auto needs --decoder turbojpeg (TurboJPEG's scaled decoding)")
	case c.Impl == transforms.DeviceName && c.DeviceCrop:
		return errors.New("decode scale auto with device-crop: the device transform ships whole raw images of the raw size; crop on the host")
	}
	return nil
}

// The values of Config.DecodeCrop and of --decode-crop.
const (
	DecodeCropOff = "off"
	DecodeCropOn  = "on"
)

// errDecodeCropImpl refuses DecodeCrop with transforms that cannot take
// the crop already cut.
var errDecodeCropImpl = errors.New("--decode-crop on hands the crop to the fast transforms on the host (--transforms fast, placement host)")

// DecodesCrop reports whether DecodeCrop asks to decode only the crop.
func (c Config) DecodesCrop() bool { return c.DecodeCrop == DecodeCropOn }

// validateDecodeCrop checks DecodeCrop against the decoder and the
// transforms.
func (c Config) validateDecodeCrop() error {
	switch {
	case c.DecodeCrop != "" && c.DecodeCrop != DecodeCropOff && !c.DecodesCrop():
		return fmt.Errorf("--decode-crop %q: want off or on", c.DecodeCrop)
	case !c.DecodesCrop():
		return nil
	case c.Data == "":
		return errors.New("--decode-crop on needs a dataset on disk (--data)")
	case c.Decoder != ondisk.DecoderTurbo:
		return errors.New("--decode-crop on needs --decoder turbojpeg (libjpeg-turbo decodes the crop alone)")
	case c.scaled():
		return errors.New("--decode-crop on decodes the crop of the full image: not with --decode-scale auto")
	case c.Impl != transforms.Fast || c.Placement != Host:
		return errDecodeCropImpl
	}
	return nil
}

// DeviceDecodes reports whether the device decodes Data's JPEGs
// (ondisk.DecoderNvjpeg): at a level that runs the decode stage, the
// loader then checks each file's header and makes the transform's random
// draws on the host (transforms.DeviceApplier.Header), and its batches
// carry the files (batching.Batch.JPEG) for the device to decode and
// transform; no pixel is made on the host. Levels above decode keep a raw
// sample decoded on the host, as with any decoder.
func (c Config) DeviceDecodes() bool { return c.Decoder == ondisk.DecoderNvjpeg }

// validateDeviceDecode checks what decoding on the device needs: the
// device transform on whole images, at full size.
func (c Config) validateDeviceDecode() error {
	switch {
	case !c.DeviceDecodes():
		return nil
	case c.Impl != transforms.DeviceName:
		return fmt.Errorf("decoder nvjpeg decodes on the device, so the transforms run there: it needs transforms device, not %s", c.Impl)
	case !c.DeviceCrop:
		return errors.New("decoder nvjpeg hands whole images to the device, so the device crops them: it needs device-crop")
	}
	return nil
}

// validateImpl checks the transform implementation against the placement:
// the device transform finishes on the device (placement device), and only
// it can crop there.
func (c Config) validateImpl() error {
	if c.Placement != Host && c.Placement != Device {
		return fmt.Errorf("unknown placement %d", int(c.Placement))
	}
	if c.Impl == transforms.DeviceName {
		if c.Placement != Device {
			return errors.New("transforms device runs the mask, ConvertColor and Scale on the device: it needs placement device")
		}
		return nil
	}
	_, err := newTransformer(c)
	return err
}

// SampleLen is the values of one processed sample: 3×Crop×Crop, or with
// the device transform the bytes of a transforms.DeviceApplier sample
// (its header, then the crop or the whole raw image).
func (c Config) SampleLen() int {
	if c.Impl == transforms.DeviceName {
		return transforms.DeviceSampleLen(c.Transforms, c.Dataset.Width, c.Dataset.Height, c.DeviceCrop)
	}
	return c.Transforms.OutLen()
}

// Supports reports whether a loader of c can keep what the level caches:
// a level that runs a loader (level.Level.Loader), one that needs a
// dataset on disk only with one (the synthetic fill has no encoded
// bytes), and one whose kept stage has a cache the loader makes (its
// entry in keepers).
func (c Config) Supports(l level.Level) error {
	switch {
	case !l.Valid():
		return fmt.Errorf("loader: unknown level %d", int(l))
	case !l.Loader():
		return fmt.Errorf("loader: level %s keeps a whole batch: no loader runs", l)
	case l.Remote() && !c.Remote():
		return fmt.Errorf("level %s needs a dataset in a bucket (--data s3://BUCKET/PREFIX): it copies the bucket's objects to local disk", l)
	case l.OnDisk() && c.Data == "":
		return fmt.Errorf("level %s needs a dataset on disk (--data): the synthetic fill has no encoded bytes to cache", l)
	}
	if kept, ok := l.Kept(c.Source()); ok && keepers[kept] == nil {
		return fmt.Errorf("loader: level %s keeps the output of stage %s: the loader has no cache of it", l, kept)
	}
	return nil
}

// WithData is c reading the dataset in dir: Data is set and Dataset's
// size, count, classes and seed are the manifest's. A dataset the user
// brings (ImageFolder, WebDataset) has no manifest: its count and classes
// are its index's, its raw size the most common image size (callers may
// set another: the images are resized to it), and the seed, which then
// seeds only the transforms, stays c's. The dataset is resolved once
// (ondisk.Resolve), here: DataHandle, and through it the settings and
// the commands' checks and reports, use that handle.
func (c Config) WithData(dir string) (Config, error) {
	return c.WithDataContext(context.Background(), dir)
}

// WithDataContext is WithData with a context: indexing a dataset the user
// brings (seconds over 100 000 files), or listing one in a bucket, stops
// when ctx is done.
func (c Config) WithDataContext(ctx context.Context, dir string) (Config, error) {
	h, err := ondisk.Resolve(ctx, dir, c.Bucket)
	if err != nil {
		return c, err
	}
	in := h.Info()
	c.Data, c.data = dir, h
	seed := in.Seed
	if in.Kind != "headspace" {
		seed = c.Dataset.Seed
	}
	c.Dataset = datasets.Synthetic{Width: in.Width, Height: in.Height, Classes: in.Classes, N: in.Count, Seed: seed, Content: in.Content}
	return c, nil
}

// DataHandle is Data resolved: the handle WithDataContext made, while Data
// and Bucket's endpoint are still the ones it resolved; otherwise (a
// Config whose Data was set by hand, or decoded from a rank's or a
// worker's spec) Data resolved now, every call.
func (c Config) DataHandle(ctx context.Context) (*ondisk.Handle, error) {
	if h := c.resolved(); h != nil {
		return h, nil
	}
	return ondisk.Resolve(ctx, c.Data, c.Bucket)
}

// resolved is the handle WithDataContext made while it still describes
// Data and Bucket, or nil.
func (c Config) resolved() *ondisk.Handle {
	if c.data.Describes(c.Data, c.Bucket) {
		return c.data
	}
	return nil
}

// PreparePageCache puts Data's files in the page cache state PageCache
// names: read once (warm) or evicted (cold). New calls it; a loader that
// runs BatchFillers in other processes calls it once, before they start.
func (c Config) PreparePageCache(ctx context.Context) error {
	var err error
	switch c.PageCache {
	case PageWarm:
		_, err = ondisk.Warm(ctx, c.Data)
	case PageCold:
		_, err = ondisk.Evict(ctx, c.Data)
	}
	return err
}

// dataOptions are the reader's options for Data.
func (c Config) dataOptions() ondisk.Options {
	opts := ondisk.Options{MaxFailures: c.MaxFailures, Decoder: c.Decoder,
		Width: c.Dataset.Width, Height: c.Dataset.Height, Bucket: c.Bucket, ShardReads: c.ShardReads}
	if c.scaled() {
		opts.DecodeMinSide = c.Transforms.Crop
	}
	return opts
}

// localCopy is the local copy of d, a dataset in a bucket, for
// level.Local: its objects downloaded (once per listing, kept in the cache
// for later runs: what a training job's local cache holds after its first
// epoch) and opened from disk with c's options. d is closed.
func (c Config) localCopy(ctx context.Context, d *ondisk.Dataset) (*ondisk.Dataset, ondisk.Copied, error) {
	defer d.Close()
	dir, err := d.LocalCopyDir()
	if err != nil {
		return nil, ondisk.Copied{}, err
	}
	copied, err := d.CopyTo(ctx, dir)
	if err != nil {
		return nil, copied, err
	}
	local, err := ondisk.OpenContext(ctx, dir, c.dataOptions())
	if err != nil {
		return nil, copied, err
	}
	if local.Len() != d.Len() {
		local.Close()
		return nil, copied, fmt.Errorf("loader: the local copy %s of %s holds %d samples, the bucket %d", dir, c.Data, local.Len(), d.Len())
	}
	return local, copied, nil
}

// openData opens Data, from the handle WithData resolved where there is
// one (not inspected again for each loader), and checks that it is the
// dataset Dataset describes.
func (c Config) openData(ctx context.Context) (*ondisk.Dataset, error) {
	var d *ondisk.Dataset
	var err error
	if h := c.resolved(); h != nil {
		d, err = h.Open(ctx, c.dataOptions())
	} else {
		d, err = ondisk.OpenContext(ctx, c.Data, c.dataOptions())
	}
	if err != nil {
		return nil, err
	}
	m := d.Manifest()
	if m.Width != c.Dataset.Width || m.Height != c.Dataset.Height || m.Count != c.Dataset.N {
		d.Close()
		return nil, fmt.Errorf("loader: %s holds %d samples of %dx%d, the configuration says %d of %dx%d",
			c.Data, m.Count, m.Width, m.Height, c.Dataset.N, c.Dataset.Width, c.Dataset.Height)
	}
	return d, nil
}

func (c Config) prefetch() int { return cmp.Or(c.Prefetch, 2) }
