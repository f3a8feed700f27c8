package procloader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/internal/procgroup"
)

// Options says how to start a worker process.
type Options struct {
	// Exe is the binary to run, normally os.Executable() of headspace.
	Exe string
	// Args are the arguments after the program name; nil means
	// []string{"worker"}, headspace's hidden worker subcommand.
	Args []string
	// Env is added to the parent's environment.
	Env []string
}

// exitWait is how long a worker whose output ended may take to exit before
// it is killed, so that its exit status can be reported.
const exitWait = 2 * time.Second

// Loader is a process-based loader, PyTorch DataLoader's model: Workers
// processes each build whole batches; batch k is computed by worker k mod
// Workers; each worker has at most Prefetch batches requested and not yet
// delivered. It delivers batches in index order and implements
// batching.Loader. Next is not safe for concurrent use (neither is the
// goroutine loader's consumer side).
type Loader struct {
	n, prefetch int
	workers     []*worker
	pool        *batching.Pool
	results     chan result
	done        chan struct{} // closed by Close
	readers     sync.WaitGroup
	ctx         context.Context // New's: cancelling it kills the workers
	stopCtx     func() bool

	ready map[int]*batching.Batch
	next  int // the next batch Next returns
	sent  int // batches requested so far
	err   error

	failErr error // the first worker failure, for batch failAt
	failAt  int

	closeOnce sync.Once
}

var _ batching.Loader = (*Loader)(nil)

// worker is one child process.
type worker struct {
	id     int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File // the parent's read end
	stderr *StderrHead
	exited chan struct{} // closed once cmd.Wait has returned
}

type result struct {
	k   int
	b   *batching.Batch
	err error
}

// NewWithOptions starts cfg.Workers worker processes as opt says, sends each
// the pipeline's configuration, and requests the first Prefetch batches of
// each. Cancelling ctx kills every worker; Close must still be called.
// cfg.Recorder is not supported (workers run in other processes), nor is
// placement device: the wire protocol carries float32 batches.
func NewWithOptions(ctx context.Context, cfg loader.Config, n int, opt Options) (*Loader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Placement != loader.Host {
		return nil, fmt.Errorf("procloader: placement %s: process workers ship float32 batches only", cfg.Placement)
	}
	if cfg.DecodesCrop() {
		return nil, errors.New("procloader: --decode-crop on is the goroutine loader's: process workers decode whole images")
	}
	if n <= 0 {
		return nil, fmt.Errorf("number of batches %d must be positive", n)
	}
	if opt.Exe == "" {
		return nil, errors.New("procloader: no worker executable")
	}
	if err := cfg.PreparePageCache(ctx); err != nil {
		return nil, err
	}
	args := opt.Args
	if args == nil {
		args = []string{"worker"}
	}
	pool, err := batching.NewPool(cfg.Batch, cfg.Transforms.OutLen())
	if err != nil {
		return nil, err
	}
	prefetch := cfg.Prefetch
	if prefetch == 0 {
		prefetch = 2
	}
	W := cfg.Workers
	l := &Loader{
		n: n, prefetch: prefetch, pool: pool, ctx: ctx,
		results: make(chan result, W*(prefetch+1)),
		done:    make(chan struct{}),
		ready:   map[int]*batching.Batch{},
	}
	env := append(os.Environ(), opt.Env...)
	for i := range W {
		w, err := start(i, opt.Exe, args, env)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("procloader: starting worker %d: %w", i, err)
		}
		l.workers = append(l.workers, w)
		// A write error means the worker died: its reader reports how.
		_ = writeSpec(w.stdin, newSpec(cfg, i))
	}
	l.stopCtx = context.AfterFunc(ctx, l.kill)
	for _, w := range l.workers {
		l.readers.Add(1)
		go l.read(ctx, w)
	}
	for range min(n, prefetch*W) {
		l.request()
	}
	return l, nil
}

// start starts one worker process, with its stdout on a pipe the parent
// owns, so the process can be reaped (cmd.Wait) while its output is read.
func start(id int, exe string, args, env []string) (*worker, error) {
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stdout = wr
	w := &worker{id: id, cmd: cmd, stdout: r, stderr: &StderrHead{}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	// On Linux the child is killed if the parent dies.
	cmd.SysProcAttr = procgroup.Orphanless()
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		r.Close()
		wr.Close()
		return nil, err
	}
	err = cmd.Start()
	wr.Close() // the child has its copy: EOF on r once the child is gone
	if err != nil {
		r.Close()
		return nil, err
	}
	growPipe(r)
	go func() {
		_ = cmd.Wait() // the exit status is read from cmd.ProcessState
		close(w.exited)
	}()
	return w, nil
}

// request sends the next batch index to its worker.
func (l *Loader) request() {
	if l.sent >= l.n {
		return
	}
	w := l.workers[l.sent%len(l.workers)]
	// A write error means the worker died: its reader reports how.
	_ = writeRequest(w.stdin, l.sent)
	l.sent++
}

// read receives worker w's batches, w.id, w.id+W, …, in that order.
func (l *Loader) read(ctx context.Context, w *worker) {
	defer l.readers.Done()
	for k := w.id; k < l.n; k += len(l.workers) {
		b, err := l.readBatch(w, k)
		if err != nil {
			if l.stopped(ctx) {
				return
			}
			err = l.workerError(w, k, err)
		}
		select {
		case l.results <- result{k: k, b: b, err: err}:
		case <-l.done:
			if b != nil {
				l.pool.Put(b)
			}
			return
		}
		if err != nil {
			return
		}
	}
}

func (l *Loader) stopped(ctx context.Context) bool {
	select {
	case <-l.done:
		return true
	default:
		return ctx.Err() != nil
	}
}

