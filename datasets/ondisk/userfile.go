package ondisk

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig's formats
	_ "image/png"
	"io"
	"os"
)

// Bounds of the files of a dataset the user brings (ImageFolder,
// WebDataset shards): what openUserFile and checkUserImage accept.
const (
	// MaxUserFileBytes bounds one image file or one shard.
	MaxUserFileBytes = 64 << 30
	// MaxUserImageBytes bounds one encoded image (a file or a member).
	MaxUserImageBytes = 256 << 20
)

// openUserFile opens a file of a user's dataset for reading through
// OpenRegular, and only one of at most limit bytes. It is the one place
// the foreign readers (ImageFolder, WebDataset) open a user's file. Its
// errors read "path: reason".
func openUserFile(path string, limit int64) (*os.File, int64, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, rootErr(err))
	}
	fi, err := f.Stat() // a regular file: OpenRegular saw to it
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if fi.Size() > limit {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %d bytes, more than the %d a file may have", path, fi.Size(), limit)
	}
	return f, fi.Size(), nil
}

// errUnsupported is wrapped by checkUserImage's error for a file that is
// not a JPEG or a PNG.
var errUnsupported = errors.New("not a JPEG or PNG image")

// checkUserImage reads an encoded image's header (image.DecodeConfig,
// which reads no pixel data) and checks it before anything decodes it:
// JPEG or PNG, and at most MaxPixels (the guards' limit, guard.go). It returns the format ("jpeg"
// or "png") and the size.
func checkUserImage(r io.Reader) (format string, w, h int, err error) {
	cfg, format, err := image.DecodeConfig(bufio.NewReaderSize(r, 4096))
	if err != nil {
		if errors.Is(err, image.ErrFormat) {
			return "", 0, 0, errUnsupported
		}
		return "", 0, 0, fmt.Errorf("bad header: %w", err)
	}
	if format != "jpeg" && format != "png" {
		return "", 0, 0, fmt.Errorf("%s: %w", format, errUnsupported)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return "", 0, 0, fmt.Errorf("%s of %dx%d: more than %d pixels (or none)", format, cfg.Width, cfg.Height, MaxPixels)
	}
	return format, cfg.Width, cfg.Height, nil
}
