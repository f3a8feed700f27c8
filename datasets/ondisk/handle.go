package ondisk

import (
	"context"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// Handle is a dataset resolved once: where it is (a directory or an
// s3:// URL), what Inspect found there, and a headspace dataset's
// manifest. A command resolves --data into a Handle once (Resolve) and
// hands it to everything that describes the dataset: its checks of the
// flags, its result file's settings, its report's line. So one run lists
// a bucket's cached listing, reads a manifest or fingerprints a user's
// index once, and every one of them describes the same dataset, even if
// it changes on disk during the run. Reading the samples is another
// matter: each loader opens the dataset itself (OpenContext), for its own
// files and counters.
//
// A Handle is never modified once Resolve returns it; it is safe to share
// between goroutines. Its Info and Manifest are not to be modified.
type Handle struct {
	uri      string
	endpoint string // the bucket options' endpoint it was listed with
	info     *Info
	manifest *Manifest
}

// Resolve resolves the dataset at uri, a directory or an s3:// URL read
// with the bucket options bo, into a Handle: Inspect's work, once, with
// its errors.
func Resolve(ctx context.Context, uri string, bo bucket.Options) (*Handle, error) {
	in, m, err := inspect(ctx, uri, bo)
	if err != nil {
		return nil, err
	}
	return &Handle{uri: uri, endpoint: bo.Endpoint, info: in, manifest: m}, nil
}

// URI is the directory or s3:// URL the handle was resolved from, as
// given.
func (h *Handle) URI() string { return h.uri }

// Info is what Inspect found.
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
