package loader

import (
	"flag"
	"fmt"
	"slices"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
)

// DataFlags are the command-line flags of the data a loader reads: the
// one definition of each, registered onto a command's flag set by
// Register (or RegisterData and RegisterBucket, for a command that takes
// only those) and turned into a Config's data fields, checked, by Apply.
type DataFlags struct {
	Dir         string         // --data: a directory or an s3:// URL
	MaxFailures int            // --max-failures: Config.MaxFailures
	Decoder     string         // --decoder: Config.Decoder
	DecodeScale string         // --decode-scale: Config.DecodeScale
	PageCache   string         // --page-cache: Config.PageCache
	Bucket      bucket.Options // --s3-endpoint, --fetch-concurrency, --chunk-size
	ShardReads  string         // --shard-reads: Config.ShardReads
	Link        string         // --link: the emulated network to the bucket's server (package link)
}

// DataUsage is --data's help where Register defines it.
const DataUsage = "read the dataset `dir` instead of the synthetic fill (fetch and decode stages): one written by headspace dataset write (its manifest sets the raw size, samples and seed), an ImageFolder (class subdirectories of .jpg/.jpeg/.png) or WebDataset .tar shards (images resized to --raw-size, default their most common size; docs/real-data.md)"

// Register registers every data flag onto fs, each with its default.
func (d *DataFlags) Register(fs *flag.FlagSet) {
	d.RegisterData(fs, DataUsage)
	fs.IntVar(&d.MaxFailures, "max-failures", 0, fmt.Sprintf("with --data: skip and count up to `n` samples that cannot be read or decoded (0 to %d; 0 stops at the first)", MaxMaxFailures))
	fs.StringVar(&d.Decoder, "decoder", ondisk.DecoderGo, "with --data: JPEG `decoder`: go (image/jpeg), turbojpeg (libjpeg-turbo, Debian's "+turbojpeg.Package+", loaded at run time), or nvjpeg (on the GPU: with --device cuda and --transforms device, the levels that decode hand each batch's files to nvJPEG and the device crops, masks and converts them; no pixel on the host; docs/gpu.md)")
	fs.StringVar(&d.DecodeScale, "decode-scale", ondisk.DecodeScaleOff, "with --data and --decoder turbojpeg: off, or auto to decode each JPEG at the smallest TurboJPEG scaling factor (1/2, 1/4 or 1/8) whose image still holds the --crop (a dataset you bring: resized to the scaled raw size); the crop is then drawn from the downscaled image, not the full one (another sample distribution, a remedy like storing smaller raw images; recorded in the result file; docs/real-data.md)")
	fs.StringVar(&d.PageCache, "page-cache", PageWarm, "with --data: the dataset's files before each run: warm (read once first) or cold (evicted from the page cache; Linux only); not for data in a bucket")
	d.RegisterBucket(fs)
}

// RegisterData registers --data alone, with the given usage.
func (d *DataFlags) RegisterData(fs *flag.FlagSet, usage string) {
	fs.StringVar(&d.Dir, "data", "", usage)
}

// RegisterBucket registers the flags of data in a bucket (--data
// s3://…): bucket.Options' own, --shard-reads and --link.
func (d *DataFlags) RegisterBucket(fs *flag.FlagSet) {
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
	dataOnlyFlags   = append([]string{"max-failures", "page-cache", "decoder", "decode-scale"}, bucketOnlyFlags...)
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
	return cfg, cfg.validateData()
}
