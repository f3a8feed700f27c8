package ondisk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// Uploaded is what Upload put into a bucket.
type Uploaded struct {
	Objects int
	Bytes   int64
}

// UploadOptions are what UploadWith may do to the prefix.
type UploadOptions struct {
	// Replace lets the upload go to a prefix that holds objects: the
	// old objects that the new dataset does not have are deleted, its
	// manifest first, so that the prefix holds the new dataset alone (or,
	// interrupted, no headspace dataset at all).
	Replace bool
}

// Upload is UploadWith without Replace: a prefix that holds objects is
// refused.
func Upload(ctx context.Context, c *bucket.Client, dir string) (Uploaded, error) {
	return UploadWith(ctx, c, dir, UploadOptions{})
}

// UploadWith puts the dataset in dir (any layout OpenWith reads) under
// c's URL, one object per file with the same slash-separated name, files
// in Concurrency parallel uploads; minio-go splits a large shard into a
// multipart upload. Hidden files and directories are skipped, as the
// readers skip them; symbolic links are followed to regular files.
//
// Before anything is uploaded, every file is checked: one that is not a
// regular file (a named pipe, a device) or a link that leads nowhere is
// refused (ErrRefused, naming it), and so is a prefix that already holds
// objects, unless o.Replace: they would read as one dataset with the new
// files. The manifest of a headspace dataset is uploaded last, once every
// other file is in place, so an upload cut short never reads as a
// dataset. The first failure stops the upload and names the file.
func UploadWith(ctx context.Context, c *bucket.Client, dir string, o UploadOptions) (Uploaded, error) {
	dir = ResolveDir(dir)
	rels, err := uploadList(ctx, dir)
	if err != nil {
		return Uploaded{}, err
	}
	old, err := c.List(ctx)
	if err != nil {
		return Uploaded{}, fmt.Errorf("ondisk: upload %s: %w", dir, err)
	}
	if len(old) > 0 && !o.Replace {
		return Uploaded{}, fmt.Errorf("ondisk: upload %s: %s already holds %d objects (the first: %s), which would read as one dataset with these: %w; upload to an empty prefix, or replace them (--replace)",
			dir, c.URL(), len(old), old[0].Name, ErrRefused)
	}
	manifest := slices.Contains(rels, ManifestName)
	rels = slices.DeleteFunc(rels, func(rel string) bool { return rel == ManifestName })
	if len(old) > 0 {
		// The old manifest first: from here on the prefix is no dataset
		// until the new manifest is in place.
		if err := c.Remove(ctx, ManifestName); err != nil {
			return Uploaded{}, fmt.Errorf("ondisk: upload %s: %w", dir, err)
		}
	}
	upload := func(ctx context.Context, rel string) (int64, error) { return uploadFile(ctx, c, dir, rel) }
	var up Uploaded
	if up.Objects, up.Bytes, err = eachFile(ctx, c.Options().Concurrency, rels, upload); err != nil {
		return up, err
	}
	if len(old) > 0 {
		if err := removeStale(ctx, c, old, rels); err != nil {
			return up, fmt.Errorf("ondisk: upload %s: removing the old objects: %w", dir, err)
		}
	}
	if manifest {
		n, err := upload(ctx, ManifestName)
		if err != nil {
			return up, err
		}
		up.Objects++
		up.Bytes += n
	}
	return up, nil
}

// removeStale removes the objects of old, the prefix's listing before an
// upload, that the upload of rels did not replace (the manifest aside).
func removeStale(ctx context.Context, c *bucket.Client, old []bucket.Object, rels []string) error {
	keep := make(map[string]bool, len(rels)+1)
	for _, rel := range rels {
		keep[rel] = true
	}
	var stale []string
	for _, ob := range old {
		if !keep[ob.Name] && ob.Name != ManifestName {
			stale = append(stale, ob.Name)
		}
	}
	_, _, err := eachFile(ctx, c.Options().Concurrency, stale, func(ctx context.Context, rel string) (int64, error) {
		return 0, c.Remove(ctx, rel)
	})
	return err
}

// CheckUpload checks, before anything is uploaded or a bucket made, that
// dir is a dataset UploadWith would upload: every file regular (after
// links), or ErrRefused naming the first that is not.
func CheckUpload(ctx context.Context, dir string) error {
	_, err := uploadList(ctx, ResolveDir(dir))
	return err
}

// uploadList is every file of the dataset in dir that an upload puts,
// slash-separated names relative to dir: hidden files and directories
// skipped, links followed; a file that is not regular or a link that
// leads nowhere is refused (ErrRefused).
func uploadList(ctx context.Context, dir string) ([]string, error) {
	if _, err := DetectKind(dir); err != nil {
		return nil, err
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
		fi, err := os.Stat(p) // a link's target
		switch {
		case err != nil && e.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: a symbolic link that leads nowhere (%v): %w", p, rootErr(err), ErrRefused)
		case err != nil:
			return err
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s: not a regular file (%s): %w", p, fi.Mode().Type(), ErrRefused)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rels = append(rels, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ondisk: upload %s: %w", dir, err)
	}
	return rels, nil
}

// rootErr is a path error's reason alone.
func rootErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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
