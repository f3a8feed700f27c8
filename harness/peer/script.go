package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/procgroup"
)

// ErrNotInstalled is wrapped by Peer.Check's error when the interpreter is
// missing or the script cannot import one of its modules.
var ErrNotInstalled = errors.New("the PyTorch peer is not installed")

// LevelsEnv is the environment variable a script finds the level table
// in, as `headspace levels --json` prints it (level.JSON).
const LevelsEnv = "HEADSPACE_LEVELS"

// Peer is the PyTorch peer: an interpreter and the script it runs.
type Peer struct {
	Python string // interpreter, e.g. /usr/bin/python3
	Script string // e.g. peers/torch/dataloader.py
	// Env is added to the script's environment (the boto3 peer's
	// AWS_ENDPOINT_URL and credentials); nil leaves ours as it is.
	Env []string
}

// Settings are the pipeline settings both sides run at.
type Settings struct {
	Width, Height int    // raw image size
	Crop          int    // side of the random crop
	Batch         int    // samples per batch
	Batches       int    // batches per run, at least 2: the first gives the time to first batch
	Seed          uint64 // dataset and transform seed
	// Data, if set, is a dataset on disk (headspace dataset write) that
	// both sides read: ours fetches and decodes it (Go's decoders), the
	// peer gets --data (PIL's). Width, Height and Seed must be its.
	Data string
	// Index, with Data, is the index (ondisk.SaveIndex) of a dataset the
	// user brings (ImageFolder, WebDataset): the peer reads the same
	// files by it, resized to Width×Height as ours are.
	Index string
	// Decoder is our side's JPEG decoder (ondisk.HostDecoders); the peer
	// always decodes with PIL.
	Decoder string
	// Bucket is how our side reads Data at an s3:// URL (its endpoint:
	// the link's URL), and Link the link's settings, recorded.
	Bucket bucket.Options
	Link   []resultfile.Config
	// ShardReads is how our side reads the members of shards in a
	// bucket (ondisk.ShardReadsRanged or ondisk.ShardReadsWhole).
	ShardReads string
}

// DefaultSettings is the document's pipeline, 1024×1024 raw images cropped
// to 256 in batches of 256, with 6 batches a run (the first for the time to
// first batch, five for the throughput) and seed 1.
func DefaultSettings() Settings {
	return Settings{Width: 1024, Height: 1024, Crop: 256, Batch: 256, Batches: 6, Seed: 1}
}

// Pipeline is our loader's configuration at these settings with impl
// ("naive" or "fast") transforms and the given workers: ladder's default
// (the document's pipeline, two batches prefetched) with the settings
// applied.
func (s Settings) Pipeline(impl string, workers int) loader.Config {
	c := loader.DefaultConfig()
	c.Dataset.Width, c.Dataset.Height, c.Dataset.Seed = s.Width, s.Height, s.Seed
	c.Transforms.Crop = s.Crop
	c.Impl, c.Batch, c.Workers = impl, s.Batch, workers
	c.Bucket, c.Link, c.ShardReads = s.Bucket, s.Link, s.ShardReads
	if s.Data != "" {
		// A manifest that cannot be read leaves Data set, for New's error.
		if d, err := c.WithData(s.Data); err == nil {
			c = d
			if s.Index != "" { // a foreign dataset, read at the settings' size
				c.Dataset.Width, c.Dataset.Height = s.Width, s.Height
			}
		}
		c.Data = s.Data
		c.Decoder = s.Decoder
	}
	return c
}

// Validate reports the first problem with s, as our loader would.
func (s Settings) Validate() error {
	if s.Batches < 2 {
		return fmt.Errorf("batches %d: want at least 2 (the first is the time to first batch)", s.Batches)
	}
	return s.Pipeline("fast", 1).Validate()
}

// Args is the script's argv (after the script's path) for these settings
// and worker counts.
func (s Settings) Args(workers []int) []string {
	args := s.args("--batches", s.Batches, joinInts(workers))
	if s.Data != "" {
		args = append(args, "--data", s.Data)
	}
	if s.Index != "" {
		args = append(args, "--index", s.Index)
	}
	return args
}

// args are the pipeline's arguments every script takes: sizes, batch, the
// run's length (count, by countFlag), workers and seed.
func (s Settings) args(countFlag string, count int, workers string) []string {
	return []string{
		"--raw-size", fmt.Sprintf("%dx%d", s.Width, s.Height),
		"--crop", strconv.Itoa(s.Crop),
		"--batch", strconv.Itoa(s.Batch),
		countFlag, strconv.Itoa(count),
		"--workers", workers,
		"--seed", strconv.FormatUint(s.Seed, 10),
	}
}

