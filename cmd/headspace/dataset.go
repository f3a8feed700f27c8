package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/progress"
)

// The dataset commands' bounds, beside their flags (internal/cli's table).
var _ = cli.Declare(map[string]cli.Bound{
	"dataset write n":          {Lo: 1, Hi: ondisk.MaxCount},
	"dataset write workers":    {Lo: 0, Hi: ondisk.MaxWorkers},
	"dataset write classes":    {Lo: 1, Hi: 1 << 20},
	"dataset write quality":    {Lo: 1, Hi: 100},
	"dataset write shard-size": {Lo: 1, Hi: ondisk.MaxShard},
	"dataset n":                {Lo: 1, Hi: ondisk.MaxCount},
	"dataset classes":          {Lo: 1, Hi: 1 << 20},
	"dataset quality":          {Lo: 1, Hi: 100},
	"dataset shard-size":       {Lo: 1, Hi: ondisk.MaxShard},
})

func init() {
	register(cli.Command{Name: "dataset", Verbs: []string{"write", "verify", "warm", "evict", "index", "upload"}, Summary: "write the synthetic dataset to disk (raw, PNG, JPEG; files or tar shards), verify it, warm or evict it; index a dataset you have", Run: runDataset})
}

const datasetUsage = `
Verbs:

  write   --out DIR [flags]  write N samples of the synthetic dataset to DIR
  verify  DIR                check every file's size and SHA-256 against the manifest
  verify  s3://BUCKET/PREFIX the same for a dataset that upload put in a bucket
                             (its manifest at the prefix); a server it cannot
                             reach and a prefix with no manifest are told apart
  warm    DIR                read every file once (into the page cache); prints GB/s
  evict   DIR                drop the files from the page cache (Linux:
                             posix_fadvise DONTNEED); prints what stays resident
  index   DIR                index a dataset you already have (an ImageFolder:
                             class subdirectories of .jpg/.jpeg/.png, links
                             followed; or WebDataset .tar shards) into the cache
                             ($HEADSPACE_CACHE/index or ~/.cache/headspace/index),
                             never into DIR; --data uses it while DIR is unchanged.
                             It prints the samples it cannot read (no permission,
                             a bad header, a truncated shard), which fail a run
                             or count against --max-failures. With
                             s3://BUCKET/PREFIX, it lists and indexes a dataset in
                             a bucket, prints the listing's time and keeps the
                             listing in the cache, where every later --data
                             s3://… reads it instead of listing again (run it
                             again after changing the bucket)
  upload  DIR s3://BUCKET/PREFIX
                             put a dataset (any layout --data reads) into a bucket,
                             one object per file (multipart for large shards),
                             the manifest last (an upload cut short is no
                             dataset); --make-bucket creates the bucket first.
                             A prefix that holds objects is refused unless
                             --replace (which deletes the old ones), and so is
                             a file that is not a regular file or a link that
                             leads nowhere, before anything is uploaded

write encodes the same images the synthetic dataset gives (deterministic
from --seed) as raw RGB bytes, PNG or JPEG, one file per sample or in
WebDataset tar shards (<key>.<ext> and <key>.cls per sample, keys zero-padded
so tar order is index order), with manifest.json (count, size, format,
layout, labels, every file's size and SHA-256). With --content noise
(the default) the samples are uniform random bytes, the document's
FakeDataset: they compress badly (a PNG is slightly larger than the raw
bytes, a JPEG at quality 90 is 30% of them), a worst case. --content natural
draws dead leaves, which compress like photos (docs/real-data.md). The write is atomic: it goes to DIR.tmp-<pid> and is renamed to DIR
at the end; DIR must not exist, be empty, or (with --force) hold a dataset.`

func runDataset(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verbs := []string{"write", "verify", "warm", "evict", "index", "upload"}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fs := cli.NewFlagSet("dataset <verb>", datasetUsage, stdout)
		writeFlags(fs)
		if len(args) == 0 {
			return cli.Usagef("want a verb: %s (run 'headspace dataset -h')", strings.Join(verbs, ", "))
		}
		fs.Usage()
		return flag.ErrHelp
	}
	switch args[0] {
	case "write":
		return runDatasetWrite(ctx, args[1:], stdout)
	case "verify", "warm", "evict":
		if args[0] == "verify" && slices.ContainsFunc(args[1:], func(a string) bool { return strings.HasPrefix(a, "s3://") }) {
			return runDatasetVerifyBucket(ctx, args[1:], stdout)
		}
		return runDatasetDir(ctx, args[0], args[1:], stdout)
	case "index":
		return runDatasetIndex(ctx, args[1:], stdout)
	case "upload":
		return runDatasetUpload(ctx, args[1:], stdout)
	}
	return cli.Usagef("unknown verb %q: want %s", args[0], strings.Join(verbs, ", "))
}

type datasetWriteFlags struct {
	n, quality, shardSize, classes        int
	workers                               *loader.Workers
	rawSize, out, format, layout, content string
	seed                                  uint64
	force                                 bool
}

