//go:build !unix

package atomicfile

import "os"

// openInPlace opens path for writing (appending to a regular file).
func openInPlace(path string) (*os.File, error) {
	flag := os.O_WRONLY
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		flag |= os.O_APPEND
	}
	return os.OpenFile(path, flag, 0)
}

// noReader: no system here reports a pipe without a reader on open.
func noReader(error) bool { return false }

func openReadNonblock(path string) (*os.File, error) { return os.Open(path) }

// openNeverBlocks: here an open may block, so OpenRegular looks first.
const openNeverBlocks = false
