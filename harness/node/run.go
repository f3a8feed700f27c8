package node

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/barrier"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/internal/procgroup"
)

// DefaultTimeout is the barrier's default timeout: how long after the
// first rank reached a step the others may take to reach it, and how long
// after a release (or the ranks' start) the first may take.
const DefaultTimeout = 60 * time.Second

// Options is one run of a node: Ranks rank processes at one level.
type Options struct {
	// Exe is the binary to run, normally headspace's os.Executable().
	Exe string
	// Args are the arguments after the program name; nil means
	// []string{"rank"}, headspace's hidden rank subcommand.
	Args []string
	// Env is added to the parent's environment.
	Env []string
	// Ranks is the number of accelerators, one rank process each.
	Ranks int
	// Level is the caching level every rank trains at (level.None: the
	// pipeline; level.Host: a batch cached on the host, the bound).
	Level    level.Level
	Pipeline loader.Config
	Device   device.EmulatedConfig
	Steps    int // measured steps
	Warmup   int // steps before them
	// Timeout is the barrier's (DefaultTimeout when 0).
	Timeout time.Duration
	// Barrier is the barrier's mechanism: BarrierShared (shared memory
	// and a futex, Linux) or BarrierPipe (pipes to a coordinator in this
	// process, everywhere); "" is the shared one where it exists.
	Barrier string
}

// The barrier's mechanisms (package barrier).
const (
	BarrierShared = "shared"
	BarrierPipe   = "pipe"
)

// Outcome is what a node run measured.
type Outcome struct {
	// Ranks are the ranks' results, in rank order; empty when the run
	// failed.
	Ranks []RankResult
	// Released is the steps the barrier released, warm-up included, and
	// Elapsed the time from the start of the ranks to the last release:
	// what a failed run got through (--partial).
	Released int
	Elapsed  time.Duration
	// Skew is the time summed over steps from the first rank's arrival
	// at the barrier to the last one's.
	Skew time.Duration
	// Stall is the ranks' longest wait at the barrier at one step where
	// a rank stalled for less than the barrier's timeout (at least
	// minStall and stallRatio times their mean wait at the other steps);
	// 0 where none did.
	Stall time.Duration
	// RanksCPU is the rank processes' whole CPU time (user+sys), start-up
	// and warm-up included, as the system reports it once they are
	// reaped; 0 where it cannot.
	RanksCPU time.Duration
}

// rank is one rank process as the parent holds it.
type rank struct {
	id     int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File
	stderr *procloader.StderrHead
	exited chan struct{}
	result *RankResult
}

// Run starts o.Ranks rank processes, sends each its Spec, runs the
// barrier over them until each has sent its result, and returns the
// results. A rank that dies or hangs fails the run: the others are killed
// at once and the error names the rank; Outcome still says how many steps
// were released. Cancelling ctx kills every rank; Run returns once all
// have been reaped, with ctx's error.
func Run(ctx context.Context, o Options) (Outcome, error) {
	n, err := newNodeRun(o)
	if err != nil {
		return Outcome{}, err
	}
	// Every rank started is killed and reaped before Run returns.
	defer n.reap()
	if n.shared, err = openShared(o); err != nil {
		return Outcome{}, err
	}
	if n.shared != nil {
		defer n.shared.Close()
	}
	if err := n.startRanks(); err != nil {
		return Outcome{}, err
	}
	to := make([]io.Writer, len(n.ranks))
	for i, r := range n.ranks {
		to[i] = r.stdin
	}
	if n.c, err = barrier.New(to, n.timeout); err != nil {
		return Outcome{}, err
	}
	defer n.c.Stop()
	n.sendSpecs()
	if n.shared == nil {
		n.c.Watch(o.Warmup + o.Steps) // the shared barrier's Watch does
	}
	n.wait(ctx)
	return n.outcome(ctx)
}

// nodeRun is one Run under way: its rank processes, the barrier's
// coordinator and, where the ranks use it, the shared barrier.
type nodeRun struct {
	o       Options
	timeout time.Duration
	args    []string
	env     []string
	start   time.Time
	ranks   []*rank
	shared  *barrier.Shared
	c       *barrier.Coordinator
	reaped  sync.Once

	mu       sync.Mutex
	released time.Duration // since start, at the last release
}

