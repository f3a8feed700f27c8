// Package barrier is the all-reduce barrier of a node of emulated
// accelerators: N rank processes step in lockstep, and a step ends for all
// of them when the slowest has reached it, as PyTorch DDP's gradient
// all-reduce makes every rank wait for the slowest.
//
// # Mechanism
//
// The coordinator lives in the parent process, which started the ranks
// and holds a pipe to and from each. A rank that reaches the barrier
// writes one byte (Arrive) on its pipe to the parent and blocks reading
// one byte (Go) from its pipe from the parent. The parent's reader of
// each rank calls Coordinator.Arrive; the last arrival of a step writes Go
// to every rank. A step costs each rank one write and one read and the
// parent N reads and N writes of one byte: a few microseconds each, far
// below a training step (BenchmarkBarrier measures it at 8 ranks).
//
// Pipes rather than shared memory and a futex: they work on every system
// headspace builds for, they carry the rank's other messages (its result)
// on the same stream, and a rank that dies closes its end, so the parent
// learns of it at once, with no shared state left to distrust.
//
// # Faults
//
// A step whose first rank arrived more than the timeout ago while others
// have not fails the barrier with an error that names the ranks missing
// (a rank that hangs: a loader that never returns). So does a step that
// no rank has reached the timeout after the step before was released (or
// the watch began), until the steps watched are released: every rank
// hangs (a node of one rank, or all stalled together on the same
// storage), and the error names them all. Fail stops the
// barrier for every rank: the parent then kills the ranks, which is how a
// rank that dies stops the others.
package barrier

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// The bytes of the barrier's protocol, on the pipes between the ranks and
// the parent.
const (
	// Arrive is what a rank writes when it reaches the barrier.
	Arrive byte = 'A'
	// Go is what the parent writes to every rank when all have arrived.
	Go byte = 'G'
)

// Coordinator is the parent's side of the barrier over n ranks. Its
// methods are safe for concurrent use (one reader goroutine per rank
// calls Arrive).
type Coordinator struct {
	mu      sync.Mutex
	to      []io.Writer // to each rank
	arrived []bool      // this step
	count   int         // ranks arrived this step
	step    int         // the step the ranks are at, from 0
	timeout time.Duration
	timer   *time.Timer
	err     error // set once the barrier has failed
	failed  chan struct{}
	waits   time.Duration // summed over steps: from the first arrival to release
	longest time.Duration // the longest of them
	first   time.Time     // the step's first arrival
	// watch is the steps whose idle time is watched (Watch): until then,
	// a step no rank reaches within the timeout of since (the release
	// before, or the watch's start) fails the barrier.
	watch int
	since time.Time
}

// ErrTimeout is wrapped by the error of a step some rank did not reach
// within the timeout.
var ErrTimeout = errors.New("barrier timed out")

// New is a coordinator of len(to) ranks: to[r] reaches rank r. A step
// that some rank has not reached timeout after the first reached it fails
// the barrier (Err); 0 means no timeout.
func New(to []io.Writer, timeout time.Duration) (*Coordinator, error) {
	if len(to) == 0 {
		return nil, errors.New("barrier: no ranks")
	}
	if timeout < 0 {
		return nil, fmt.Errorf("barrier: timeout %v must not be negative", timeout)
	}
	c := &Coordinator{to: to, arrived: make([]bool, len(to)), timeout: timeout, failed: make(chan struct{})}
	c.timer = time.AfterFunc(time.Hour, c.expire) // armed by a step's first arrival
	c.timer.Stop()
	return c, nil
}

// Arrive records that rank r reached the barrier; the last rank of a
// step releases every rank, and its Arrive returns released true. An
// error means the barrier has failed or the rank arrived twice in one
// step (a protocol error); writing Go to a rank that has died is not an
// error here: its reader reports the death.
func (c *Coordinator) Arrive(r int) (released bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false, c.err
	}
	if r < 0 || r >= len(c.to) {
		return false, fmt.Errorf("barrier: rank %d of %d", r, len(c.to))
	}
	if c.arrived[r] {
		return false, fmt.Errorf("barrier: rank %d arrived twice at step %d", r, c.step)
	}
	c.arrived[r] = true
	c.count++
	if c.count == 1 {
		c.first = time.Now()
		if c.timeout > 0 {
			c.timer.Reset(c.timeout)
		}
	}
	if c.count < len(c.to) {
		return false, nil
	}
	c.timer.Stop()
	wait := time.Since(c.first)
	c.waits += wait
	c.longest = max(c.longest, wait)
	clear(c.arrived)
	c.count = 0
	c.step++
	if c.step < c.watch && c.timeout > 0 {
		c.since = time.Now()
		c.timer.Reset(c.timeout)
	}
	release := [1]byte{Go}
	for _, w := range c.to {
		_, _ = w.Write(release[:]) // a dead rank: its reader says so
	}
	return true, nil
}

