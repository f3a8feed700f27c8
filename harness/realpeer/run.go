package realpeer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/headspace-bench/headspace/internal/procgroup"
)

// ErrNotInstalled is wrapped by Probe's error when the interpreter is
// missing or the peer's script cannot import its packages.
var ErrNotInstalled = errors.New("not installed")

// Runner runs the peers' scripts: an interpreter and the folder they are
// in.
type Runner struct {
	Python string // the peers env's python (ci/peers-env.sh prints it)
	Dir    string // ScriptDir, or where the scripts are
	// RSSEvery is the period of the resident-memory sampler; 0 means
	// 20 ms.
	RSSEvery time.Duration
	// Env is added to the scripts' environment (a bucket's endpoint and
	// credentials); nil leaves ours as it is.
	Env []string
}

// Settings are the job every side does.
type Settings struct {
	Data    string // the ImageFolder, or its s3:// prefix for a bucket peer
	Crop    int
	Batch   int
	Batches int // at least 2: the first gives the time to first batch
	Seed    uint64
}

func (s Settings) args(workers int) []string {
	return []string{"--data", s.Data, "--crop", strconv.Itoa(s.Crop), "--batch", strconv.Itoa(s.Batch),
		"--batches", strconv.Itoa(s.Batches), "--workers", strconv.Itoa(workers), "--seed", strconv.FormatUint(s.Seed, 10)}
}

// stderrKeep is how much of a script's stderr an error keeps.
const stderrKeep = 8 << 10

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lastLine is the last non-blank line of s, trimmed (a traceback's last
// line is the exception), or "".
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// exec runs p's script with args in a process group of its own, killed
// as a group when ctx ends (and, on Linux, when headspace dies); it
// returns stdout and the group's peak resident memory (-1 where not
// measured). A failure names the peer and keeps the last line of stderr.
func (r Runner) exec(ctx context.Context, p Peer, args ...string) ([]byte, int64, error) {
	script := filepath.Join(r.Dir, p.Script)
	cmd := exec.CommandContext(ctx, r.Python, append(append([]string{script}, p.Args...), args...)...)
	cmd.SysProcAttr = procgroup.Group()
	cmd.Cancel = func() error { return procgroup.Kill(cmd.Process) }
	cmd.WaitDelay = time.Second
	// Python's own buffering must not hold the lines back from a killed run.
	cmd.Env = append(append(os.Environ(), "PYTHONUNBUFFERED=1"), r.Env...)
	var stdout bytes.Buffer
	stderr := &tail{max: stderrKeep}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		return nil, -1, fmt.Errorf("peer %s: %s %s: %w", p.Name, r.Python, script, err)
	}
	every := r.RSSEvery
	if every <= 0 {
		every = 20 * time.Millisecond
	}
	peak := make(chan int64, 1)
	stop := make(chan struct{})
	go func() { peak <- samplePeak(cmd.Process.Pid, every, stop) }()
	err := cmd.Wait()
	close(stop)
	rss := <-peak
	if err != nil {
		if ctx.Err() != nil {
			return nil, rss, fmt.Errorf("peer %s: %w", p.Name, ctx.Err())
		}
		msg := fmt.Sprintf("peer %s: %v", p.Name, err)
		if last := lastLine(string(stderr.buf)); last != "" {
			msg += ": " + last
		}
		return nil, rss, &RunError{Peer: p.Name, Msg: msg, Stderr: string(stderr.buf)}
	}
	return stdout.Bytes(), rss, nil
}

// RunError is a peer's script that failed: Msg is one line naming the
// peer and the script's last line of stderr, which Stderr keeps the end of.
type RunError struct {
	Peer, Msg, Stderr string
}

func (e *RunError) Error() string { return e.Msg }

// Probe runs p's script with --check, which imports everything it needs
// and prints its configuration lines (package versions, settings): it
// returns them. A missing interpreter or package wraps ErrNotInstalled.
func (r Runner) Probe(ctx context.Context, p Peer) (ScriptOutput, error) {
	if _, err := exec.LookPath(r.Python); err != nil {
		return ScriptOutput{}, fmt.Errorf("peer %s: %w: python %s: %v", p.Name, ErrNotInstalled, r.Python, err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, p.Script)); err != nil {
		return ScriptOutput{}, fmt.Errorf("peer %s: %w", p.Name, err)
	}
	out, _, err := r.exec(ctx, p, "--check")
	if err != nil {
		var re *RunError
		if errors.As(err, &re) && (strings.Contains(re.Stderr, "ModuleNotFoundError") || strings.Contains(re.Stderr, "ImportError") || strings.Contains(re.Stderr, "No module named")) {
			return ScriptOutput{}, fmt.Errorf("peer %s: %w in %s: %s", p.Name, ErrNotInstalled, r.Python, lastLine(re.Stderr))
		}
		return ScriptOutput{}, err
	}
	return ParseScript(bytes.NewReader(out), p.Name+" --check", true)
}

// Prepare runs p's script with --prepare and s's arguments: it writes
// p's own format from the images at s.Data (a peer without Prepare has
// nothing to do).
func (r Runner) Prepare(ctx context.Context, p Peer, s Settings) error {
	if !p.Prepare {
		return nil
	}
	if _, _, err := r.exec(ctx, p, append([]string{"--prepare"}, s.args(1)...)...); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// Run runs p once at workers and returns its measurement (Round unset).
func (r Runner) Run(ctx context.Context, p Peer, s Settings, workers int) (Measurement, error) {
	out, rss, err := r.exec(ctx, p, s.args(workers)...)
	if err != nil {
		return Measurement{}, err
	}
	o, err := ParseScript(bytes.NewReader(out), "peer "+p.Name, false)
	if err != nil {
		return Measurement{}, err
	}
	m := o.Run
	if m.Peer != p.Name || m.Workers != workers || m.Batches != s.Batches {
		return Measurement{}, fmt.Errorf("peer %s: printed %s with %d batches, want workers=%d and %d batches", p.Name, m.BenchName(), m.Batches, workers, s.Batches)
	}
	m.PeakRSS = rss
	return m, nil
}
