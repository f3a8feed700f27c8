//go:build !linux

package barrier

import (
	"os"
	"time"
)

// Shared is the parent's side of the shared-memory barrier, which exists
// on Linux only: NewShared returns ErrNoShared here.
type Shared struct{}

// NewShared returns ErrNoShared outside Linux.
func NewShared(int) (*Shared, error) { return nil, ErrNoShared }

// File is nil outside Linux.
func (*Shared) File() *os.File { return nil }

// Steps is 0 outside Linux.
func (*Shared) Steps() int { return 0 }

// Abort does nothing outside Linux.
func (*Shared) Abort() {}

// Watch returns when done is closed.
func (*Shared) Watch(done <-chan struct{}, _ int, _, _ time.Duration, _ func()) error {
	<-done
	return nil
}

// Waits are 0 outside Linux.
func (*Shared) Waits() (sum, longest time.Duration) { return 0, 0 }

// Close does nothing outside Linux.
func (*Shared) Close() error { return nil }

// SharedMember is a rank's side of the shared-memory barrier (Linux).
type SharedMember struct{}

// OpenShared returns ErrNoShared outside Linux.
func OpenShared(*os.File, int, int) (*SharedMember, error) { return nil, ErrNoShared }

// Wait returns ErrNoShared outside Linux.
func (*SharedMember) Wait() error { return ErrNoShared }

// Close does nothing outside Linux.
func (*SharedMember) Close() error { return nil }