func writeFlags(fs *flag.FlagSet) *datasetWriteFlags {
	f := &datasetWriteFlags{}
	fs.IntVar(&f.n, "n", 1000, "`samples` to write (the document's dataset holds 10000)")
	fs.StringVar(&f.rawSize, "raw-size", "1024", "image `size`, N or WxH (the document: 1024, then 256)")
	fs.StringVar(&f.out, "out", "", "dataset `dir`ectory (required)")
	fs.Uint64Var(&f.seed, "seed", 1, "synthetic dataset `seed` (the ladder's --seed)")
	fs.IntVar(&f.classes, "classes", 10, "number of `labels`")
	fs.StringVar(&f.content, "content", datasets.ContentNoise, "image `content`: noise (the document's uniform random bytes) or natural (dead leaves: compresses and decodes like photos)")
	fs.StringVar(&f.format, "format", "jpeg", "sample `encoding`: raw, png or jpeg")
	fs.IntVar(&f.quality, "quality", ondisk.DefaultQuality, "JPEG `quality`, 1..100")
	fs.StringVar(&f.layout, "layout", "shards", "`layout`: files (one per sample) or shards (WebDataset tar)")
	fs.IntVar(&f.shardSize, "shard-size", ondisk.DefaultShardSize, "`samples` per shard")
	f.workers = loader.WorkersFlag(fs, false, "encoding `goroutines` (0: one per CPU)", 0)
	fs.BoolVar(&f.force, "force", false, "replace a dataset already at --out (never anything else)")
	return f
}

func runDatasetWrite(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("dataset write", datasetUsage, stdout)
	f := writeFlags(fs)
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	w, h, err := cli.ParseSize("--raw-size", f.rawSize)
	if err != nil {
		return err
	}
	switch {
	case f.out == "":
		return cli.Usagef("--out: want the dataset directory")
	case w > ondisk.MaxSide || h > ondisk.MaxSide:
		return cli.Usagef("--raw-size %dx%d: at most %dx%d", w, h, ondisk.MaxSide, ondisk.MaxSide)
	case !slices.Contains(datasets.Contents, f.content):
		return cli.Usagef("--content %q: want noise or natural", f.content)
	case !slices.Contains(ondisk.Formats, f.format):
		return cli.Usagef("--format %q: want raw, png or jpeg", f.format)
	case !slices.Contains(ondisk.Layouts, f.layout):
		return cli.Usagef("--layout %q: want files or shards", f.layout)
	}
	src := datasets.Synthetic{Width: w, Height: h, Classes: f.classes, N: f.n, Seed: f.seed, Content: f.content}
	bar := progress.New(os.Stderr, f.n)
	bar.Set("dataset write " + f.out)
	m, err := ondisk.Write(ctx, f.out, src, ondisk.WriteOptions{
		Format: f.format, Quality: f.quality, Layout: f.layout, ShardSize: f.shardSize,
		Workers: f.workers.N(), Force: f.force, Progress: bar.Add,
	})
	bar.Finish()
	if errors.Is(err, ondisk.ErrRefused) {
		return refused(err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d samples of %dx%d as %s, %s; %d files, %.1f MB, %.0f bytes/sample (%.1f%% of raw, %s content)\n",
		f.out, m.Count, m.Width, m.Height, formatName(m), m.Layout, len(m.Files), float64(m.Bytes())/1e6, m.BytesPerSample(),
		100*m.BytesPerSample()/float64(3*m.Width*m.Height), f.content)
	return nil
}

func formatName(m *ondisk.Manifest) string {
	if m.Format == "jpeg" {
		return fmt.Sprintf("jpeg (quality %d)", m.Quality)
	}
	return m.Format
}

func runDatasetDir(ctx context.Context, verb string, args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("dataset "+verb+" DIR", datasetUsage, stdout)
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cli.Usagef("%s: want one dataset directory", verb)
	}
	dir := fs.Arg(0)
	if _, err := ondisk.ReadManifest(dir); err != nil {
		return refused(err)
	}
	switch verb {
	case "verify":
		d, err := ondisk.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		if err := d.Verify(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d files match the manifest\n", dir, len(d.Manifest().Files))
	case "warm":
		st, err := ondisk.Warm(ctx, dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: read %d files, %.1f MB in %v: %.2f GB/s\n", dir, st.Files, float64(st.Bytes)/1e6, st.Elapsed.Round(1e6), st.GBps())
	case "evict":
		if !ondisk.EvictAvailable {
			_, err := ondisk.Evict(ctx, dir)
			return refused(err)
		}
		st, err := ondisk.Evict(ctx, dir)
		if err != nil {
			return err
		}
		r, total, err := ondisk.Resident(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: evicted %d files, %.1f MB; %.1f of %.1f MB still in the page cache\n", dir, st.Files, float64(st.Bytes)/1e6, float64(r)/1e6, float64(total)/1e6)
	}
	return nil
}

func runDatasetIndex(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("dataset index DIR|s3://BUCKET/PREFIX", datasetUsage, stdout)
	var bo bucket.Options
	bo.RegisterFlags(fs)
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cli.Usagef("index: want one dataset directory or s3:// URL")
	}
	dir := fs.Arg(0)
	if bucket.IsURL(dir) {
		in, p, err := ondisk.IndexRemote(ctx, dir, bo)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // SIGINT: exit 130
			}
			return refused(err)
		}
		r := in.Remote
		fmt.Fprintf(stdout, "%s: %s, %d samples in %d classes, %s, %s, %d unreadable; listed %d objects (%.1f MB) in %.3f s, indexed in %.3f s; listing %s\n",
			dir, in.Kind, in.Count, in.Classes, in.Format, in.Layout, in.Failed, r.Objects, float64(r.Bytes)/1e6, r.List.Seconds(), r.Index.Seconds(), p)
		printUnreadable(stdout, in.Unreadable)
		return nil
	}
	kind, err := ondisk.DetectKind(dir)
	if err != nil {
		return refused(err)
	}
	if kind == "headspace" {
		return cli.Usagef("index: %s holds a dataset written by headspace (%s): it needs no index", dir, ondisk.ManifestName)
	}
	x, err := ondisk.BuildIndex(ctx, dir)
	if err != nil {
		return err
	}
	p, err := ondisk.SaveIndex(x)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, %d samples in %d classes, %s, %d unreadable; sizes %s; index %s\n",
		dir, x.Kind, len(x.Samples), len(x.Classes), x.Formats(), x.Failed(), x.SizeSummary(), p)
	var unreadable []string
	for i, s := range x.Samples {
		if s.Error != "" {
			unreadable = append(unreadable, x.Where(i)+": "+s.Error)
		}
	}
	printUnreadable(stdout, unreadable)
	return nil
}