func (l *Loader) readBatch(w *worker, k int) (*batching.Batch, error) {
	h, err := readHeader(w.stdout)
	if err != nil {
		return nil, err
	}
	b := l.pool.Get()
	if h.index != k || h.size != b.Size || h.sampleLen != b.SampleLen || h.payload != payloadLen(b.Size, b.SampleLen) {
		l.pool.Put(b)
		return nil, fmt.Errorf("%w: batch %d of %d×%d values (%d bytes), want batch %d of %d×%d",
			errBadHeader, h.index, h.size, h.sampleLen, h.payload, k, b.Size, b.SampleLen)
	}
	if err := readPayload(w.stdout, b); err != nil {
		l.pool.Put(b)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	b.Index = k
	return b, nil
}

// Ended says how a child process of this binary ended, after err ended
// its output: err itself when it is no end of the output; else, after
// waiting up to exitWait for the child to exit (and killing it if it has
// not), "output ended", "exited with status N" or the signal
// ("signal: killed"). exited is closed once cmd has been waited for.
// The workers here and the node's ranks (package node) both end so.
func Ended(cmd *exec.Cmd, exited <-chan struct{}, err error) string {
	eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if eof {
		select {
		case <-exited:
		case <-time.After(exitWait):
		}
	}
	_ = cmd.Process.Kill()
	<-exited
	switch st := cmd.ProcessState; {
	case !eof:
		return err.Error()
	case st == nil:
		return "output ended"
	case st.Success():
		return "exited with status 0"
	case st.ExitCode() >= 0:
		return fmt.Sprintf("exited with status %d", st.ExitCode())
	default:
		return st.String() // "signal: killed"
	}
}

// workerError describes how worker w failed while producing batch k. It
// waits for the worker to exit (killing it if it does not) to report its
// exit status.
func (l *Loader) workerError(w *worker, k int, err error) error {
	what := Ended(w.cmd, w.exited, err)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		what += " mid-batch"
	}
	msg := fmt.Sprintf("worker %d (pid %d): %s while producing batch %d", w.id, w.cmd.Process.Pid, what, k)
	if t := w.stderr.String(); t != "" {
		msg += ": " + t
	}
	eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if st := w.cmd.ProcessState; eof && st != nil && st.ExitCode() == exitBadInput {
		return badDataErr{msg}
	}
	return errors.New(msg)
}

// exitBadInput is the worker command's exit status for bad input
// (docs/guarantees.md, "Exit status"). The parent checked the
// configuration it sent, so in a worker it means bad data: a sample
// file that cannot be read or decoded.
const exitBadInput = 2

// badDataErr is a worker's failure on bad data: it is ondisk.ErrCorrupt,
// as the same failure in the goroutine loader is, so the command exits
// with the same status in both modes.
type badDataErr struct{ msg string }

func (e badDataErr) Error() string      { return e.msg }
func (badDataErr) Is(target error) bool { return target == ondisk.ErrCorrupt }

// errClosed is Next's error once the loader is closed.
var errClosed = errors.New("procloader: loader closed")

// Next implements batching.Loader.
func (l *Loader) Next(ctx context.Context) (*batching.Batch, error) {
	if l.err != nil {
		return nil, l.err
	}
	if l.next >= l.n {
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-l.done:
		// Closed: a result a worker sent before Close may still wait in
		// l.results, which the loop below would otherwise hand out.
		l.err = errClosed
		return nil, l.err
	default:
	}
	for {
		if b, ok := l.ready[l.next]; ok {
			delete(l.ready, l.next)
			l.next++
			l.request()
			return b, nil
		}
		if l.failErr != nil && l.failAt <= l.next {
			l.err = l.failErr
			return nil, l.err
		}
		select {
		case r := <-l.results:
			if r.err != nil {
				// Batches before the failed one still come from the
				// other workers; the error is the failed batch's.
				if l.failErr == nil || r.k < l.failAt {
					l.failErr, l.failAt = r.err, r.k
				}
				continue
			}
			l.ready[r.k] = r.b
		case <-l.done:
			l.err = errClosed
			return nil, l.err
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.ctx.Done():
			return nil, l.ctx.Err()
		}
	}
}

// Release implements batching.Loader.
func (l *Loader) Release(b *batching.Batch) { l.pool.Put(b) }

// kill kills every worker; it does not wait for them.
func (l *Loader) kill() {
	for _, w := range l.workers {
		_ = w.cmd.Process.Kill()
	}
}

// Close implements batching.Loader: it kills every worker and reaps it, so
// no child outlives the loader, orphan or zombie.
func (l *Loader) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		if l.stopCtx != nil {
			l.stopCtx()
		}
		for _, w := range l.workers {
			w.stdin.Close()
		}
		l.kill()
		for _, w := range l.workers {
			<-w.exited
		}
		l.readers.Wait()
		for _, w := range l.workers {
			w.stdout.Close()
		}
		for k, b := range l.ready {
			l.pool.Put(b)
			delete(l.ready, k)
		}
	})
	return nil
}

// PIDs returns the worker processes' ids, by worker number.
func (l *Loader) PIDs() []int {
	pids := make([]int, len(l.workers))
	for i, w := range l.workers {
		pids[i] = w.cmd.Process.Pid
	}
	return pids
}

// ChildCPU is the user and system CPU time of the workers that have been
// reaped: all of them after Close.
func (l *Loader) ChildCPU() time.Duration {
	var d time.Duration
	for _, w := range l.workers {
		select {
		case <-w.exited:
			if st := w.cmd.ProcessState; st != nil {
				d += st.UserTime() + st.SystemTime()
			}
		default:
		}
	}
	return d
}

// Allocated is the number of batch buffers the parent has made.
func (l *Loader) Allocated() int { return l.pool.Allocated() }
