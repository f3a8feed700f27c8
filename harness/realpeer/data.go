package realpeer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
)

// Folder is the ImageFolder a comparison reads.
type Folder struct {
	Dir    string // the ImageFolder: class-NN/<key>.jpg
	Images int
	Bytes  int64 // the JPEGs' bytes
	work   string
}

// WriteFolder writes src's images as JPEGs of quality once (headspace's
// dataset writer, one file per image) under a new temporary directory
// and links them into an ImageFolder there (class-NN folders by the
// manifest's labels). Close removes it all.
func WriteFolder(ctx context.Context, src datasets.Synthetic, quality int) (_ *Folder, err error) {
	work, err := os.MkdirTemp("", "headspace-realpeer-")
	if err != nil {
		return nil, err
	}
	f := &Folder{Dir: filepath.Join(work, "imagefolder"), Images: src.N, work: work}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	files, err := ondisk.Write(ctx, filepath.Join(work, "files"), src, ondisk.WriteOptions{Format: "jpeg", Quality: quality, Layout: "files"})
	if err != nil {
		return nil, fmt.Errorf("peers: write the images: %w", err)
	}
	for i, file := range files.Files {
		dst := filepath.Join(f.Dir, fmt.Sprintf("class-%02d", files.Labels[i]), filepath.Base(filepath.FromSlash(file.Name)))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.Link(filepath.Join(work, "files", filepath.FromSlash(file.Name)), dst); err != nil {
			return nil, fmt.Errorf("peers: imagefolder: %w", err)
		}
		f.Bytes += file.Size
	}
	return f, nil
}

// Close removes the folder.
func (f *Folder) Close() error { return os.RemoveAll(f.work) }