func runDatasetUpload(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("dataset upload DIR s3://BUCKET/PREFIX", datasetUsage, stdout)
	var bo bucket.Options
	bo.RegisterFlags(fs)
	mk := fs.Bool("make-bucket", false, "create the bucket if it does not exist")
	replace := fs.Bool("replace", false, "upload to a prefix that holds objects: the old ones are deleted (the old manifest first), never mixed with the new")
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cli.Usagef("upload: want a dataset directory and an s3://BUCKET/PREFIX URL")
	}
	dir, dst := fs.Arg(0), fs.Arg(1)
	u, err := bucket.ParseURL(dst)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if _, err := ondisk.DetectKind(dir); err != nil {
		return refused(err)
	}
	// Every file checked before a bucket is made or an object put.
	if err := ondisk.CheckUpload(ctx, dir); errors.Is(err, ondisk.ErrRefused) {
		return refused(err)
	} else if err != nil {
		return err
	}
	if *mk {
		c, err := bucket.OpenUnchecked(u, bo)
		if err != nil {
			return cli.UsageError{Msg: err.Error()}
		}
		if err := c.MakeBucket(ctx); err != nil {
			return err
		}
	}
	c, err := bucket.Open(ctx, u, bo)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	t0 := time.Now()
	up, err := ondisk.UploadWith(ctx, c, dir, ondisk.UploadOptions{Replace: *replace})
	if errors.Is(err, ondisk.ErrRefused) {
		return refused(err)
	}
	if err != nil {
		return err
	}
	took := time.Since(t0)
	st := c.Stats()
	fmt.Fprintf(stdout, "%s → %s: %d objects, %.1f MB in %.2f s (%.1f MB/s), %d requests, %d retries\n",
		dir, u, up.Objects, float64(up.Bytes)/1e6, took.Seconds(), float64(up.Bytes)/1e6/took.Seconds(), st.Requests, st.Retries)
	return nil
}

// runDatasetVerifyBucket is dataset verify s3://BUCKET/PREFIX: every
// object the manifest upload put at the prefix lists, checked as on disk
// (ondisk.VerifyRemote). A server that cannot be reached and a prefix
// without a manifest are told apart.
func runDatasetVerifyBucket(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("dataset verify s3://BUCKET/PREFIX", datasetUsage, stdout)
	var bo bucket.Options
	bo.RegisterFlags(fs)
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cli.Usagef("verify: want one dataset directory or s3://BUCKET/PREFIX URL")
	}
	u, err := bucket.ParseURL(fs.Arg(0))
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	c, err := bucket.Open(ctx, u, bo)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	m, err := ondisk.VerifyRemote(ctx, c)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ondisk.ErrCorrupt):
		return err
	case err != nil:
		return refused(err)
	}
	fmt.Fprintf(stdout, "%s: %d objects match the manifest\n", u, len(m.Files))
	return nil
}

// refused is ondisk's refusal err as a usage error (exit 2), without
// the package's prefix.
func refused(err error) error {
	return cli.UsageError{Msg: strings.TrimPrefix(err.Error(), "ondisk: ")}
}

// maxUnreadableShown is how many unreadable samples dataset index names.
const maxUnreadableShown = 10

// printUnreadable names the first maxUnreadableShown of the unreadable
// samples, "WHERE: why" each, and counts the rest.
func printUnreadable(w io.Writer, unreadable []string) {
	for i, u := range unreadable {
		if i == maxUnreadableShown {
			fmt.Fprintf(w, "  … and %d more unreadable\n", len(unreadable)-i)
			break
		}
		fmt.Fprintf(w, "  unreadable: %s\n", u)
	}
}
