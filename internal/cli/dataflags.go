package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loader"
)

// DataFlags are the data flags of a command that runs the pipeline
// (loader.DataFlags: --data, --max-failures, --page-cache, the bucket's),
// the flag set that parsed them and the --link apply started.
type DataFlags struct {
	loader.DataFlags
	link *link.Link // started by apply for --link; close stops it
	fs   *flag.FlagSet
}

// Register defines the data flags on fs.
func (d *DataFlags) Register(fs *flag.FlagSet) {
	d.fs = fs
	d.DataFlags.Register(fs)
}

// RegisterData registers --data alone, with the given usage.
func (d *DataFlags) RegisterData(fs *flag.FlagSet, usage string) {
	d.fs = fs
	d.DataFlags.RegisterData(fs, usage)
}

// StartedLink is the link Resolve started for --link, or nil.
func (d *DataFlags) StartedLink() *link.Link { return d.link }

// Close stops the link apply started, if any.
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
		return "", nil, Usagef("--link: %s", strings.TrimPrefix(err.Error(), "link: "))
	}
	if endpoint == "" {
		endpoint = cmp.Or(os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"))
	}
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil || u.Scheme != "http" || u.Host == "" {
		return "", nil, Usagef("--link emulates the network to a server on this machine: give its http://127.0.0.1:PORT with --s3-endpoint or AWS_ENDPOINT_URL")
	}
	l, err := link.Start(context.Background(), u.Host, lc)
	if err != nil {
		return "", nil, Usagef("--link: %s", strings.TrimPrefix(err.Error(), "link: "))
	}
	d.link = l
	return l.URL(), &lc, nil
}

// Set reports whether the flag name was given on the command line.
func (d *DataFlags) Set(name string) bool {
	found := false
	d.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// Resolve makes cfg read the dataset the flags name (nothing without
// --data), the flags checked by loader.DataFlags.Apply: the raw size,
// samples, classes and seed come from its manifest, and --raw-size or
// --seed given with another value is refused. ctx bounds the indexing of
// a dataset the user brings (SIGINT stops it). The dataset is resolved
// once (loader.Config.WithDataContext): the checks here, and the settings
// and Describe after, use the handle cfg then carries.
func (d *DataFlags) Resolve(ctx context.Context, cfg loader.Config) (loader.Config, error) {
	want := cfg
	cfg, err := d.DataFlags.Apply(cfg, d.Set)
	if err != nil || d.Dir == "" {
		return cfg, AsUsage(err)
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
		return cfg, UsageError{err.Error()}
	}
	h, err := cfg.DataHandle(ctx)
	if err != nil {
		return cfg, AsUsage(err) // not reached: WithDataContext resolved it
	}
	in, ds := h.Info(), cfg.Dataset
	if err := d.checkDecodeScale(in); err != nil {
		return cfg, err
	}
	if d.Decoder == ondisk.DecoderNvjpeg && !strings.Contains(in.Format, "jpeg") {
		return cfg, Usagef("--decoder nvjpeg decodes JPEGs: --data %s holds %s", d.Dir, in.Format)
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
		return cfg, Usagef("--raw-size %dx%d conflicts with --data %s, whose images are %dx%d: leave --raw-size out", want.Dataset.Width, want.Dataset.Height, d.Dir, ds.Width, ds.Height)
	}
	if d.Set("seed") && want.Dataset.Seed != ds.Seed {
		return cfg, Usagef("--seed %d conflicts with --data %s, written with seed %d: leave --seed out", want.Dataset.Seed, d.Dir, ds.Seed)
	}
	return cfg, nil
}

// AsUsage is err as a usage error (exit 2), or nil.
func AsUsage(err error) error {
	if err == nil {
		return nil
	}
	return UsageError{err.Error()}
}

// checkDecodeScale refuses --decode-scale auto on data without JPEGs, in
// the dataset's handle's description in (loader.DataFlags.Apply checked
// the rest).
func (d *DataFlags) checkDecodeScale(in *ondisk.Info) error {
	if d.DecodeScale == ondisk.DecodeScaleAuto && !strings.Contains(in.Format, "jpeg") {
		return Usagef("--decode-scale auto decodes JPEGs: --data %s holds %s images", d.Dir, in.Format)
	}
	return nil
}

// Describe is the dataset's line for a command's Output, or "" without
// --data (or with data that cannot be resolved). It describes the dataset
// by cfg's handle (loader.Config.DataHandle), not inspecting it again.
func Describe(ctx context.Context, cfg loader.Config) string {
	if cfg.Data == "" {
		return ""
	}
	dec, _ := ondisk.DecoderName(cfg.Decoder)
	if cfg.DecodeScale == ondisk.DecodeScaleAuto {
		dec += ", decode scale " + cfg.DecodeScaleSetting()
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