// newNodeRun checks o and fills in its defaults.
func newNodeRun(o Options) (*nodeRun, error) {
	if o.Ranks <= 0 {
		return nil, fmt.Errorf("node: %d ranks: want at least 1", o.Ranks)
	}
	if o.Exe == "" {
		return nil, errors.New("node: no rank executable")
	}
	if o.Steps <= 0 || o.Warmup < 0 {
		return nil, fmt.Errorf("node: steps %d and warm-up %d: want a positive and a non-negative count", o.Steps, o.Warmup)
	}
	n := &nodeRun{o: o, timeout: cmp.Or(o.Timeout, DefaultTimeout), args: o.Args, env: append(os.Environ(), o.Env...), start: time.Now()}
	if n.args == nil {
		n.args = []string{"rank"}
	}
	n.ranks = make([]*rank, 0, o.Ranks)
	return n, nil
}

// openShared opens the shared barrier o asks for, nil where the pipes
// serve.
func openShared(o Options) (*barrier.Shared, error) {
	if o.Barrier == BarrierPipe {
		return nil, nil
	}
	shared, err := barrier.NewShared(o.Ranks)
	switch {
	case errors.Is(err, barrier.ErrNoShared) && o.Barrier == "":
		return nil, nil // the pipes serve
	case err != nil:
		return nil, fmt.Errorf("node: %w", err)
	}
	return shared, nil
}

// reap kills every rank started and waits for it, once.
func (n *nodeRun) reap() {
	n.reaped.Do(func() {
		for _, r := range n.ranks {
			_ = r.cmd.Process.Kill()
			r.stdin.Close()
		}
		for _, r := range n.ranks {
			<-r.exited
			r.stdout.Close()
		}
	})
}

// startRanks starts the rank processes, the shared barrier's file their
// fd 3 where there is one.
func (n *nodeRun) startRanks() error {
	var extra []*os.File
	if n.shared != nil {
		extra = []*os.File{n.shared.File()} // fd 3 in the rank
	}
	for i := range n.o.Ranks {
		r, err := startRank(i, n.o.Exe, n.args, n.env, extra)
		if err != nil {
			return fmt.Errorf("node: starting rank %d: %w", i, err)
		}
		n.ranks = append(n.ranks, r)
	}
	return nil
}

// sendSpecs sends each rank its Spec.
func (n *nodeRun) sendSpecs() {
	o := n.o
	for i, r := range n.ranks {
		s := Spec{Version: protocolVersion, Rank: i, Ranks: o.Ranks, Level: o.Level,
			Pipeline: rankPipeline(o.Pipeline, i), Device: o.Device, Steps: o.Steps, Warmup: o.Warmup}
		if n.shared != nil {
			s.Barrier = BarrierShared
		}
		// A write error means the rank died: its reader says how.
		_ = writeMessage(r.stdin, s)
	}
}

// onRelease notes the time of a release.
func (n *nodeRun) onRelease() {
	n.mu.Lock()
	n.released = time.Since(n.start)
	n.mu.Unlock()
}

// A stall is a step at which the ranks waited at the barrier, from the
// first arrival to the last, at least minStall and stallRatio times
// their mean wait at the other steps: a rank stalled (on its storage, or
// stopped) for less than the timeout while the others waited, which the
// run's figures would blame on the loader.
const (
	stallRatio = 10
	minStall   = time.Second
)

// stall is longest, the longest wait at the barrier of steps steps whose
// waits sum to sum, where it is a stall; 0 where it is not.
func stall(sum, longest time.Duration, steps int) time.Duration {
	if longest < minStall {
		return 0
	}
	if steps > 1 && longest < stallRatio*(sum-longest)/time.Duration(steps-1) {
		return 0
	}
	return longest
}

// wait reads every rank until each has sent its result, one fails or
// ctx ends, and then kills and reaps them all.
func (n *nodeRun) wait(ctx context.Context) {
	c := n.c
	var readers sync.WaitGroup
	for _, r := range n.ranks {
		readers.Go(func() {
			if err := read(r, c, n.onRelease); err != nil {
				c.Fail(err)
			}
		})
	}
	all := make(chan struct{})
	go func() { readers.Wait(); close(all) }()
	stopWatch := make(chan struct{})
	var watcher sync.WaitGroup
	if n.shared != nil {
		// The shared barrier's steps and timeout; c stays the one place
		// failures meet.
		watcher.Go(func() {
			if err := n.shared.Watch(stopWatch, n.o.Warmup+n.o.Steps, n.timeout, watchEvery, n.onRelease); err != nil {
				c.Fail(err)
			}
		})
	}
	select {
	case <-all:
	case <-c.Failed():
	case <-ctx.Done():
		c.Fail(ctx.Err())
	}
	close(stopWatch)
	watcher.Wait()
	if n.shared != nil && c.Err() != nil {
		n.shared.Abort()
	}
	for _, r := range n.ranks {
		_ = r.cmd.Process.Kill() // a finished rank has exited already
	}
	<-all
	n.reap()
}

