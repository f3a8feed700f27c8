package ondisk

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"
)

// CacheStats is what Warm or Evict did: the bytes of the files it touched
// and the time it took.
type CacheStats struct {
	Files   int
	Bytes   int64
	Elapsed time.Duration
}

// GBps is the bytes per second achieved, in GB/s (10⁹ bytes).
func (s CacheStats) GBps() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / s.Elapsed.Seconds() / 1e9
}

// files lists the regular files under dir, manifest included; a dir
// given as a symbolic link is resolved first (ResolveDir), so the link's
// dataset is walked, not the link.
func files(dir string) ([]string, error) {
	dir = ResolveDir(dir)
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ondisk: %w", err)
	}
	return out, nil
}

// Warm reads every file under dir once, so that the next reads come from
// the page cache (as far as memory allows), and reports the read rate.
func Warm(ctx context.Context, dir string) (CacheStats, error) {
	paths, err := files(dir)
	if err != nil {
		return CacheStats{}, err
	}
	buf := make([]byte, 1<<20)
	st := CacheStats{}
	start := time.Now()
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("ondisk: warm %s: %w", dir, err)
		}
		f, err := OpenRegular(p)
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

// onlyReader hides os.File's WriterTo so CopyBuffer reads with our buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
