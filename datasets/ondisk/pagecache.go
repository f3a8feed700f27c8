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
	buf := make([]byte, 1<<20)
	return eachFileOf(ctx, dir, "warm", func(p string) (int64, error) {
		f, err := OpenRegular(p)
		if err != nil {
			return 0, openErr{fmt.Errorf("ondisk: warm: %w", err)}
		}
		defer f.Close()
		n, err := io.CopyBuffer(io.Discard, onlyReader{f}, buf)
		if err != nil {
			return n, fmt.Errorf("ondisk: warm: %s: %w", p, err)
		}
		return n, nil
	})
}

// eachFileOf runs do (warm, evict or resident, as what says) on every
// file of the dataset in dir (files), looking at ctx before each, and
// counts the files and do's bytes; a file of a dataset the user brings
// that do cannot open (an openErr) is skipped: its samples fail or are
// counted.
func eachFileOf(ctx context.Context, dir, what string, do func(p string) (int64, error)) (CacheStats, error) {
	paths, foreign, err := files(ctx, dir)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return CacheStats{}, fmt.Errorf("ondisk: list %s: %w", dir, err)
	}
	if err != nil {
		return CacheStats{}, err
	}
	st := CacheStats{}
	start := time.Now()
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("ondisk: %s %s: %w", what, dir, err)
		}
		n, err := do(p)
		var open openErr
		if errors.As(err, &open) && foreign {
			st.Skipped++
			continue
		}
		st.Bytes += n
		if err != nil {
			return st, err
		}
		st.Files++
	}
	st.Elapsed = time.Since(start)
	return st, nil
}

// openErr is the error of a file that could not be opened.
type openErr struct{ error }

func (o openErr) Unwrap() error { return o.error }

// onlyReader hides os.File's WriterTo so CopyBuffer reads with our buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
