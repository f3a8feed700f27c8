package barrier

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The shared-memory barrier (Linux): one page of memory (memfd) mapped by
// the parent and every rank. A rank arrives by an atomic add; the last
// one of a step resets the count, advances the generation and wakes the
// others with one futex wake; the others sleep in futex wait on the
// generation. No process but the ranks runs in a step's critical path:
// one system call for the last rank, one wait and one wake-up each for
// the others. The parent watches the generation (Shared.Watch) to count
// steps and time out a rank that never arrives, and fails the barrier
// for every rank by setting the abort word and waking them.

// Shared is the parent's side of the shared-memory barrier.
type Shared struct {
	file *os.File
	mem  []byte
	n    int
	// waits and longest are Waits' (ns), written by Watch.
	waits, longest atomic.Int64
}

// NewShared makes a shared barrier for n ranks. File is to be given to
// every rank (exec.Cmd.ExtraFiles) and opened there with OpenShared.
func NewShared(n int) (*Shared, error) {
	if n <= 0 || n > MaxShared {
		return nil, fmt.Errorf("barrier: %d ranks: want 1 to %d", n, MaxShared)
	}
	fd, err := unix.MemfdCreate("headspace-barrier", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("barrier: memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "headspace-barrier")
	if err := f.Truncate(sharedSize); err != nil {
		f.Close()
		return nil, fmt.Errorf("barrier: memfd: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, sharedSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("barrier: mmap: %w", err)
	}
	return &Shared{file: f, mem: mem, n: n}, nil
}

// File is the memory to hand to the ranks.
func (s *Shared) File() *os.File { return s.file }

func word(mem []byte, i int) *uint32 { return (*uint32)(unsafe.Pointer(&mem[4*i])) }

// Steps is the number of steps released so far.
func (s *Shared) Steps() int { return int(atomic.LoadUint32(word(s.mem, wordGen))) }

// Abort fails the barrier for every rank: their Wait returns an error.
func (s *Shared) Abort() {
	atomic.StoreUint32(word(s.mem, wordAbort), 1)
	futexWake(word(s.mem, wordGen))
}

// Watch polls the barrier every interval until done is closed: a step
// that some ranks reached and others not within timeout of the first
// (as seen by the poll), or one of the first steps steps that no rank
// reached within timeout of the release before (of the watch's start
// for the first), aborts the barrier and Watch returns an error naming
// the ranks missing; nil when done is closed. onRelease is called (from
// Watch's goroutine) when it sees steps released.
func (s *Shared) Watch(done <-chan struct{}, steps int, timeout, interval time.Duration, onRelease func()) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	gen := s.Steps()
	var since time.Time
	idle := time.Now() // the release before, as seen by the poll
	for {
		select {
		case <-done:
			return nil
		case <-t.C:
		}
		g := s.Steps()
		if g != gen {
			if !since.IsZero() {
				w := time.Since(since)
				s.waits.Add(int64(w))
				if w > time.Duration(s.longest.Load()) {
					s.longest.Store(int64(w))
				}
			}
			gen, since, idle = g, time.Time{}, time.Now()
			if onRelease != nil {
				onRelease()
			}
			continue
		}
		if atomic.LoadUint32(word(s.mem, wordCount)) == 0 {
			since = time.Time{}
			if timeout > 0 && gen < steps && time.Since(idle) >= timeout {
				s.Abort()
				return idleError(gen, s.n, timeout)
			}
			continue
		}
		if since.IsZero() {
			since = time.Now()
			continue
		}
		if timeout > 0 && time.Since(since) >= timeout {
			var missing []string
			for r := range s.n {
				if atomic.LoadUint32(word(s.mem, wordRanks+r)) != uint32(gen)+1 {
					missing = append(missing, fmt.Sprint(r))
				}
			}
			s.Abort()
			return timeoutError(gen, missing, timeout)
		}
	}
}

// Waits are the waits at the barrier Watch saw, from a step's first
// arrival to its release as its polls see them: their sum, and the
// longest (a rank stalled while the others waited). Steps shorter than
// its poll are not seen.
func (s *Shared) Waits() (sum, longest time.Duration) {
	return time.Duration(s.waits.Load()), time.Duration(s.longest.Load())
}

// Close unmaps the memory and closes the file.
func (s *Shared) Close() error {
	err := unix.Munmap(s.mem)
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// SharedMember is a rank's side of the shared-memory barrier.
type SharedMember struct {
	mem     []byte
	n, rank int
}

// OpenShared maps the barrier's memory from f (the rank's copy of
// Shared.File) as rank of n.
func OpenShared(f *os.File, n, rank int) (*SharedMember, error) {
	if n <= 0 || n > MaxShared || rank < 0 || rank >= n {
		return nil, fmt.Errorf("barrier: rank %d of %d", rank, n)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, sharedSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("barrier: mmap: %w", err)
	}
	return &SharedMember{mem: mem, n: n, rank: rank}, nil
}

// waitSlice bounds one futex wait, so an abort set without a wake-up is
// seen soon.
const waitSlice = 100 * time.Millisecond

// Wait reaches the barrier and returns when every rank has reached it,
// or with an error once the parent has aborted the barrier.
func (m *SharedMember) Wait() error {
	gen := word(m.mem, wordGen)
	g := atomic.LoadUint32(gen)
	atomic.StoreUint32(word(m.mem, wordRanks+m.rank), g+1)
	if atomic.AddUint32(word(m.mem, wordCount), 1) == uint32(m.n) {
		atomic.StoreUint32(word(m.mem, wordCount), 0)
		atomic.AddUint32(gen, 1)
		futexWake(gen)
		return nil
	}
	for atomic.LoadUint32(gen) == g {
		if atomic.LoadUint32(word(m.mem, wordAbort)) != 0 {
			return fmt.Errorf("barrier: the parent stopped the node at step %d", g)
		}
		futexWait(gen, g, waitSlice)
	}
	return nil
}

// Close unmaps the memory.
func (m *SharedMember) Close() error { return unix.Munmap(m.mem) }

// The futex operations, without FUTEX_PRIVATE_FLAG: the word is shared
// between processes.
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

func futexWake(addr *uint32) {
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, uintptr(1<<30), 0, 0, 0)
}

// futexWait sleeps while *addr == val, at most d (or until a wake-up or a
// signal: the caller re-checks).
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}
