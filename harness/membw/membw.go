// Package membw measures the memory copy bandwidth of this machine's
// cores, the way STREAM's Copy kernel does: each of n goroutines copies a
// buffer larger than the last-level cache into another, over and over, and
// the bandwidth counts every byte read and every byte written. It is the
// limit a loader whose samples move B bytes each through memory cannot
// pass: bandwidth ÷ B samples a second.
package membw

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is one measurement.
type Config struct {
	Workers int   // goroutines, each with its own two buffers
	Buffer  int64 // bytes of each buffer; 0: BufferSize()
	Reps    int   // copies a goroutine makes in a trial; 0: 8
	Trials  int   // trials, the best kept (as STREAM does); 0: 3
}

// Result is a measurement: the best trial's bytes read and written a
// second over every goroutine.
type Result struct {
	Config
	BytesPerSec float64
}

// MinBuffer is the least buffer BufferSize gives, and MaxBuffer the most.
const (
	MinBuffer = 32 << 20
	MaxBuffer = 256 << 20
)

// BufferSize is four times the last-level cache that sysfs reports (the
// largest cpu0 cache), at least MinBuffer and at most MaxBuffer, so no
// trial is served from the cache.
func BufferSize() int64 {
	var llc int64
	for i := 0; i < 8; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/size", i))
		if err != nil {
			break
		}
		if n, ok := parseSize(strings.TrimSpace(string(b))); ok && n > llc {
			llc = n
		}
	}
	return min(max(4*llc, MinBuffer), MaxBuffer)
}

// parseSize reads sysfs's cache size: "512K", "32768K", "16M".
func parseSize(s string) (int64, bool) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n * mult, true
}

// Copy measures c: Trials trials, each Workers goroutines copying their
// buffer Reps times at once, timed from the first start to the last end;
// the best trial's (2 × Buffer × Reps × Workers) ÷ time.
func Copy(ctx context.Context, c Config) (Result, error) {
	if c.Buffer == 0 {
		c.Buffer = BufferSize()
	}
	if c.Reps == 0 {
		c.Reps = 8
	}
	if c.Trials == 0 {
		c.Trials = 3
	}
	if c.Workers < 1 || c.Buffer < 1 || c.Reps < 1 || c.Trials < 1 {
		return Result{Config: c}, fmt.Errorf("copy bandwidth: workers %d, buffer %d B, reps %d, trials %d: all must be positive", c.Workers, c.Buffer, c.Reps, c.Trials)
	}
	bufs := make([][2][]byte, c.Workers)
	for i := range bufs {
		if err := ctx.Err(); err != nil {
			return Result{Config: c}, err
		}
		bufs[i] = [2][]byte{make([]byte, c.Buffer), make([]byte, c.Buffer)}
		fill(bufs[i][0])
		copy(bufs[i][1], bufs[i][0]) // every page touched: no first-touch faults in the trials
	}
	best := time.Duration(0)
	for range c.Trials {
		if err := ctx.Err(); err != nil {
			return Result{Config: c}, err
		}
		var wg sync.WaitGroup
		start := time.Now()
		for i := range bufs {
			wg.Add(1)
			go func(b [2][]byte) {
				defer wg.Done()
				for range c.Reps {
					copy(b[1], b[0])
				}
			}(bufs[i])
		}
		wg.Wait()
		if d := time.Since(start); best == 0 || d < best {
			best = d
		}
	}
	if best <= 0 {
		return Result{Config: c}, errors.New("copy bandwidth: a trial took no time")
	}
	moved := 2 * float64(c.Buffer) * float64(c.Reps) * float64(c.Workers)
	return Result{Config: c, BytesPerSec: moved / best.Seconds()}, nil
}

// fill writes b with a pattern that is not all zeros, touching every page:
// its first bytes one by one, then doubling them.
func fill(b []byte) {
	n := min(len(b), 4096)
	for j := range n {
		b[j] = byte(j*7 + 1)
	}
	for n < len(b) {
		n += copy(b[n:], b[:n])
	}
}
