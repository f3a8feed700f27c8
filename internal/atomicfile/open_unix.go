//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// openInPlace opens path for writing without blocking: O_NONBLOCK makes
// the open of a pipe with no reader fail (ENXIO) rather than wait, and
// leaves the file in Go's poller, whose deadlines stop a blocked write.
// A regular file is opened for appending.
func openInPlace(path string) (*os.File, error) {
	flag := os.O_WRONLY | syscall.O_NONBLOCK
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		flag = os.O_WRONLY | os.O_APPEND
	}
	return os.OpenFile(path, flag, 0)
}

// noReader says whether err is a pipe's "no reader yet".
func noReader(err error) bool { return errors.Is(err, syscall.ENXIO) }

// openReadNonblock opens path for reading so that, should it have been
// swapped for a pipe since it was checked, the open does not wait.
func openReadNonblock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// openNeverBlocks: openReadNonblock's O_NONBLOCK open returns at once
// even for a pipe, so OpenRegular checks the opened file alone.
const openNeverBlocks = true
