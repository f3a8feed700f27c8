package ondisk

import (
	"context"
	"path/filepath"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// Handle is a dataset resolved once: where it is (a directory or an
// s3:// URL), what InspectWith found there, and a headspace dataset's
// manifest. A command resolves --data into a Handle once (Resolve) and
// hands it to everything that describes the dataset: its checks of the
// flags, its result file's settings, its report's line. So one run lists
// a bucket's cached listing, reads a manifest or fingerprints a user's
// index once, and every one of them describes the same dataset, even if
// it changes on disk during the run. Each loader still opens the dataset
// for itself, for its own files and counters, but from the handle (Open):
// by the manifest or index the handle holds, not read again.
//
// A Handle is never modified once Resolve returns it; it is safe to share
// between goroutines. Its Info and Manifest are not to be modified.
type Handle struct {
	uri      string
	endpoint string // the bucket options' endpoint it was listed with
	info     *Info
	manifest *Manifest
	index    *Index // a local dataset the user brings
}

// Resolve resolves the dataset at uri, a directory or an s3:// URL read
// with the bucket options bo, into a Handle: InspectWith's work, once, with
// its errors.
func Resolve(ctx context.Context, uri string, bo bucket.Options) (*Handle, error) {
	in, m, x, err := inspect(ctx, uri, bo)
	if err != nil {
		return nil, err
	}
	return &Handle{uri: uri, endpoint: bo.Endpoint, info: in, manifest: m, index: x}, nil
}

// Open opens the dataset h describes for reading with opts, as
// OpenContext does, from what Resolve found: a headspace dataset's
// manifest and a local index are not read again (the shards are opened
// and indexed, the dataset's own files); a dataset in a bucket opens on
// the process's listing of it (which Resolve made) through a client of
// opts.Bucket.
func (h *Handle) Open(ctx context.Context, opts Options) (*Dataset, error) {
	if bucket.IsURL(h.uri) {
		return OpenContext(ctx, h.uri, opts)
	}
	turbo, err := opts.check()
	if err != nil {
		return nil, err
	}
	dir := ResolveDir(h.uri)
	if h.manifest != nil {
		return openManifest(dir, h.manifest, opts, turbo)
	}
	if abs, err := filepath.Abs(dir); err != nil || h.index == nil || h.index.Dir != abs {
		// Reached through a symbolic link: OpenContext's index is the
		// link's target's, whose paths its errors name.
		return OpenContext(ctx, h.uri, opts)
	}
	return openIndexed(dir, h.index, opts, turbo)
}

// URI is the directory or s3:// URL the handle was resolved from, as
// given.
func (h *Handle) URI() string { return h.uri }

// Info is what InspectWith found.
func (h *Handle) Info() *Info { return h.info }

// Manifest is a headspace dataset's manifest; nil for a dataset the user
// brings (an ImageFolder or WebDataset shards), which has none.
func (h *Handle) Manifest() *Manifest { return h.manifest }

// Describes reports whether h is the dataset at uri read with the bucket
// options bo: the same uri and, for an s3:// URL, the same endpoint (the
// other options change how it is read, not what it holds). A nil Handle
// describes nothing.
func (h *Handle) Describes(uri string, bo bucket.Options) bool {
	if h == nil || h.uri != uri {
		return false
	}
	return !bucket.IsURL(uri) || h.endpoint == bo.Endpoint
}
