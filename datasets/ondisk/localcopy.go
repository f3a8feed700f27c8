package ondisk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// LocalCopyDir is where the local copy of d, a dataset in a bucket, is
// kept: the cache's copy/<key> ($HEADSPACE_CACHE/copy, or the user cache
// directory's headspace/copy), one per endpoint, URL and listing, so a
// changed bucket never reads a stale copy. It is what MosaicML Streaming's
// or Tigris's local cache holds after the first epoch.
func (d *Dataset) LocalCopyDir() (string, error) {
	if d.remote == nil {
		return "", fmt.Errorf("ondisk: %s is not in a bucket", d.dir)
	}
	cache, err := IndexCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(d.remote.Endpoint() + " " + d.remoteInfo.URL + " " + d.remoteInfo.Fingerprint))
	return filepath.Join(filepath.Dir(cache), "copy", hex.EncodeToString(sum[:12])), nil
}

// Copied is what CopyTo downloaded.
type Copied struct {
	Objects int
	Bytes   int64
	Took    time.Duration
}

// CopyTo downloads every listed object of d, a dataset in a bucket, into
// dir with its slash-separated name (Concurrency at a time), and keeps the
// objects already there at their listed size, so a second call copies
// nothing. Each file is written to a temporary name and renamed, so an
// interrupted copy leaves no partial file. Hidden objects are skipped,
// as the index skips them, and so is an object the dataset does not use
// whose name would leave dir (.., a backslash, an absolute path); one it
// uses is refused, naming it.
func (d *Dataset) CopyTo(ctx context.Context, dir string) (Copied, error) {
	if d.remote == nil {
		return Copied{}, fmt.Errorf("ondisk: %s is not in a bucket", d.dir)
	}
	used := d.usedObjects()
	names := make([]string, 0, len(d.sizes))
	for rel := range d.sizes {
		escapes := !filepath.IsLocal(filepath.FromSlash(rel)) || strings.Contains(rel, "\\")
		switch {
		case escapes && used[rel]:
			return Copied{}, corruptf("ondisk: copy %s: its name leaves the copy's directory", d.remote.Where(rel))
		case escapes, hidden(rel):
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil && fi.Mode().IsRegular() && fi.Size() == d.sizes[rel] {
			continue
		}
		names = append(names, rel)
	}
	slices.Sort(names)
	t0 := time.Now()
	files, bytes, err := eachFile(ctx, d.remote.Options().Concurrency, names, func(ctx context.Context, rel string) (int64, error) {
		return d.sizes[rel], d.copyObject(ctx, dir, rel)
	})
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("ondisk: copy %s: %w", d.remoteInfo.URL, ctx.Err())
	}
	return Copied{Objects: files, Bytes: bytes, Took: time.Since(t0)}, err
}

// usedObjects are the objects the dataset reads: a headspace dataset's
// manifest and files, an index's files.
func (d *Dataset) usedObjects() map[string]bool {
	used := map[string]bool{}
	if x := d.foreign; x != nil {
		for _, f := range x.Files {
			used[f] = true
		}
		return used
	}
	used[ManifestName] = true
	for _, f := range d.m.Files {
		used[f.Name] = true
	}
	return used
}

// copyObject downloads rel into dir, through a temporary file renamed into
// place.
func (d *Dataset) copyObject(ctx context.Context, dir, rel string) error {
	buf, err := d.remote.GetListed(ctx, d.listed(rel), nil)
	if err != nil {
		return remoteFault(fmt.Errorf("ondisk: copy: %w", err))
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("ondisk: copy %s: %w", rel, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".copy-*")
	if err != nil {
		return fmt.Errorf("ondisk: copy %s: %w", rel, err)
	}
	_, err = tmp.Write(buf)
	if err = errors.Join(err, tmp.Close()); err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("ondisk: copy %s: %w", p, err)
	}
	return nil
}
