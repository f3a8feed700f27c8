package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Lock is one writer's hold on a target: an exclusive advisory lock
// (flock, LockFileEx on Windows) on ".<name>.lock" beside the target,
// which holds the writer's process id for the message a second writer
// gets. The system drops the lock when the process ends, however it ends;
// a lock file left behind by a killed writer is harmless and reused. The
// lock is per open file, so two holders in one process exclude each other
// too. It is the one writer lock of headspace: results files (package
// results) and the history store's machines (package history) take it.
type Lock struct {
	f    *os.File
	path string
}

// HeldError is TryLock's answer when another writer holds the lock.
type HeldError struct {
	Target string // what was to be locked
	PID    string // the holder's process id as its lock file says, or "unknown"
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is locked by another writer (process %s)", e.Target, e.PID)
}

// LockPath is the lock file of target: ".<name>.lock" beside it.
func LockPath(target string) string {
	return filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".lock")
}

// TryLock takes target's lock without waiting: a *HeldError when another
// writer holds it, an ErrRefused error when the lock file cannot be opened
// (a symbolic link or something other than a regular file in its place),
// and another error when the system's lock fails.
func TryLock(target string) (*Lock, error) {
	path := LockPath(target)
	// A holder removes the lock file as it releases: a lock taken on the
	// removed file is no lock, so take it again on the new one.
	for range 10 {
		f, err := openLock(path)
		if err != nil {
			return nil, Refusef("locking %s: %v", target, err)
		}
		if err := lockFile(f); err != nil {
			holder, _ := os.ReadFile(path)
			f.Close()
			if errors.Is(err, errLocked) {
				pid := strings.TrimSpace(string(holder))
				if pid == "" {
					pid = "unknown"
				}
				return nil, &HeldError{Target: target, PID: pid}
			}
			return nil, fmt.Errorf("locking %s: %w", target, err)
		}
		held, err := f.Stat()
		now, err2 := os.Lstat(path)
		if err != nil || err2 != nil || !os.SameFile(held, now) {
			unlockFile(f)
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return &Lock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("locking %s: its lock file keeps being replaced", target)
}

// lockPoll is how often WaitLock tries again.
const lockPoll = 20 * time.Millisecond

// WaitLock takes target's lock, waiting while another writer holds it
// until ctx ends (then ctx's error, naming the holder). Other errors are
// TryLock's.
func WaitLock(ctx context.Context, target string) (*Lock, error) {
	for {
		l, err := TryLock(target)
		var held *HeldError
		if !errors.As(err, &held) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s (process %s): %w", target, held.PID, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// Release drops the lock and removes the lock file. A nil Lock releases
// nothing.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	os.Remove(l.path)
	return errors.Join(unlockFile(l.f), l.f.Close())
}
