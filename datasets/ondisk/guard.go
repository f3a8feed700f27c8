package ondisk

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// The guards every reader of a dataset goes through, whatever its layout
// or format (this package's, and any other reader's): directories resolved
// once (ResolveDir), only regular files opened (OpenRegular), every read
// bounded (ReadBounded), and an image's size checked from its header
// before a byte is decoded: against the dataset's size (decodeStdlib), or
// against MaxPixels for a user's file (checkUserImage).

// Limits of what a reader takes from disk.
const (
	// MaxManifestBytes is the largest manifest read (a dataset of
	// MaxCount files has a manifest of about 1.5 GB; one of a million
	// samples, about 150 MB).
	MaxManifestBytes = 512 << 20
	// MaxPixels is the most pixels a sample may have: MaxSide².
	MaxPixels = MaxSide * MaxSide
	// MaxSampleBytes is the largest sample file or shard member read: a
	// raw MaxSide² RGB image, plus room for a PNG's overhead.
	MaxSampleBytes = 3*MaxPixels + 1<<20
)

// ErrCorrupt is wrapped by the errors of a dataset that cannot be read as
// it is: a manifest that does not parse or validate, a sample file that is
// missing, unreadable (no permission, not a regular file) or truncated, a
// sample of the wrong size, an image that does not decode or whose header
// says another size, a shard that is not a tar archive or was cut, an
// ImageFolder or WebDataset with no readable image. Commands exit 2 on it:
// the data the user pointed at is bad input (docs/guarantees.md, "Exit
// status"). Its message names the file (and the sample) and what is wrong.
var ErrCorrupt = errors.New("corrupt dataset")

// corrupt wraps err as ErrCorrupt, keeping its message.
func corrupt(err error) error { return corruptErr{err} }

type corruptErr struct{ err error }

func (c corruptErr) Error() string              { return c.err.Error() }
func (c corruptErr) Unwrap() error              { return c.err }
func (corruptErr) Is(target error) bool         { return target == ErrCorrupt }
func corruptf(format string, args ...any) error { return corrupt(fmt.Errorf(format, args...)) }

// ResolveDir returns dir with every symbolic link resolved (and cleaned).
// Readers call it once, at the top: a dataset given as a link reads,
// warms and evicts as its target does. A missing dir is returned as is.
func ResolveDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return filepath.Clean(dir)
}

// OpenRegular opens path for reading if it is a regular file (symbolic
// links followed); a named pipe, device, socket or directory is refused
// without being opened, with an error naming path.
func OpenRegular(path string) (*os.File, error) { return atomicfile.OpenRegular(path) }

// ReadBounded reads the regular file at path whole if it holds at most
// limit bytes; a larger one is an error, read no further than limit.
func ReadBounded(path string, limit int64) ([]byte, error) {
	return atomicfile.ReadFileLimit(path, limit)
}

// readAtMost reads exactly want bytes of f into buf (grown if needed),
// refusing want beyond MaxSampleBytes before allocating.
func readAtMost(f io.Reader, want int64, buf []byte) ([]byte, int, error) {
	if want < 0 || want > MaxSampleBytes {
		return buf[:0], 0, corruptf("%d bytes: more than a sample may hold (%d)", want, int64(MaxSampleBytes))
	}
	buf = grow(buf, want)
	n, err := io.ReadFull(f, buf)
	return buf, n, err
}