// outcome is what the run, over and reaped, measured, and its error.
func (n *nodeRun) outcome(ctx context.Context) (Outcome, error) {
	c := n.c
	n.mu.Lock()
	out := Outcome{Released: c.Steps(), Elapsed: n.released, Skew: c.Skew(), Stall: stall(c.Skew(), c.Longest(), c.Steps())}
	if n.shared != nil {
		out.Released = n.shared.Steps()
		sum, longest := n.shared.Waits()
		out.Stall = stall(sum, longest, out.Released)
	}
	n.mu.Unlock()
	for _, r := range n.ranks {
		if st := r.cmd.ProcessState; st != nil {
			out.RanksCPU += st.UserTime() + st.SystemTime()
		}
	}
	if err := c.Err(); err != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return out, err
	}
	for _, r := range n.ranks {
		if r.result == nil {
			return out, fmt.Errorf("node: rank %d (pid %d) sent no result", r.id, r.cmd.Process.Pid)
		}
		out.Ranks = append(out.Ranks, *r.result)
	}
	return out, nil
}

// watchEvery is how often the parent looks at the shared barrier.
const watchEvery = 10 * time.Millisecond

// startRank starts one rank process with its stdout on a pipe the parent
// owns, so the process can be reaped while its output is read, and extra
// as its fds 3, ….
func startRank(id int, exe string, args, env []string, extra []*os.File) (*rank, error) {
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stdout = wr
	cmd.ExtraFiles = extra
	r := &rank{id: id, cmd: cmd, stdout: rd, stderr: &procloader.StderrHead{}, exited: make(chan struct{})}
	cmd.Stderr = r.stderr
	cmd.SysProcAttr = procgroup.Orphanless()
	if r.stdin, err = cmd.StdinPipe(); err != nil {
		rd.Close()
		wr.Close()
		return nil, err
	}
	err = cmd.Start()
	wr.Close() // the child has its copy: EOF on rd once it is gone
	if err != nil {
		rd.Close()
		r.stdin.Close()
		return nil, err
	}
	go func() {
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		close(r.exited)
	}()
	return r, nil
}

// read reads rank r's stdout: the barrier's arrivals, then its result.
// Its error is the rank's failure.
func read(r *rank, c *barrier.Coordinator, onRelease func()) error {
	br := bufio.NewReader(r.stdout)
	for {
		b, err := br.ReadByte()
		if err != nil {
			if r.result != nil && errors.Is(err, io.EOF) {
				return r.exitError()
			}
			return r.failure(err)
		}
		switch b {
		case barrier.Arrive:
			released, err := c.Arrive(r.id)
			if err != nil {
				return err
			}
			if released {
				onRelease()
			}
		case resultFrame:
			var res RankResult
			if err := readMessage(br, &res); err != nil {
				return r.failure(fmt.Errorf("reading its result: %w", err))
			}
			r.result = &res
		default:
			return r.failure(fmt.Errorf("it wrote %q, which is no message of the protocol", b))
		}
	}
}

// exitError is nil once a rank that sent its result has exited with
// status 0, else its failure.
func (r *rank) exitError() error {
	<-r.exited
	if st := r.cmd.ProcessState; st != nil && st.Success() {
		return nil
	}
	return r.failure(io.EOF)
}

// failure is rank r's death or protocol error as one message: the rank,
// its pid, how it ended and the first line of its stderr.
func (r *rank) failure(err error) error {
	what := procloader.Ended(r.cmd, r.exited, err)
	if what == "exited with status 0" {
		what += " before its result"
	}
	msg := fmt.Sprintf("node: rank %d (pid %d) %s", r.id, r.cmd.Process.Pid, what)
	if s := r.stderr.String(); s != "" {
		msg += ": " + s
	}
	return errors.New(msg)
}
