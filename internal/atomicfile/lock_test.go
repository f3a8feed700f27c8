package atomicfile

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestLockOneWriter: a second TryLock of a target is refused naming this
// process, WaitLock waits for the release, and a cancelled wait says so.
func TestLockOneWriter(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		t.Skip("no system lock here")
	}
	target := filepath.Join(t.TempDir(), "store")
	a, err := TryLock(target)
	if err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if _, err := TryLock(target); !errors.As(err, &held) || held.PID == "unknown" {
		t.Fatalf("second TryLock: %v, want a HeldError naming this process", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WaitLock(ctx, target); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitLock with a cancelled context: %v", err)
	}
	got := make(chan error)
	go func() {
		b, err := WaitLock(context.Background(), target)
		if err == nil {
			err = b.Release()
		}
		got <- err
	}()
	time.Sleep(3 * lockPoll) // the waiter is waiting (not a timing assertion)
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("WaitLock after the release: %v", err)
	}
}
