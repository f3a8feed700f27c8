//go:build !unix && !windows

package atomicfile

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked")

// lockFile takes no lock where the system offers none (js, wasip1, plan9):
// one writer per file is then the user's to keep.
func lockFile(f *os.File) error   { return nil }
func unlockFile(f *os.File) error { return nil }
