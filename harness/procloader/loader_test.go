package procloader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
)

// The test binary is its own worker: with workerEnv set, TestMain serves
// as a worker instead of running the tests. crashEnv ("exit:K",
// "partial:K" or "garbage:K") makes the worker asked for batch K fail.
const (
	workerEnv = "HEADSPACE_PROCLOADER_WORKER"
	crashEnv  = "HEADSPACE_PROCLOADER_CRASH"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if c := os.Getenv(crashEnv); c != "" {
			mode, ks, _ := strings.Cut(c, ":")
			k, _ := strconv.Atoi(ks)
			beforeBatch = func(j int, out io.Writer) {
				if j != k {
					return
				}
				switch mode {
				case "exit":
					fmt.Fprintln(os.Stderr, "injected crash")
					os.Exit(2)
				case "partial":
					// A good header, then half the payload.
					var buf bytes.Buffer
					b := &batching.Batch{Index: j, Size: 4, SampleLen: 3 * 8 * 8, Data: make([]float32, 4*3*8*8), Labels: make([]int32, 4)}
					_ = writeBatch(&buf, b)
					_, _ = out.Write(buf.Bytes()[:buf.Len()/2])
					os.Exit(3)
				case "panic":
					panic("injected panic")
				case "garbage":
					_, _ = out.Write(make([]byte, headerLen))
					time.Sleep(time.Minute) // the parent must kill it
				}
			}
		}
		if err := ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// small is a pipeline small enough for -race: 32×24 raw, crop 8, batch 4.
func small(impl string, workers int) loader.Config {
	return loader.Config{
		Dataset:    datasets.Synthetic{Width: 32, Height: 24, Classes: 10, N: 50, Seed: 3},
		Transforms: transforms.Config{Crop: 8, MaskRatio: 0.25},
		Impl:       impl,
		Batch:      4,
		Workers:    workers,
		Prefetch:   2,
	}
}

// testOptions runs this test binary as the worker.
func testOptions(env ...string) Options {
	return Options{Exe: os.Args[0], Args: []string{"-test.run=^$"}, Env: append([]string{workerEnv + "=1"}, env...)}
}

func TestSameBatchesAsGoroutineLoader(t *testing.T) {
	ctx := context.Background()
	const n = 15 // 60 samples: wraps around the 50 of the dataset
	for _, impl := range transforms.Names {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/workers=%d", impl, workers), func(t *testing.T) {
				cfg := small(impl, workers)
				want, err := loader.New(ctx, level.None, cfg, n)
				if err != nil {
					t.Fatal(err)
				}
				defer want.Close()
				got, err := NewWithOptions(ctx, cfg, n, testOptions())
				if err != nil {
					t.Fatal(err)
				}
				defer got.Close()
				for k := range n {
					g, err := got.Next(ctx)
					if err != nil {
						t.Fatalf("process loader, batch %d: %v", k, err)
					}
					w, err := want.Next(ctx)
					if err != nil {
						t.Fatalf("goroutine loader, batch %d: %v", k, err)
					}
					if g.Index != k || w.Index != k {
						t.Fatalf("batch %d: indices %d (process), %d (goroutine)", k, g.Index, w.Index)
					}
					for i := range w.Data {
						if math.Float32bits(g.Data[i]) != math.Float32bits(w.Data[i]) {
							t.Fatalf("batch %d value %d: %v (process), %v (goroutine)", k, i, g.Data[i], w.Data[i])
						}
					}
					for j := range w.Labels {
						if g.Labels[j] != w.Labels[j] {
							t.Fatalf("batch %d label %d: %d (process), %d (goroutine)", k, j, g.Labels[j], w.Labels[j])
						}
					}
					got.Release(g)
					want.Release(w)
				}
				if _, err := got.Next(ctx); err != io.EOF {
					t.Errorf("after the last batch: %v, want io.EOF", err)
				}
				if err := got.Close(); err != nil {
					t.Error(err)
				}
				checkGone(t, got.PIDs())
				// prefetch 2 per worker, plus the one with the consumer.
				if a, max := got.Allocated(), 2*workers+1; a > max {
					t.Errorf("allocated %d batches, want at most %d", a, max)
				}
			})
		}
	}
}

func TestWorkerFailureNamesWorker(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ crash, want string }{
		{"exit:3", "exited with status 2 while producing batch 3: injected crash"},
		{"partial:3", "exited with status 3 mid-batch while producing batch 3"},
		{"garbage:3", "bad header"},
		// A panic's stack trace stays out of the one-line error.
		{"panic:3", "exited with status 2 while producing batch 3: panic: injected panic"},
	} {
		t.Run(tc.crash, func(t *testing.T) {
			l, err := NewWithOptions(ctx, small("fast", 2), 8, testOptions(crashEnv+"="+tc.crash))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			pid := l.PIDs()[1] // batch 3 goes to worker 3 mod 2
			for k := range 3 {
				b, err := l.Next(ctx)
				if err != nil {
					t.Fatalf("batch %d: %v", k, err)
				}
				l.Release(b)
			}
			_, err = l.Next(ctx)
			if err == nil {
				t.Fatal("batch 3: no error")
			}
			prefix := fmt.Sprintf("worker 1 (pid %d): ", pid)
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), "batch 3") {
				t.Errorf("error %q, want one starting %q naming batch 3", err, prefix)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "goroutine") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line without the stack trace", err)
			}
			if _, err2 := l.Next(ctx); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("Next after the error: %v, want the same error", err2)
			}
			l.Close()
			checkGone(t, l.PIDs())
		})
	}
}

func TestCloseMidStreamReapsEveryChild(t *testing.T) {
	ctx := context.Background()
	l, err := NewWithOptions(ctx, small("fast", 4), 100, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(b)
	pids := l.PIDs()
	if len(pids) != 4 {
		t.Fatalf("%d pids, want 4", len(pids))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, pids)
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := l.Next(ctx); err == nil {
		t.Error("Next after Close: no error")
	}
}

func TestCancelKillsEveryChild(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l, err := NewWithOptions(ctx, small("naive", 3), 100, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := l.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(b)
	pids := l.PIDs()
	cancel()
	if _, err := l.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel: %v, want context.Canceled", err)
	}
	// Without Close, the children are killed and reaped all the same.
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for gone(pid) != nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	checkGone(t, pids)
	if err := l.Close(); err != nil {
		t.Error(err)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := NewWithOptions(ctx, small("fast", 2), 0, testOptions()); err == nil {
		t.Error("0 batches: no error")
	}
	if _, err := NewWithOptions(ctx, small("slow", 2), 4, testOptions()); err == nil {
		t.Error("unknown transform: no error")
	}
	u8 := small("fast", 2)
	u8.Placement = loader.Device
	if _, err := NewWithOptions(ctx, u8, 4, testOptions()); err == nil || !strings.Contains(err.Error(), "float32 batches only") {
		t.Errorf("placement device: err %v, want a refusal", err)
	}
	if _, err := NewWithOptions(ctx, small("fast", 2), 4, Options{Exe: "/nonexistent/headspace"}); err == nil {
		t.Error("missing executable: no error")
	}
}

// gone reports why pid is still there, or nil if it is neither running nor
// a zombie.
func gone(pid int) error {
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill(%d, 0) = %v, want ESRCH", pid, err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("/proc/%d: %v, want it gone", pid, err)
	}
	return nil
}

func checkGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := gone(pid); err != nil {
			t.Error(err)
		}
	}
}
