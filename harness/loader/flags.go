package loader

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/internal/cli"
)

// DataFlags are the command-line flags of the data a loader reads: the
// one definition of each, registered onto a command's flag set by
// Register (or RegisterData and RegisterBucket, for a command that takes
// only those), turned into a Config's data fields, checked, by Apply,
// and into a Config that reads the data by Resolve.
type DataFlags struct {
	Dir         string         // --data: a directory or an s3:// URL
	MaxFailures int            // --max-failures: Config.MaxFailures
	Decoder     string         // --decoder: Config.Decoder
	DecodeScale string         // --decode-scale: Config.DecodeScale
	DecodeCrop  string         // --decode-crop: Config.DecodeCrop
	PageCache   string         // --page-cache: Config.PageCache
	Bucket      bucket.Options // --s3-endpoint, --fetch-concurrency, --chunk-size
	ShardReads  string         // --shard-reads: Config.ShardReads
	Link        string         // --link: the emulated network to the bucket's server (package link)

	fs   *flag.FlagSet // the flag set Register defined them on: Set reads it
	link *link.Link    // started by Resolve for --link; Close stops it
}

// The bounds of the data flags' numbers and of the pipeline's (whichever
// command defines --batch, --crop, --prefetch or --workers, with
// Config.Bounds' limits), declared in cli's table beside the flags;
// bucket.Options declares its own.
var _ = cli.Declare(map[string]cli.Bound{
	"max-failures": {Lo: 0, Hi: MaxMaxFailures},
	"batch":        {Lo: 1, Hi: MaxBatch},
	"crop":         {Lo: 1, Hi: MaxSide},
	"prefetch":     {Lo: 1, Hi: MaxPrefetch},
	"workers":      {Lo: 0, Hi: MaxWorkers},
})

// DataUsage is --data's help where Register defines it.
const DataUsage = "read the dataset `dir` instead of the synthetic fill (fetch and decode stages): one written by headspace dataset write (its manifest sets the raw size, samples and seed), an ImageFolder (class subdirectories of .jpg/.jpeg/.png) or WebDataset .tar shards (images resized to --raw-size, default their most common size; docs/real-data.md)"

// Register registers every data flag onto fs, each with its default.
func (d *DataFlags) Register(fs *flag.FlagSet) {
	d.RegisterData(fs, DataUsage)
	fs.IntVar(&d.MaxFailures, "max-failures", 0, fmt.Sprintf("with --data: skip and count up to `n` samples that cannot be read or decoded (0 to %d; 0 stops at the first)", MaxMaxFailures))
	fs.StringVar(&d.Decoder, "decoder", ondisk.DecoderGo, "with --data: JPEG `decoder`: go (image/jpeg), turbojpeg (libjpeg-turbo, Debian's "+turbojpeg.Package+", loaded at run time), or nvjpeg (on the GPU: with --device cuda and --transforms device, the levels that decode hand each batch's files to nvJPEG and the device crops, masks and converts them; no pixel on the host; docs/gpu.md)")
	fs.StringVar(&d.DecodeScale, "decode-scale", ondisk.DecodeScaleOff, "with --data and --decoder turbojpeg: off, or auto to decode each JPEG at the smallest TurboJPEG scaling factor (1/2, 1/4 or 1/8) whose image still holds the --crop (a dataset you bring: resized to the scaled raw size); the crop is then drawn from the downscaled image, not the full one (another sample distribution, a remedy like storing smaller raw images; recorded in the result file; docs/real-data.md)")
	fs.StringVar(&d.DecodeCrop, "decode-crop", DecodeCropOff, "with --data, --decoder turbojpeg and the fast transforms: off, or on to decode only each JPEG's random crop (libjpeg-turbo's libjpeg API, Debian's "+turbojpeg.LibjpegPackage+"): the same pixels and tensors as decoding the whole image, less work (recorded in the result file; docs/peers.md)")
	fs.StringVar(&d.PageCache, "page-cache", PageWarm, "with --data: the dataset's files before each run: warm (read once first) or cold (evicted from the page cache; Linux only); not for data in a bucket")
	d.RegisterBucket(fs)
}

