package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// ErrRefused marks the errors of Open and WriteFile that refuse a
// destination: a file that is not a results file, a results file of
// another setup, or one that another process is writing. Commands exit 2
// on it (a usage error), since nothing was measured yet. It is
// atomicfile.ErrRefused: one output policy for every file.
var ErrRefused = atomicfile.ErrRefused

// refused is an ErrRefused error: "results: " and the formatted message.
func refused(format string, args ...any) error {
	return atomicfile.Refusef("results: "+format, args...)
}

// writeLock is one writer's hold on a results file: an exclusive advisory
// lock (flock, LockFileEx on Windows) on ".<name>.lock" beside the file,
// which holds the writer's process id for the message a second writer
// gets. The system drops the lock when the process ends, however it ends;
// a lock file left behind by a killed writer is harmless and reused.
type writeLock struct {
	f    *os.File
	path string
}

// lockFor takes the write lock of target, or says which process holds it.
func lockFor(target string) (*writeLock, error) {
	path := filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".lock")
	f, err := openLock(path)
	if err != nil {
		return nil, refused("locking %s: %v", target, err)
	}
	if err := lockFile(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, errLocked) {
			pid := strings.TrimSpace(string(holder))
			if pid == "" {
				pid = "unknown"
			}
			return nil, refused("%s is being written by another run (process %s); one writer per results file: wait for it, or write to another --out", target, pid)
		}
		return nil, fmt.Errorf("results: locking %s: %w", target, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &writeLock{f: f, path: path}, nil
}

// release drops the lock and removes the lock file.
func (l *writeLock) release() error {
	if l == nil {
		return nil
	}
	os.Remove(l.path)
	return errors.Join(unlockFile(l.f), l.f.Close())
}
