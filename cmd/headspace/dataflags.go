package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
)

// dataFlags are the flags of a dataset on disk, shared by every command
// that runs the pipeline: --data, --max-failures and --page-cache.
type dataFlags struct {
	dir         string
	maxFailures int
	pageCache   string
	decoder     string
	decodeScale string
	// Data in a bucket (--data s3://…).
	endpoint    string
	concurrency int
	chunkSize   int64
	linkSpec    string
	shardReads  string
	link        *link.Link // started by apply for --link; close stops it
	fs          *flag.FlagSet
}

func (d *dataFlags) register(fs *flag.FlagSet) {
	d.registerData(fs, "read the dataset `dir` instead of the synthetic fill (fetch and decode stages): one written by headspace dataset write (its manifest sets the raw size, samples and seed), an ImageFolder (class subdirectories of .jpg/.jpeg/.png) or WebDataset .tar shards (images resized to --raw-size, default their most common size; docs/real-data.md)")
	fs.IntVar(&d.maxFailures, "max-failures", 0, fmt.Sprintf("with --data: skip and count up to `n` samples that cannot be read or decoded (0 to %d; 0 stops at the first)", loader.MaxMaxFailures))
	fs.StringVar(&d.decoder, "decoder", ondisk.DecoderGo, "with --data: JPEG `decoder`: go (image/jpeg), turbojpeg (libjpeg-turbo, Debian's "+turbojpeg.Package+", loaded at run time), or nvjpeg (on the GPU: with --device cuda and --transforms device, the levels that decode hand each batch's files to nvJPEG and the device crops, masks and converts them; no pixel on the host; docs/gpu.md)")
	fs.StringVar(&d.decodeScale, "decode-scale", ondisk.DecodeScaleOff, "with --data and --decoder turbojpeg: off, or auto to decode each JPEG at the smallest TurboJPEG scaling factor (1/2, 1/4 or 1/8) whose image still holds the --crop (a dataset you bring: resized to the scaled raw size); the crop is then drawn from the downscaled image, not the full one (another sample distribution, a remedy like storing smaller raw images; recorded in the result file; docs/real-data.md)")
	fs.StringVar(&d.pageCache, "page-cache", loader.PageWarm, "with --data: the dataset's files before each run: warm (read once first) or cold (evicted from the page cache; Linux only); not for data in a bucket")
	d.registerBucket(fs)
}

// registerBucket registers the flags of data in a bucket (--data s3://…).
func (d *dataFlags) registerBucket(fs *flag.FlagSet) {
	fs.StringVar(&d.endpoint, "s3-endpoint", "", "with --data s3://BUCKET/PREFIX: the S3-compatible server's `url` (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS); credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the shared credentials file")
	fs.IntVar(&d.concurrency, "fetch-concurrency", 0, fmt.Sprintf("with --data s3://…: GET requests in flight, whatever --workers is (1 to %d; 0 means %d)", loader.MaxFetchConcurrency, bucket.DefaultConcurrency))
	fs.Int64Var(&d.chunkSize, "chunk-size", 0, fmt.Sprintf("with --data s3://…: the largest single ranged GET in `bytes` (%d to %d; 0 means %d)", loader.MinChunkSize, loader.MaxChunkSize, bucket.DefaultChunkSize))
	fs.StringVar(&d.shardReads, "shard-reads", ondisk.ShardReadsRanged, "with --data s3://… in shards: fetch each sample with its own ranged GET (`ranged`), or each shard whole, once, serving its samples from memory (whole: one request per shard)")
	fs.StringVar(&d.linkSpec, "link", "", "with --data s3://… on a server on this machine: put an emulated network `link` between them: a preset (same-region, cross-region, home, none), key=value settings (latency=20ms,jitter=5ms,bandwidth=1Gbit/s,conn-bandwidth=90MB/s,request-rate=5500,reset=every:100,stall=0.01,stall-for=2s,truncate=5%), or a preset then overrides; recorded in the result file (docs/remote.md)")
}

// close stops the link apply started, if any.
func (d *dataFlags) close() {
	if d.link != nil {
		d.link.Close()
		d.link = nil
	}
}

