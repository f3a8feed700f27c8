// Package atomicfile writes files so that a reader, or a run killed half
// way, sees either the old file or the complete new one, never a part: the
// data goes to a temporary file in the same directory, is synced, and is
// renamed onto the path. Every result, plot, animation and trace headspace
// writes goes through it (package results keeps its own copy, with hooks its
// tests use to inject failures).
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write calls write with a temporary file next to path and, if it
// succeeds, syncs the file and renames it onto path. On failure the
// temporary file is removed and path is untouched.
func Write(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	// CreateTemp makes files 0600; give the result ordinary permissions.
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// WriteTo writes w's output to path atomically.
func WriteTo(path string, w io.WriterTo) error {
	return Write(path, func(f io.Writer) error { _, err := w.WriteTo(f); return err })
}

// WriteBytes writes data to path atomically.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(f io.Writer) error { _, err := f.Write(data); return err })
}