// RegisterData registers --data alone, with the given usage.
func (d *DataFlags) RegisterData(fs *flag.FlagSet, usage string) {
	d.fs = fs
	fs.StringVar(&d.Dir, "data", "", usage)
}

// RegisterBucket registers the flags of data in a bucket (--data
// s3://…): bucket.Options' own, --shard-reads and --link.
func (d *DataFlags) RegisterBucket(fs *flag.FlagSet) {
	d.fs = fs
	d.Bucket.RegisterFlags(fs)
	ShardReadsFlag(fs, &d.ShardReads, ondisk.ShardReadsRanged)
	LinkFlag(fs, &d.Link, "")
}

// ShardReadsFlag registers --shard-reads onto fs, into p, with the
// default def: ondisk.ShardReadsRanged with --data s3://…, whole for peer
// --remote (as its boto3 peer streams each shard).
func ShardReadsFlag(fs *flag.FlagSet, p *string, def string) {
	fs.StringVar(p, "shard-reads", def, "with data in a bucket in shards (--data s3://…, or ours in peer --remote): how a sample is fetched, a `mode`: ranged (with its own ranged GET) or whole (its shard whole, once, the shard's samples served from memory: one request per shard)")
}

// LinkFlag registers --link onto fs, into p, with the default def: none
// with --data s3://…, cross-region for peer --remote.
func LinkFlag(fs *flag.FlagSet, p *string, def string) {
	fs.StringVar(p, "link", def, "with --data s3://… on a server on this machine (peer --remote: the server it starts, for both sides): put an emulated network `link` between them: a preset (same-region, cross-region, home, none), key=value settings (latency=20ms,jitter=5ms,bandwidth=1Gbit/s,conn-bandwidth=90MB/s,request-rate=5500,reset=every:100,stall=0.01,stall-for=2s,truncate=5%), or a preset then overrides; recorded in the result file (docs/remote.md)")
}

// CheckShardReads checks a --shard-reads value: "" (ranged), ranged or
// whole.
func CheckShardReads(s string) error {
	if s != "" && !slices.Contains(ondisk.ShardReadModes, s) {
		return fmt.Errorf("--shard-reads %q: want ranged or whole", s)
	}
	return nil
}

// The flags that need --data, and those that need it in a bucket.
var (
	bucketOnlyFlags = []string{"s3-endpoint", "fetch-concurrency", "chunk-size", "link", "shard-reads"}
	dataOnlyFlags   = append([]string{"max-failures", "page-cache", "decoder", "decode-scale", "decode-crop"}, bucketOnlyFlags...)
)

// Apply is cfg with the data fields the flags set (none without --data),
// checked as Config.Validate checks them; given reports whether a flag
// was on the command line, so that one given without the data it applies
// to is refused. Every error is the user's input, naming its flag. Apply
// neither opens the data nor starts the link: Config.WithDataContext
// reads the dataset's shape, and the caller starts Link (package link).
func (d *DataFlags) Apply(cfg Config, given func(name string) bool) (Config, error) {
	if d.Dir == "" {
		for _, name := range dataOnlyFlags {
			if given(name) {
				return cfg, fmt.Errorf("--%s needs --data", name)
			}
		}
		return cfg, nil
	}
	if !bucket.IsURL(d.Dir) {
		for _, name := range bucketOnlyFlags {
			if given(name) {
				return cfg, fmt.Errorf("--%s needs --data s3://BUCKET/PREFIX", name)
			}
		}
	} else {
		if _, err := bucket.ParseURL(d.Dir); err != nil {
			return cfg, err
		}
		if given("page-cache") {
			return cfg, fmt.Errorf("--page-cache: %s is in a bucket, not on this machine's disk", d.Dir)
		}
		d.PageCache = ""
		cfg.Bucket = d.Bucket
		if d.ShardReads != ondisk.ShardReadsRanged {
			cfg.ShardReads = d.ShardReads
		}
	}
	cfg.Data = d.Dir
	cfg.MaxFailures, cfg.PageCache, cfg.Decoder, cfg.DecodeScale = d.MaxFailures, d.PageCache, d.Decoder, d.DecodeScale
	if d.DecodeCrop != DecodeCropOff {
		cfg.DecodeCrop = d.DecodeCrop
	}
	return cfg, cfg.validateData()
}