// startLink starts the --link between headspace and the server at
// endpoint (the flag's, or the environment's), which must be on this
// machine, and returns the link's URL to use as the endpoint.
func (d *dataFlags) startLink(endpoint string) (string, *link.Config, error) {
	lc, err := link.Parse(d.linkSpec)
	if err != nil {
		return "", nil, usagef("--link: %s", strings.TrimPrefix(err.Error(), "link: "))
	}
	if endpoint == "" {
		endpoint = cmp.Or(os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"))
	}
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil || u.Scheme != "http" || u.Host == "" {
		return "", nil, usagef("--link emulates the network to a server on this machine: give its http://127.0.0.1:PORT with --s3-endpoint or AWS_ENDPOINT_URL")
	}
	l, err := link.Start(context.Background(), u.Host, lc)
	if err != nil {
		return "", nil, usagef("--link: %s", strings.TrimPrefix(err.Error(), "link: "))
	}
	d.link = l
	return l.URL(), &lc, nil
}

// bucketOptions are the flags' bucket settings.
func (d *dataFlags) bucketOptions() bucket.Options {
	return bucket.Options{Endpoint: d.endpoint, Concurrency: d.concurrency, ChunkSize: d.chunkSize}
}

// registerData registers --data alone, with the given usage.
func (d *dataFlags) registerData(fs *flag.FlagSet, usage string) {
	d.fs = fs
	fs.StringVar(&d.dir, "data", "", usage)
}

// set reports whether the flag name was given on the command line.
func (d *dataFlags) set(name string) bool {
	found := false
	d.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// apply makes cfg read the dataset on disk the flags name (nothing without
// --data): the raw size, samples, classes and seed come from its manifest,
// and --raw-size or --seed given with another value is refused. ctx bounds
// the indexing of a dataset the user brings (SIGINT stops it).
func (d *dataFlags) apply(ctx context.Context, cfg loader.Config) (loader.Config, error) {
	if d.dir == "" {
		for _, name := range []string{"max-failures", "page-cache", "decoder", "decode-scale", "s3-endpoint", "fetch-concurrency", "chunk-size", "link", "shard-reads"} {
			if d.set(name) {
				return cfg, usagef("--%s needs --data", name)
			}
		}
		return cfg, nil
	}
	remote := bucket.IsURL(d.dir)
	if !remote {
		for _, name := range []string{"s3-endpoint", "fetch-concurrency", "chunk-size", "link", "shard-reads"} {
			if d.set(name) {
				return cfg, usagef("--%s needs --data s3://BUCKET/PREFIX", name)
			}
		}
	} else {
		if _, err := bucket.ParseURL(d.dir); err != nil {
			return cfg, usageError{err.Error()}
		}
		if d.set("page-cache") {
			return cfg, usagef("--page-cache: %s is in a bucket, not on this machine's disk", d.dir)
		}
		d.pageCache = ""
		if d.set("fetch-concurrency") {
			if err := inRange("--fetch-concurrency", d.concurrency, 1, loader.MaxFetchConcurrency); err != nil {
				return cfg, err
			}
		}
		if d.set("chunk-size") && (d.chunkSize < loader.MinChunkSize || d.chunkSize > loader.MaxChunkSize) {
			return cfg, usagef("--chunk-size %d: want %d to %d bytes", d.chunkSize, loader.MinChunkSize, loader.MaxChunkSize)
		}
		cfg.Bucket = d.bucketOptions()
		if !slices.Contains(ondisk.ShardReadModes, d.shardReads) {
			return cfg, usagef("--shard-reads %q: want ranged or whole", d.shardReads)
		}
		if d.shardReads == ondisk.ShardReadsWhole {
			cfg.ShardReads = d.shardReads
		}
		if d.linkSpec != "" {
			ep, lc, err := d.startLink(d.endpoint)
			if err != nil {
				return cfg, err
			}
			cfg.Origin = cfg.Bucket.EndpointURL()
			cfg.Bucket.Endpoint, cfg.Link = ep, lc.Settings()
		}
	}
	if err := inRange("--max-failures", d.maxFailures, 0, loader.MaxMaxFailures); err != nil {
		return cfg, err
	}
	if d.decoder != "" && !slices.Contains(ondisk.Decoders, d.decoder) {
		return cfg, usagef("--decoder %q: want go, turbojpeg or nvjpeg", d.decoder)
	}
	if d.decoder == ondisk.DecoderTurbo {
		if _, err := turbojpeg.Load(); err != nil {
			return cfg, fmt.Errorf("--decoder turbojpeg: %w", err)
		}
	}
	if err := d.checkDecodeScale(ctx); err != nil {
		return cfg, err
	}
	switch d.pageCache {
	case "", loader.PageWarm: // "": a command without --page-cache
	case loader.PageCold:
		if !ondisk.EvictAvailable {
			return cfg, usagef("--page-cache cold: page-cache eviction is not available on %s; use warm", runtime.GOOS)
		}
	default:
		return cfg, usagef("--page-cache %q: want warm or cold", d.pageCache)
	}
	want := cfg
	cfg, err := cfg.WithDataContext(ctx, d.dir)
	if err != nil {
		if ctx.Err() != nil {
			return cfg, err // interrupted: exit 130
		}
		return cfg, usageError{err.Error()}
	}
	ds := cfg.Dataset
	in, err := ondisk.InspectWith(context.Background(), d.dir, cfg.Bucket)
	if err == nil && d.decoder == ondisk.DecoderNvjpeg && !strings.Contains(in.Format, "jpeg") {
		return cfg, usagef("--decoder nvjpeg decodes JPEGs: --data %s holds %s", d.dir, in.Format)
	}
	if err != nil || in.Kind != "headspace" {
		// A dataset the user brings: --raw-size is the shape its images
		// are resized to (default: the most common size).
		if d.set("raw-size") {
			cfg.Dataset.Width, cfg.Dataset.Height = want.Dataset.Width, want.Dataset.Height
		}
		cfg.MaxFailures, cfg.PageCache, cfg.Decoder, cfg.DecodeScale = d.maxFailures, d.pageCache, d.decoder, d.decodeScale
		return cfg, nil
	}
	if d.set("raw-size") && (want.Dataset.Width != ds.Width || want.Dataset.Height != ds.Height) {
		return cfg, usagef("--raw-size %dx%d conflicts with --data %s, whose images are %dx%d: leave --raw-size out", want.Dataset.Width, want.Dataset.Height, d.dir, ds.Width, ds.Height)
	}
	if d.set("seed") && want.Dataset.Seed != ds.Seed {
		return cfg, usagef("--seed %d conflicts with --data %s, written with seed %d: leave --seed out", want.Dataset.Seed, d.dir, ds.Seed)
	}
	cfg.MaxFailures, cfg.PageCache, cfg.Decoder, cfg.DecodeScale = d.maxFailures, d.pageCache, d.decoder, d.decodeScale
	return cfg, nil
}

// checkDecodeScale refuses --decode-scale auto where it cannot apply:
// another decoder than turbojpeg, or data without JPEGs.
func (d *dataFlags) checkDecodeScale(ctx context.Context) error {
	switch d.decodeScale {
	case "", ondisk.DecodeScaleOff:
		return nil
	case ondisk.DecodeScaleAuto:
	default:
		return usagef("--decode-scale %q: want off or auto", d.decodeScale)
	}
	if d.decoder != ondisk.DecoderTurbo {
		return usagef("--decode-scale auto needs --decoder turbojpeg (TurboJPEG's scaled decoding)")
	}
	in, err := ondisk.Inspect(ctx, d.dir)
	if err != nil {
		return nil // --data's own error follows
	}
	if !strings.Contains(in.Format, "jpeg") {
		return usagef("--decode-scale auto decodes JPEGs: --data %s holds %s images", d.dir, in.Format)
	}
	return nil
}

// describe is the dataset's line for a command's output, or "" without
// --data.
func describe(ctx context.Context, cfg loader.Config) string {
	if cfg.Data == "" {
		return ""
	}
	dec, _ := ondisk.DecoderName(cfg.Decoder)
	if cfg.DecodeScale == ondisk.DecodeScaleAuto {
		dec += ", decode scale " + cfg.DecodeScaleSetting()
	}
	if cfg.Remote() {
		in, err := ondisk.InspectWith(ctx, cfg.Data, cfg.Bucket)
		if err != nil || in.Remote == nil {
			return ""
		}
		r := in.Remote
		return fmt.Sprintf("data %s: %d samples, %s, %s; listed %d objects (%.1f MB) in %.3f s; fetch concurrency %d, max failures %d, decoder %s\n",
			cfg.Data, in.Count, in.Format, in.Layout, r.Objects, float64(r.Bytes)/1e6, r.List.Seconds(), cmp.Or(cfg.Bucket.Concurrency, bucket.DefaultConcurrency), cfg.MaxFailures, dec)
	}
	m, err := ondisk.ReadManifest(cfg.Data)
	if err != nil {
		in, err := ondisk.Inspect(ctx, cfg.Data)
		if err != nil {
			return ""
		}
		return fmt.Sprintf("data %s: %d samples, %s, %s; sizes %s; read at %dx%d; %d unreadable; page cache %s, max failures %d, decoder %s\n",
			cfg.Data, in.Count, in.Format, in.Layout, in.Sizes, cfg.Dataset.Width, cfg.Dataset.Height, in.Failed, cfg.PageCache, cfg.MaxFailures, dec)
	}
	return fmt.Sprintf("data %s: %d %s samples in %s, %.0f bytes each on disk; page cache %s, max failures %d, decoder %s\n",
		cfg.Data, m.Count, m.Format, m.Layout, m.BytesPerSample(), cfg.PageCache, cfg.MaxFailures, dec)
}
