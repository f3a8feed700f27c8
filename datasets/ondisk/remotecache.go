package ondisk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// remoteCacheVersion is the format version of a cached listing.
const remoteCacheVersion = 2

// remoteFile is a remoteMeta as the cache keeps it: the listing (names and
// sizes), how long it took (see Remote), and what indexing found.
// `headspace dataset index s3://…` lists once and every later run reads
// this file; run it again after changing the bucket (an object that
// changed since fails its samples, naming it).
type remoteFile struct {
	Version  int               `json:"version"`
	Endpoint string            `json:"endpoint"`
	Info     Remote            `json:"info"`
	Kind     string            `json:"kind"`
	Sizes    map[string]int64  `json:"sizes"`
	ETags    map[string]string `json:"etags"`
	Manifest *Manifest         `json:"manifest,omitempty"`
	Sum      string            `json:"manifest_sha256,omitempty"`
	Loc      [][3]int64        `json:"loc,omitempty"` // shard, offset, size of each sample (shards layout)
	ShardErr []string          `json:"shard_errors,omitempty"`
	Index    *Index            `json:"index,omitempty"`
}

// remoteCachePath is where the listing of url at endpoint is cached.
func remoteCachePath(endpoint, url string) (string, error) {
	cache, err := IndexCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(endpoint + " " + url))
	return filepath.Join(cache, "s3-"+hex.EncodeToString(sum[:12])+".json"), nil
}

// saveRemote writes meta's listing and index into the cache.
func saveRemote(meta *remoteMeta) (string, error) {
	p, err := remoteCachePath(meta.c.Endpoint(), meta.info.URL)
	if err != nil {
		return "", err
	}
	f := remoteFile{Version: remoteCacheVersion, Endpoint: meta.c.Endpoint(), Info: *meta.info, Kind: meta.kind,
		Sizes: meta.sizes, ETags: meta.etags, Manifest: meta.m, Sum: meta.sum, Index: meta.x}
	for _, l := range meta.loc {
		f.Loc = append(f.Loc, [3]int64{int64(l.shard), l.off, l.size})
	}
	for _, e := range meta.shardErr {
		f.ShardErr = append(f.ShardErr, errString(e))
	}
	return writeJSON(p, f)
}

func errString(e error) string {
	if e == nil {
		return ""
	}
	return e.Error()
}

// loadCachedRemote reads the cached listing of c's URL, or nil if there is
// none (or it does not parse, or is of another version or endpoint: the
// bucket is then listed again).
func loadCachedRemote(c *bucket.Client) (*remoteMeta, error) {
	p, err := remoteCachePath(c.Endpoint(), c.URL().String())
	if err != nil {
		return nil, err
	}
	b, err := ReadBounded(p, 1<<30)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ondisk: %w", err)
	}
	var f remoteFile
	if json.Unmarshal(b, &f) != nil || f.Version != remoteCacheVersion || f.Endpoint != c.Endpoint() || f.Info.URL != c.URL().String() {
		return nil, nil
	}
	meta := &remoteMeta{c: c, info: &f.Info, sizes: f.Sizes, etags: f.ETags, kind: f.Kind, m: f.Manifest, sum: f.Sum, x: f.Index}
	switch {
	case f.Kind == "headspace" && (f.Manifest == nil || f.Manifest.Validate() != nil):
		return nil, nil
	case f.Kind != "headspace" && (f.Index == nil || f.Index.validate() != nil):
		return nil, nil
	}
	for _, l := range f.Loc {
		meta.loc = append(meta.loc, location{shard: int32(l[0]), off: l[1], size: l[2]})
	}
	for _, e := range f.ShardErr {
		var err error
		if e != "" {
			err = corrupt(errors.New(e))
		}
		meta.shardErr = append(meta.shardErr, err)
	}
	if f.Manifest != nil && f.Manifest.Layout == "shards" && (len(meta.loc) != f.Manifest.Count || len(meta.shardErr) != f.Manifest.Shards()) {
		return nil, nil
	}
	meta.info.Cached = true
	return meta, nil
}

// IndexRemote lists and indexes the dataset at an s3:// URL afresh and
// keeps the listing in the cache, where every later open of the URL (in
// any process) reads it instead of listing the bucket again.
func IndexRemote(ctx context.Context, url string, bo bucket.Options) (*Info, string, error) {
	u, err := bucket.ParseURL(url)
	if err != nil {
		return nil, "", err
	}
	c, err := bucket.Open(ctx, u, bo)
	if err != nil {
		return nil, "", err
	}
	meta, err := loadRemote(ctx, c)
	if err != nil {
		return nil, "", err
	}
	p, err := saveRemote(meta)
	if err != nil {
		return nil, "", err
	}
	remoteMemo.Lock()
	remoteMemo.m[c.Endpoint()+" "+u.String()] = meta
	remoteMemo.Unlock()
	in := meta.describe()
	in.Remote = meta.info
	return in, p, nil
}
