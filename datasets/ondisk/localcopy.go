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
	"sync"
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
// interrupted copy leaves no partial file. An object whose name would
// leave dir (.., an absolute path) is refused, naming it.
func (d *Dataset) CopyTo(ctx context.Context, dir string) (Copied, error) {
	if d.remote == nil {
		return Copied{}, fmt.Errorf("ondisk: %s is not in a bucket", d.dir)
	}
	names := make([]string, 0, len(d.sizes))
	for rel := range d.sizes {
		if !filepath.IsLocal(filepath.FromSlash(rel)) || strings.Contains(rel, "\\") {
			return Copied{}, fmt.Errorf("ondisk: copy %s: its name leaves the copy's directory", d.remote.Where(rel))
		}
		if hidden(rel) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil && fi.Mode().IsRegular() && fi.Size() == d.sizes[rel] {
			continue
		}
		names = append(names, rel)
	}
	slices.Sort(names)
	t0 := time.Now()
	var (
		mu    sync.Mutex
		out   Copied
		first error
		wg    sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	for range min(d.remote.Options().Concurrency, max(1, len(names))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for rel := range work {
				var err error
				buf, err = d.copyObject(ctx, dir, rel, buf)
				mu.Lock()
				if err != nil && first == nil {
					first = err
					cancel()
				} else if err == nil {
					out.Objects++
					out.Bytes += d.sizes[rel]
				}
				mu.Unlock()
			}
		}()
	}
	for _, rel := range names {
		if ctx.Err() != nil {
			break
		}
		work <- rel
	}
	close(work)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = fmt.Errorf("ondisk: copy %s: %w", d.remoteInfo.URL, ctx.Err())
	}
	out.Took = time.Since(t0)
	return out, first
}

// copyObject downloads rel into dir, through a temporary file renamed into
// place.
func (d *Dataset) copyObject(ctx context.Context, dir, rel string, buf []byte) ([]byte, error) {
	buf, err := d.remote.Get(ctx, rel, d.sizes[rel], buf)
	if err != nil {
		return buf, fmt.Errorf("ondisk: copy: %w", err)
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return buf, fmt.Errorf("ondisk: copy %s: %w", rel, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".copy-*")
	if err != nil {
		return buf, fmt.Errorf("ondisk: copy %s: %w", rel, err)
	}
	_, werr := tmp.Write(buf)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return buf, fmt.Errorf("ondisk: copy %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return buf, fmt.Errorf("ondisk: copy %s: %w", p, err)
	}
	return buf, nil
}
