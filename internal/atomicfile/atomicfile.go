// Package atomicfile writes files so that a reader, or a run killed half
// way, sees either the old file or the complete new one, never a part: the
// data goes to a temporary file beside the target, is synced, and is
// renamed onto it. Every result, plot, animation, trace and report
// headspace writes goes through it.
//
// The target is what the path names in the end: a symbolic link is
// followed and its target written (the link stays a link), and a path
// that is not a regular file — a device node such as /dev/null, a named
// pipe — is written directly, with no temporary file or rename, since
// renaming onto it would replace the node. A temporary file is named after
// its target and the writing process, ".<name>.tmp-<pid>-<random>", and
// the next write to the same target removes those whose process is gone
// (left by a run that was killed). Errors name the target, never the
// temporary file.
//
// Check tells, before any work is done, whether a path can be written.
//
// policy.go holds headspace's one output policy on top of this: every
// output has a Kind, is stamped with it, and replaces only a file of its
// own kind (CheckKind before measuring, WriteKind to write); a partial
// run goes beside a complete file (PartialPath); pipes and devices are
// opened without blocking (OpenInPlace); and readers open only regular
// files, boundedly (OpenRegular, ReadFileLimit). docs/guarantees.md says
// what this guarantees for every file.
package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Test hooks.
var (
	syncFile = (*os.File).Sync
	rename   = os.Rename
)

// Target is the file a write to path lands in: path with its symbolic
// links followed (a dangling link gives the path it points to).
func Target(path string) (string, error) {
	t, _, err := resolve(path)
	return t, err
}

// resolve is Target, and whether the target is written in place: it is
// not a regular file, or a link on the way led through /dev or /proc
// (/dev/stdout is /proc/self/fd/1, which may name a regular file that a
// shell redirected to and holds open: a rename would orphan its writes).
func resolve(path string) (string, bool, error) {
	special := isSpecialDir(path)
	for range 40 {
		fi, err := os.Lstat(path)
		if err != nil {
			return path, special, nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, special || !fi.Mode().IsRegular() && !fi.IsDir(), nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", false, fmt.Errorf("%s: %w", path, err)
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
		special = special || isSpecialDir(path)
	}
	return "", false, fmt.Errorf("%s: too many symbolic links", path)
}

// isSpecialDir says whether path lies under /dev or /proc.
func isSpecialDir(path string) bool {
	p := filepath.ToSlash(filepath.Clean(path))
	return strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "/proc/")
}

// Check says why path could not be written, or nil: its directory must
// exist and take new files, and the target must not be a directory. Run it
// on every output path before measuring, so that a typo costs nothing.
func Check(path string) error {
	target, inPlace, err := resolve(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory, not a file to write", path)
	case inPlace:
		return nil // a device or pipe: written in place
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	dir := filepath.Dir(target)
	if di, err := os.Stat(dir); err != nil {
		return fmt.Errorf("cannot write %s: its directory %s does not exist", path, dir)
	} else if !di.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a directory", path, dir)
	}
	probe, err := os.CreateTemp(dir, tempPrefix(target))
	if err != nil {
		return fmt.Errorf("cannot write %s: its directory %s does not take new files (%v)", path, dir, pathErr(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// tempPrefix is the prefix of the temporary files of target.
func tempPrefix(target string) string {
	return "." + filepath.Base(target) + ".tmp-" + strconv.Itoa(os.Getpid()) + "-"
}

// pathErr is err without the *fs.PathError's path (a temporary file's).
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sweep removes the temporary files of target left by processes that
// are gone.
func sweep(target string) {
	dir := filepath.Dir(target)
	prefix := "." + filepath.Base(target) + ".tmp-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
}

// Write calls write with a temporary file beside path's target and, if it
// succeeds, syncs the file and renames it onto the target, keeping an
// existing file's permissions (0644 for a new one). On failure the
// temporary file is removed and the target is untouched. A target that is
// not a regular file is written directly (see the package comment).
func Write(path string, write func(io.Writer) error) (err error) {
	target, inPlace, err := resolve(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("writing %s: %w", path, pathErr(err))
		}
	}()
	if inPlace {
		return writeInPlace(path, write)
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(target); err == nil {
		if fi.IsDir() {
			return errors.New("it is a directory")
		}
		mode = fi.Mode().Perm()
	}
	sweep(target)
	f, err := os.CreateTemp(filepath.Dir(target), tempPrefix(target))
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
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = syncFile(f); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = rename(f.Name(), target); err != nil {
		return err
	}
	// Make the rename itself durable; not every file system can sync a
	// directory, and the new file is in place either way.
	if d, err := os.Open(filepath.Dir(target)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// writeInPlace writes a path that cannot be replaced by a rename (see
// resolve) in place, through OpenInPlace.
func writeInPlace(path string, write func(io.Writer) error) error {
	f, err := OpenInPlace(context.Background(), path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteBytes writes data to path atomically.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(f io.Writer) error { _, err := f.Write(data); return err })
}
