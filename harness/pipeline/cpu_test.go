package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// spin does about n iterations of arithmetic the compiler cannot drop.
func spin(n int) int {
	x := 1
	for i := range n {
		x = x*31 + i
	}
	return x
}

// run1 builds index → name (workers) → sink and drains it.
func runCPU(t testing.TB, measure bool, n, workers int, fn func(context.Context, Item[int]) (int, error)) Stats {
	p := New(context.Background())
	if measure {
		if err := p.MeasureCPU(); err != nil {
			t.Fatal(err)
		}
	}
	src, err := Source(p, "index", n, 4, func(i int) int { return i })
	if err != nil {
		t.Fatal(err)
	}
	out, err := Map(p, "work", src, workers, 4, fn)
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := out.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return p.Stats()
}

// TestMeasureCPU checks the accounting, not the speed: a stage that
// sleeps spends less CPU than task time, one that computes spends some,
// and without MeasureCPU nothing is counted.
func TestMeasureCPU(t *testing.T) {
	if !cpuSupported {
		if err := New(context.Background()).MeasureCPU(); !errors.Is(err, ErrNoCPUClock) {
			t.Fatalf("MeasureCPU without a thread CPU clock = %v, want ErrNoCPUClock", err)
		}
		return
	}
	sleep := func(_ context.Context, it Item[int]) (int, error) {
		time.Sleep(2 * time.Millisecond)
		return it.Value, nil
	}
	busy := func(_ context.Context, it Item[int]) (int, error) { return spin(200_000) + it.Value, nil }
	for _, tc := range []struct {
		name    string
		measure bool
		fn      func(context.Context, Item[int]) (int, error)
		check   func(s StageStats) error
	}{
		{"sleeping", true, sleep, func(s StageStats) error {
			if s.CPU <= 0 || s.CPU >= s.Total {
				return fmt.Errorf("CPU %v of task time %v: want 0 < CPU < task time", s.CPU, s.Total)
			}
			return nil
		}},
		{"computing", true, busy, func(s StageStats) error {
			if s.CPU <= 0 {
				return fmt.Errorf("CPU %v of task time %v: want some", s.CPU, s.Total)
			}
			return nil
		}},
		{"off", false, busy, func(s StageStats) error {
			if s.CPU != 0 {
				return fmt.Errorf("CPU %v counted without MeasureCPU", s.CPU)
			}
			return nil
		}},
	} {
		st := runCPU(t, tc.measure, 10, 2, tc.fn)
		work := st.Stages[1]
		if work.Name != "work" || work.Tasks != 10 {
			t.Fatalf("%s: stage %q ran %d tasks, want work and 10", tc.name, work.Name, work.Tasks)
		}
		if err := tc.check(work); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if st.Stages[0].CPU != 0 {
			t.Errorf("%s: the source's CPU %v: sources are not measured", tc.name, st.Stages[0].CPU)
		}
	}
}

// BenchmarkMeasureCPU is what MeasureCPU costs per item through a stage
// of 2 workers doing about 5 µs of work each (ns/op is per item): a thread
// CPU clock read before and after each task, and the locked workers' thread
// hand-offs on the queues. allocs/op stays at the pipeline's set-up,
// amortised: measuring allocates nothing per item.
func BenchmarkMeasureCPU(b *testing.B) {
	work := func(_ context.Context, it Item[int]) (int, error) { return spin(5000) + it.Value, nil }
	for _, measure := range []bool{false, true} {
		b.Run(fmt.Sprintf("cpu=%v", measure), func(b *testing.B) {
			if measure && !cpuSupported {
				b.Skip("no thread CPU clock on this system")
			}
			b.ReportAllocs()
			runCPU(b, measure, b.N, 2, work)
		})
	}
}

// BenchmarkThreadCPU is one read of the thread's CPU clock.
func BenchmarkThreadCPU(b *testing.B) {
	b.ReportAllocs()
	var sum time.Duration
	for range b.N {
		sum += threadCPU()
	}
	if cpuSupported && sum == 0 {
		b.Fatal("the thread CPU clock reads 0")
	}
}
