package ondisk

import (
	"context"
	"fmt"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// Info is what a command needs to know about a dataset directory before
// it reads it: a headspace dataset (from its manifest) or one the user
// brings (from its index).
type Info struct {
	Kind           string // "headspace", KindImageFolder or KindWebDataset
	Count, Classes int
	Width, Height  int    // the manifest's size, or the most common size
	Seed           uint64 // headspace datasets only
	Content        string // headspace datasets only
	Format, Layout string // as DataSettings records them
	Sum            string // the manifest's SHA-256, or the index fingerprint
	// Foreign datasets only: the size distribution (Index.SizeSummary),
	// the samples known unreadable, whether the index came from the cache.
	Sizes       string
	Failed      int
	IndexCached bool
	// Unreadable names what cannot be read, "WHERE: why" each (a
	// sample, a shard or a file), for a dataset in a bucket, whatever its
	// kind; Failed then counts the samples it costs (a headspace
	// dataset's too).
	Unreadable []string
	// Remote is how a dataset in a bucket was listed and indexed; nil
	// for a local one.
	Remote *Remote
}

// InspectWith describes the dataset in dir without opening its files (a
// foreign dataset is indexed if its cached index is missing or stale),
// reading a dataset at an s3:// URL with the bucket options bo (its
// listing is kept for the process: OpenWith and the settings see the
// same one).
func InspectWith(ctx context.Context, dir string, bo bucket.Options) (*Info, error) {
	in, _, _, err := inspect(ctx, dir, bo)
	return in, err
}

// inspect is InspectWith, with a headspace dataset's manifest (its file
// read once for both) or a local dataset's index (nil otherwise).
func inspect(ctx context.Context, dir string, bo bucket.Options) (*Info, *Manifest, *Index, error) {
	if bucket.IsURL(dir) {
		meta, err := openRemoteURL(ctx, dir, bo)
		if err != nil {
			return nil, nil, nil, err
		}
		in := meta.describe()
		in.Remote = meta.info
		return in, meta.m, nil, nil
	}
	kind, err := DetectKind(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if kind == "headspace" {
		m, sum, err := readManifestSum(dir)
		if err != nil {
			return nil, nil, nil, err
		}
		return manifestInfo(m, sum), m, nil, nil
	}
	x, cached, err := LoadIndex(ctx, dir)
	if err != nil {
		return nil, nil, nil, err
	}
	return indexInfo(x, cached), nil, x, nil
}

// manifestInfo describes a headspace dataset by its manifest and the
// manifest's SHA-256.
func manifestInfo(m *Manifest, sum string) *Info {
	in := &Info{Kind: "headspace", Count: m.Count, Classes: m.Classes, Width: m.Width, Height: m.Height,
		Seed: m.Seed, Content: m.Content, Format: m.Format, Layout: m.Layout, Sum: sum}
	if m.Format == "jpeg" {
		in.Format = fmt.Sprintf("jpeg-q%d", m.Quality)
	}
	if m.Layout == "shards" {
		in.Layout = fmt.Sprintf("shards-of-%d", m.ShardSize)
	}
	return in
}

// indexInfo describes a dataset the user brings by its index.
func indexInfo(x *Index, cached bool) *Info {
	in := &Info{Kind: x.Kind, Count: len(x.Samples), Classes: max(1, len(x.Classes)),
		Format: x.Kind + "-" + x.Formats(), Layout: "files", Sum: x.Sum(),
		Sizes: x.SizeSummary(), Failed: x.Failed(), IndexCached: cached}
	if x.Kind == KindWebDataset {
		in.Layout = fmt.Sprintf("%d-shards", len(x.Files))
	}
	if sz := x.Sizes(); len(sz) > 0 {
		in.Width, in.Height = sz[0].Width, sz[0].Height
	}
	return in
}
