package ondisk

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// Uploaded is what Upload put into a bucket.
type Uploaded struct {
	Objects int
	Bytes   int64
}

// Upload puts the dataset in dir (any layout OpenWith reads) under c's
// URL, one object per file with the same slash-separated name, files in
// Concurrency parallel uploads; minio-go splits a large shard into a
// multipart upload. Hidden files and directories are skipped, as the
// readers skip them; symbolic links are followed to regular files. The
// first failure stops the upload and names the file.
func Upload(ctx context.Context, c *bucket.Client, dir string) (Uploaded, error) {
	dir = ResolveDir(dir)
	if _, err := DetectKind(dir); err != nil {
		return Uploaded{}, err
	}
	var rels []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rels = append(rels, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return Uploaded{}, fmt.Errorf("ondisk: upload %s: %w", dir, err)
	}
	objects, bytes, err := eachFile(ctx, c.Options().Concurrency, rels, func(ctx context.Context, rel string) (int64, error) {
		return uploadFile(ctx, c, dir, rel)
	})
	return Uploaded{Objects: objects, Bytes: bytes}, err
}

// eachFile runs do on every name, workers at a time, and sums the bytes
// of those that succeed; the first error cancels the rest and is
// returned (ctx's error if ctx ended first).
func eachFile(ctx context.Context, workers int, names []string, do func(ctx context.Context, name string) (int64, error)) (files int, bytes int64, err error) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	for range min(workers, max(1, len(names))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				n, derr := do(ctx, name)
				mu.Lock()
				if derr != nil && err == nil {
					err = derr
					cancel()
				} else if derr == nil {
					files++
					bytes += n
				}
				mu.Unlock()
			}
		}()
	}
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		work <- name
	}
	close(work)
	wg.Wait()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return files, bytes, err
}

func uploadFile(ctx context.Context, c *bucket.Client, dir, rel string) (int64, error) {
	f, size, err := openUserFile(filepath.Join(dir, filepath.FromSlash(rel)), MaxUserFileBytes)
	if err != nil {
		return 0, fmt.Errorf("ondisk: upload: %w", err)
	}
	defer f.Close()
	if err := c.Put(ctx, rel, f, size); err != nil {
		return 0, fmt.Errorf("ondisk: upload %s: %w", filepath.Join(dir, rel), err)
	}
	return size, nil
}
