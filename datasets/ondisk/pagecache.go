package ondisk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"
)

// CacheStats is what Warm or Evict did: the bytes of the files it touched
// and the time it took.
type CacheStats struct {
	Files int
	Bytes int64
	// Skipped is the files of a dataset the user brings that could not be
	// opened (no permission, a dangling link, a pipe): its index lists
	// their samples as unreadable, and the run fails on them or, within
	// --max-failures, counts them.
	Skipped int
	Elapsed time.Duration
}

// GBps is the bytes per second achieved, in GB/s (10⁹ bytes).
func (s CacheStats) GBps() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / s.Elapsed.Seconds() / 1e9
}

// files lists the files Warm, Evict and Resident touch, looking at ctx
// before each entry; a dir given as a symbolic link is resolved first
// (ResolveDir), so the link's dataset is walked, not the link. For a
// headspace dataset, every regular file under dir, manifest included; for
// one the user brings (foreign), the files its index covers (listFiles:
// the images, through linked class directories, or the shards), which may
// include files that cannot be opened: the callers skip those.
func files(ctx context.Context, dir string) (paths []string, foreign bool, err error) {
	dir = ResolveDir(dir)
	if kind, err := DetectKind(dir); err == nil && kind != "headspace" {
		_, listed, err := listFiles(ctx, dir, kind)
		if err != nil {
			return nil, true, err
		}
		for _, f := range listed {
			paths = append(paths, filepath.Join(dir, filepath.FromSlash(f.rel)))
		}
		return paths, true, nil
	}
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.Type().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("ondisk: %w", err)
	}
	return paths, false, nil
}

// Warm reads every file of the dataset in dir once (files), so that the
// next reads come from the page cache (as far as memory allows), and
// reports the read rate.
func Warm(ctx context.Context, dir string) (CacheStats, error) {
	paths, foreign, err := files(ctx, dir)
	if err != nil {
		return CacheStats{}, warmErr(dir, err)
	}
	buf := make([]byte, 1<<20)
	st := CacheStats{}
	start := time.Now()
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("ondisk: warm %s: %w", dir, err)
		}
		f, err := OpenRegular(p)
		if err != nil && foreign {
			st.Skipped++
			continue
		}
		if err != nil {
			return st, fmt.Errorf("ondisk: warm: %w", err)
		}
		n, err := io.CopyBuffer(io.Discard, onlyReader{f}, buf)
		f.Close()
		st.Bytes += n
		if err != nil {
			return st, fmt.Errorf("ondisk: warm: %s: %w", p, err)
		}
		st.Files++
	}
	st.Elapsed = time.Since(start)
	return st, nil
}

// warmErr is files' error for Warm and Evict: a context's error names
// the directory and stays a context error.
func warmErr(dir string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("ondisk: list %s: %w", dir, err)
	}
	return err
}

// onlyReader hides os.File's WriterTo so CopyBuffer reads with our buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