// Config lists the settings as results configuration lines: our side's
// pipeline's (loader.Config.Settings, a dataset on disk's included) and
// the batches a run.
func (s Settings) Config() []resultfile.Config {
	return append(s.Pipeline(transforms.Fast, 1).Settings(), resultfile.Config{Key: "batches", Value: strconv.Itoa(s.Batches)})
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// RunError is a run of the script that failed: it names the script and
// the worker counts it was asked for, and keeps the end of its stderr.
type RunError struct {
	Script  string
	Workers []int // nil for Check
	// What, if set, names the run instead of the worker counts.
	What   string
	Err    error
	Stderr string // the last few KiB of the script's stderr
}

func (e *RunError) Error() string {
	what := "--check"
	if e.What != "" {
		what = e.What
	} else if e.Workers != nil {
		what = "workers=" + joinInts(e.Workers)
	}
	msg := fmt.Sprintf("peer %s (%s): %v", e.Script, what, e.Err)
	if last := lastLine(e.Stderr); last != "" {
		msg += ": " + last
	}
	return msg
}

func (e *RunError) Unwrap() error { return e.Err }

// lastLine is the last non-blank line of s, trimmed: a Python traceback's
// last line is the exception.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// stderrKeep is how much of the script's stderr a RunError keeps.
const stderrKeep = 8 << 10

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// exec runs the script with args and returns its stdout. The script runs
// in its own process group; when ctx is cancelled the whole group is
// killed, the DataLoader's worker processes with it. If headspace itself is
// killed, the kernel kills the script (Pdeathsig, on Linux), and the
// DataLoader's workers exit when their parent goes (package procgroup).
func (p Peer) exec(ctx context.Context, workers []int, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, p.Python, append([]string{p.Script}, args...)...)
	cmd.SysProcAttr = procgroup.Group()
	cmd.Cancel = func() error { return procgroup.Kill(cmd.Process) }
	// Something in the group that survives and holds the pipes open must
	// not keep Run waiting.
	cmd.WaitDelay = 5 * time.Second
	var stdout bytes.Buffer
	stderr := &tail{max: stderrKeep}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	// Every script gets the level table in LevelsEnv: ladder.py takes its
	// levels from it, not from a copy.
	table, err := level.JSON()
	if err != nil {
		return nil, err
	}
	cmd.Env = append(append(os.Environ(), LevelsEnv+"="+string(table)), p.Env...)
	err = cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, &RunError{Script: p.Script, Workers: workers, Err: err, Stderr: string(stderr.buf)}
	}
	return stdout.Bytes(), nil
}

// Check runs the script with --check, which imports every module it needs
// and prints its configuration lines. A missing interpreter or module is an
// error wrapping ErrNotInstalled.
func (p Peer) Check(ctx context.Context) error {
	if _, err := exec.LookPath(p.Python); err != nil {
		return fmt.Errorf("%w: python %s: %v", ErrNotInstalled, p.Python, err)
	}
	if _, err := os.Stat(p.Script); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("peer script %s does not exist", p.Script)
		}
		return err
	}
	if _, err := p.exec(ctx, nil, "--check"); err != nil {
		var re *RunError
		if errors.As(err, &re) && strings.Contains(re.Stderr, "No module named") {
			return fmt.Errorf("%w: %s: %s", ErrNotInstalled, p.Python, lastLine(re.Stderr))
		}
		return err
	}
	return nil
}

// Run runs the script at settings s for the worker counts and returns what
// it printed: one Measurement per worker count, in order, and its
// configuration lines.
func (p Peer) Run(ctx context.Context, s Settings, workers []int) (Output, error) {
	if len(workers) == 0 {
		return Output{}, errors.New("peer: no worker counts")
	}
	out, err := p.exec(ctx, workers, s.Args(workers)...)
	if err != nil {
		return Output{}, err
	}
	o, err := Parse(bytes.NewReader(out), fmt.Sprintf("%s (workers=%s)", p.Script, joinInts(workers)))
	if err != nil {
		return Output{}, err
	}
	if len(o.Results) != len(workers) {
		return Output{}, fmt.Errorf("peer %s (workers=%s): printed %d results, want one per worker count",
			p.Script, joinInts(workers), len(o.Results))
	}
	for i, m := range o.Results {
		if m.Impl != Torch || m.Workers != workers[i] || m.Batches != s.Batches {
			return Output{}, fmt.Errorf("peer %s (workers=%s): result %d is %s with %d batches, want %s with %d",
				p.Script, joinInts(workers), i+1, m.BenchName(), m.Batches,
				Measurement{Impl: Torch, Workers: workers[i]}.BenchName(), s.Batches)
		}
	}
	return o, nil
}