// Watch watches the idle time of the barrier's first steps steps from
// now: a step that no rank reaches within the timeout of the release
// before (of now for the next) fails the barrier, naming every rank. The
// pipe barrier's ranks arrive here; the shared barrier's are watched by
// Shared.Watch.
func (c *Coordinator) Watch(steps int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch, c.since = steps, time.Now()
	if c.timeout > 0 && c.count == 0 && c.step < steps && c.err == nil {
		c.timer.Reset(c.timeout)
	}
}

// expire fails the barrier if the step armed is still waiting.
func (c *Coordinator) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	if c.count == 0 {
		if c.step < c.watch && time.Since(c.since) >= c.timeout {
			c.failLocked(idleError(c.step, len(c.to), c.timeout))
		}
		return // released meanwhile, or re-armed for a later step
	}
	if time.Since(c.first) < c.timeout {
		return // re-armed for a later step
	}
	var missing []string
	for r, ok := range c.arrived {
		if !ok {
			missing = append(missing, fmt.Sprint(r))
		}
	}
	c.failLocked(timeoutError(c.step, missing, c.timeout))
}

// timeoutError is the failure of step, which the ranks missing did not
// reach within timeout of the first arrival.
func timeoutError(step int, missing []string, timeout time.Duration) error {
	return fmt.Errorf("%w: step %d: rank %s did not reach the all-reduce barrier within %v of the first",
		ErrTimeout, step, strings.Join(missing, ", rank "), timeout)
}

// idleError is the failure of step, which none of the n ranks reached
// within timeout of the release before (of the start for the first).
func idleError(step, n int, timeout time.Duration) error {
	ranks := make([]string, n)
	for r := range n {
		ranks[r] = fmt.Sprint(r)
	}
	since := "the step before's release"
	if step == 0 {
		since = "the start"
	}
	return fmt.Errorf("%w: step %d: no rank reached the all-reduce barrier within %v of %s: rank %s hung (a node of one rank, or every rank stalled together)",
		ErrTimeout, step, timeout, since, strings.Join(ranks, ", rank "))
}

// Fail stops the barrier with err (a rank died): Err returns it and every
// later Arrive fails. The first failure is kept.
func (c *Coordinator) Fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err)
}

func (c *Coordinator) failLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	c.timer.Stop()
	close(c.failed)
}

// Failed is closed when the barrier fails (Fail or a timeout).
func (c *Coordinator) Failed() <-chan struct{} { return c.failed }

// Err is the barrier's failure, nil while it holds.
func (c *Coordinator) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Steps is the number of steps released so far.
func (c *Coordinator) Steps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.step
}

// Skew is the time summed over released steps from a step's first
// arrival to its last: how long the fastest rank waited for the slowest.
func (c *Coordinator) Skew() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}

// Longest is the longest time of a released step from its first arrival
// to its last (a rank stalled while the others waited).
func (c *Coordinator) Longest() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.longest
}

// Stop stops the timeout's timer; the coordinator keeps its counts.
func (c *Coordinator) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer.Stop()
}

// Member is a rank's side of the barrier: it writes Arrive to the parent
// and reads Go back.
type Member struct {
	to   io.Writer
	from io.ByteReader
	buf  [1]byte
}

// NewMember is the barrier as rank sees it: to reaches the parent, from
// comes from it.
func NewMember(to io.Writer, from io.ByteReader) *Member { return &Member{to: to, from: from} }

// Wait reaches the barrier and returns when every rank has reached it. It
// fails when the parent has gone (EOF) or wrote something else than Go.
func (m *Member) Wait() error {
	m.buf[0] = Arrive
	if _, err := m.to.Write(m.buf[:]); err != nil {
		return fmt.Errorf("barrier: telling the parent: %w", err)
	}
	b, err := m.from.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("barrier: the parent has gone")
		}
		return fmt.Errorf("barrier: waiting for the parent: %w", err)
	}
	if b != Go {
		return fmt.Errorf("barrier: the parent sent %q, want %q", b, Go)
	}
	return nil
}
