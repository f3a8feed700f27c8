//go:build !unix

package atomicfile

import (
	"errors"
	"os"
)

// openLock opens (creating) a lock file, refusing a symbolic link or
// anything but a regular file in its place (O_NOFOLLOW's equivalent: the
// link is seen by Lstat, and a swap between Lstat and the open by
// comparing the opened file with it).
func openLock(path string) (*os.File, error) {
	before, err := os.Lstat(path)
	if err == nil && !before.Mode().IsRegular() {
		return nil, errors.New("the lock file is a symbolic link or not a regular file; refusing to follow it (remove it)")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	after, err := os.Lstat(path)
	fi, ferr := f.Stat()
	if err != nil || ferr != nil || !after.Mode().IsRegular() || !os.SameFile(fi, after) {
		f.Close()
		return nil, errors.New("the lock file changed while it was opened (remove it)")
	}
	return f, nil
}