// Set reports whether the flag name was given on the command line.
func (d *DataFlags) Set(name string) bool {
	found := false
	d.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// StartedLink is the link Resolve started for --link, or nil.
func (d *DataFlags) StartedLink() *link.Link { return d.link }

// Close stops the link Resolve started, if any.
func (d *DataFlags) Close() {
	if d.link != nil {
		d.link.Close()
		d.link = nil
	}
}

// startLink starts the --link between headspace and the server at
// endpoint (the flag's, or the environment's), which must be on this
// machine, and returns the link's URL to use as the endpoint.
func (d *DataFlags) startLink(endpoint string) (string, *link.Config, error) {
	lc, err := link.Parse(d.Link)
	if err != nil {
		return "", nil, cli.Usagef("--link: %s", strings.TrimPrefix(err.Error(), "link: "))
	}
	if endpoint == "" {
		endpoint = cmp.Or(os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"))
	}
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil || u.Scheme != "http" || u.Host == "" {
		return "", nil, cli.Usagef("--link emulates the network to a server on this machine: give its http://127.0.0.1:PORT with --s3-endpoint or AWS_ENDPOINT_URL")
	}
	l, err := link.Start(context.Background(), u.Host, lc)
	if err != nil {
		return "", nil, cli.Usagef("--link: %s", strings.TrimPrefix(err.Error(), "link: "))
	}
	d.link = l
	return l.URL(), &lc, nil
}

// Resolve makes cfg read the dataset the flags name (nothing without
// --data), the flags checked by Apply: the raw size, samples, classes and
// seed come from its manifest, and --raw-size or --seed given with
// another value is refused (a usage error, exit 2). ctx bounds the
// indexing of a dataset the user brings (SIGINT stops it). The dataset is
// resolved once (Config.WithDataContext): the checks here, and the
// settings and Describe after, use the handle cfg then carries.
func (d *DataFlags) Resolve(ctx context.Context, cfg Config) (Config, error) {
	want := cfg
	cfg, err := d.Apply(cfg, d.Set)
	if err != nil || d.Dir == "" {
		return cfg, cli.AsUsage(err)
	}
	if d.Link != "" {
		ep, lc, err := d.startLink(d.Bucket.Endpoint)
		if err != nil {
			return cfg, err
		}
		cfg.Origin = cfg.Bucket.EndpointURL()
		cfg.Bucket.Endpoint, cfg.Link = ep, lc.Settings()
	}
	if d.Decoder == ondisk.DecoderTurbo {
		if _, err := turbojpeg.Load(); err != nil {
			return cfg, fmt.Errorf("--decoder turbojpeg: %w", err)
		}
	}
	if cfg, err = cfg.WithDataContext(ctx, d.Dir); err != nil {
		if ctx.Err() != nil {
			return cfg, err // interrupted: exit 130
		}
		return cfg, cli.UsageError{Msg: err.Error()}
	}
	h, err := cfg.DataHandle(ctx)
	if err != nil {
		return cfg, cli.AsUsage(err) // not reached: WithDataContext resolved it
	}
	in, ds := h.Info(), cfg.Dataset
	if err := d.checkDecodeScale(in); err != nil {
		return cfg, err
	}
	if d.Decoder == ondisk.DecoderNvjpeg && !strings.Contains(in.Format, "jpeg") {
		return cfg, cli.Usagef("--decoder nvjpeg decodes JPEGs: --data %s holds %s", d.Dir, in.Format)
	}
	if in.Kind != "headspace" {
		// A dataset the user brings: --raw-size is the shape its images
		// are resized to (default: the most common size).
		if d.Set("raw-size") {
			cfg.Dataset.Width, cfg.Dataset.Height = want.Dataset.Width, want.Dataset.Height
		}
		return cfg, nil
	}
	if d.Set("raw-size") && (want.Dataset.Width != ds.Width || want.Dataset.Height != ds.Height) {
		return cfg, cli.Usagef("--raw-size %dx%d conflicts with --data %s, whose images are %dx%d: leave --raw-size out", want.Dataset.Width, want.Dataset.Height, d.Dir, ds.Width, ds.Height)
	}
	if d.Set("seed") && want.Dataset.Seed != ds.Seed {
		return cfg, cli.Usagef("--seed %d conflicts with --data %s, written with seed %d: leave --seed out", want.Dataset.Seed, d.Dir, ds.Seed)
	}
	return cfg, nil
}

// checkDecodeScale refuses --decode-scale auto on data without JPEGs, in
// the dataset's handle's description in (Apply checked the rest).
func (d *DataFlags) checkDecodeScale(in *ondisk.Info) error {
	if d.DecodeScale == ondisk.DecodeScaleAuto && !strings.Contains(in.Format, "jpeg") {
		return cli.Usagef("--decode-scale auto decodes JPEGs: --data %s holds %s images", d.Dir, in.Format)
	}
	return nil
}

// Describe is the dataset's line for a command's output, or "" without
// --data (or with data that cannot be resolved). It describes the dataset
// by cfg's handle (Config.DataHandle), not inspecting it again.
func Describe(ctx context.Context, cfg Config) string {
	if cfg.Data == "" {
		return ""
	}
	dec, _ := ondisk.DecoderName(cfg.Decoder)
	if cfg.DecodeScale == ondisk.DecodeScaleAuto {
		dec += ", decode scale " + cfg.DecodeScaleSetting()
	}
	if cfg.DecodesCrop() {
		dec += ", decode crop on"
	}
	h, err := cfg.DataHandle(ctx)
	if err != nil {
		return ""
	}
	in := h.Info()
	if cfg.Remote() {
		if in.Remote == nil {
			return ""
		}
		r := in.Remote
		return fmt.Sprintf("data %s: %d samples, %s, %s; listed %d objects (%.1f MB) in %.3f s; fetch concurrency %d, max failures %d, decoder %s\n",
			cfg.Data, in.Count, in.Format, in.Layout, r.Objects, float64(r.Bytes)/1e6, r.List.Seconds(), cmp.Or(cfg.Bucket.Concurrency, bucket.DefaultConcurrency), cfg.MaxFailures, dec)
	}
	m := h.Manifest()
	if m == nil {
		return fmt.Sprintf("data %s: %d samples, %s, %s; sizes %s; read at %dx%d; %d unreadable; page cache %s, max failures %d, decoder %s\n",
			cfg.Data, in.Count, in.Format, in.Layout, in.Sizes, cfg.Dataset.Width, cfg.Dataset.Height, in.Failed, cfg.PageCache, cfg.MaxFailures, dec)
	}
	return fmt.Sprintf("data %s: %d %s samples in %s, %.0f bytes each on disk; page cache %s, max failures %d, decoder %s\n",
		cfg.Data, m.Count, m.Format, m.Layout, m.BytesPerSample(), cfg.PageCache, cfg.MaxFailures, dec)
}

// ParsePlacements parses --placement's comma-separated list of
// placements.
func ParsePlacements(s string) ([]Placement, error) {
	names, err := cli.ParseList("--placement", s, Placements)
	if err != nil {
		return nil, err
	}
	out := make([]Placement, len(names))
	for i, n := range names {
		out[i], _ = ParsePlacement(n)
	}
	return out, nil
}
