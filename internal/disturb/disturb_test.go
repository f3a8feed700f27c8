package disturb

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "933050 2242168 2\n", want: 2242168},
		{in: "1 0 0", want: 0},
		{in: "1", bad: true},
		{in: "1 x 2", bad: true},
		{in: "1 -5 2", bad: true},
	} {
		got, err := parseSchedstat(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseSchedstat(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParsePressure(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "some avg10=37.10 avg60=34.57 avg300=38.92 total=957453293\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", want: 957453293 * time.Microsecond},
		{in: "full avg10=0.00 total=5\n", bad: true},
		{in: "some avg10=1 total=x\n", bad: true},
		{in: "", bad: true},
	} {
		got, err := parsePressure(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parsePressure(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseStat(t *testing.T) {
	busy, all, err := parseStat("cpu  10 2 3 80 5 0 0 0 7 7\ncpu0 1 1 1 1\n")
	if err != nil || busy != 15 || all != 100 {
		t.Errorf("parseStat = %d, %d, %v; want 15 busy of 100 (guest ticks not counted twice)", busy, all, err)
	}
	if _, _, err := parseStat("intr 1 2 3"); err == nil {
		t.Error("parseStat of a file without the cpu line: no error")
	}
}

func TestDisturbed(t *testing.T) {
	s := func(wall, delay time.Duration, has bool) Sample {
		return Sample{Wall: wall, RunDelay: delay, HasRunDelay: has}
	}
	for _, tc := range []struct {
		name string
		p    Policy
		s    Sample
		want bool
	}{
		{"quiet", DefaultPolicy(), s(time.Second, 10*time.Millisecond, true), false},
		{"at the threshold", DefaultPolicy(), s(time.Second, 50*time.Millisecond, true), false},
		{"beyond it", DefaultPolicy(), s(time.Second, 51*time.Millisecond, true), true},
		{"zero policy takes the default", Policy{}, s(time.Second, 60*time.Millisecond, true), true},
		{"looser policy", Policy{MaxDelay: 0.5}, s(time.Second, 300*time.Millisecond, true), false},
		{"unknown delay", DefaultPolicy(), s(time.Second, 900*time.Millisecond, false), false},
	} {
		if got := tc.p.Disturbed(tc.s); got != tc.want {
			t.Errorf("%s: Disturbed(%v of %v) = %v, want %v", tc.name, tc.s.RunDelay, tc.s.Wall, got, tc.want)
		}
	}
}

// TestDisturbedByOthersOnly: a point is disturbed by what other
// processes take, not by its own threads waiting for each other (issue
// 52: a head whose injected slowdown added a thread had 13 of 17 raw
// rounds "disturbed" on a quiet machine). The run-queue delay others can
// have caused is at most the CPU time they used over the point.
func TestDisturbedByOthersOnly(t *testing.T) {
	s := func(delay, others time.Duration) Sample {
		return Sample{Wall: time.Second, RunDelay: delay, HasRunDelay: true, Others: others, HasOthers: true}
	}
	for _, tc := range []struct {
		name string
		s    Sample
		want bool
	}{
		{"own threads waiting, machine otherwise idle", s(600*time.Millisecond, 10*time.Millisecond), false},
		{"own threads waiting, a little else running", s(600*time.Millisecond, 40*time.Millisecond), false},
		{"a neighbour took a core", s(600*time.Millisecond, 900*time.Millisecond), true},
		{"a neighbour on the other core, no wait", s(20*time.Millisecond, 900*time.Millisecond), false},
		{"a neighbour, some wait", s(80*time.Millisecond, 300*time.Millisecond), true},
		{"the machine unread: the delay alone", Sample{Wall: time.Second, RunDelay: 600 * time.Millisecond, HasRunDelay: true}, true},
	} {
		if got := DefaultPolicy().Disturbed(tc.s); got != tc.want {
			t.Errorf("%s: Disturbed(delay %v, others %v) = %v, want %v", tc.name, tc.s.RunDelay, tc.s.Others, got, tc.want)
		}
	}
	if got := OthersDelay(60, 0.02); got != 0.02 {
		t.Errorf("OthersDelay(60%%, 0.02 cores) = %v, want 0.02", got)
	}
	if got := OthersDelay(3, 1.5); got != 0.03 {
		t.Errorf("OthersDelay(3%%, 1.5 cores) = %v, want 0.03", got)
	}
}

// TestDiffOthers: what the other processes used over a point is the
// machine's busy time less this process's CPU time, never negative.
func TestDiffOthers(t *testing.T) {
	t0 := time.Unix(100, 0)
	start := Reading{At: t0, CPU: time.Second, HasCPU: true, Machine: 10 * time.Second, HasMachine: true}
	end := Reading{At: t0.Add(2 * time.Second), CPU: 3 * time.Second, HasCPU: true, Machine: 13 * time.Second, HasMachine: true}
	s := diff(start, end, Sample{})
	if !s.HasOthers || s.Others != time.Second || s.OtherCores() != 0.5 {
		t.Errorf("diff = %+v; want others 1s (3s busy, 2s ours), 0.5 cores", s)
	}
	end.Machine = 11 * time.Second // the ticks lag this process's own count
	if s := diff(start, end, Sample{}); s.Others != 0 || !s.HasOthers {
		t.Errorf("diff = %+v; want others 0, not negative", s)
	}
	end.HasMachine = false
	if s := diff(start, end, Sample{}); s.HasOthers {
		t.Errorf("diff = %+v; want no others where the machine is unread", s)
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []Policy{{MaxDelay: -0.1}, {MaxDelay: 11}, {Reruns: -1}, {Reruns: 101}} {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	if err := DefaultPolicy().Validate(); err != nil {
		t.Error(err)
	}
}

func TestDiffThreads(t *testing.T) {
	t0 := time.Unix(100, 0)
	start := Reading{At: t0, CPU: time.Second, HasCPU: true, HasRunDelay: true, Pressure: 5 * time.Second, HasPressure: true,
		delays: map[int]time.Duration{1: 100, 2: 200, 3: 300}}
	end := Reading{At: t0.Add(2 * time.Second), CPU: 3 * time.Second, HasCPU: true, HasRunDelay: true, Pressure: 6 * time.Second, HasPressure: true,
		// thread 3 exited, thread 4 started
		delays: map[int]time.Duration{1: 150, 2: 200, 4: 70}}
	s := diff(start, end, Sample{})
	if s.Wall != 2*time.Second || s.CPU != 2*time.Second || s.RunDelay != 50+70 || s.Pressure != time.Second {
		t.Errorf("diff = %+v; want wall 2s, cpu 2s, run delay 120ns (thread 1's 50 and the new thread's 70), pressure 1s", s)
	}
	if got := s.PressureShare(); got != 0.5 {
		t.Errorf("PressureShare = %v, want 0.5", got)
	}
}

func TestProbeReadsThisProcess(t *testing.T) {
	p := Start()
	x := 0
	for i := range 20_000_000 {
		x += i
	}
	_ = x
	s := p.Stop()
	if runtime.GOOS == "linux" {
		if !s.HasRunDelay || !s.HasCPU {
			t.Errorf("on Linux the run delay and the CPU time are read; got %+v", s)
		}
	}
	if s.Wall <= 0 {
		t.Errorf("wall %v", s.Wall)
	}
}

func TestWaitQuiet(t *testing.T) {
	seq := func(shares ...float64) func(context.Context, time.Duration) (float64, bool) {
		i := 0
		return func(ctx context.Context, d time.Duration) (float64, bool) {
			s := shares[min(i, len(shares)-1)]
			i++
			return s, true
		}
	}
	t.Run("skipped", func(t *testing.T) {
		r, err := WaitQuiet(context.Background(), Quiet{Max: 0, busy: seq(0.9)})
		if err != nil || r.Known || r.Busy {
			t.Errorf("Max 0: %+v, %v; want nothing waited for", r, err)
		}
	})
	t.Run("quiet after two windows", func(t *testing.T) {
		var lines []string
		r, err := WaitQuiet(context.Background(), Quiet{Max: time.Hour, Every: time.Millisecond, busy: seq(0.5, 0.3, 0.05),
			Status: func(s string) { lines = append(lines, s) }})
		if err != nil || r.Busy || !r.Known || r.Share != 0.05 {
			t.Errorf("%+v, %v; want quiet at 5%%", r, err)
		}
		if len(lines) != 2 || !strings.Contains(lines[0], "50%") || !strings.Contains(lines[0], "--quiet-wait 0") {
			t.Errorf("status lines %q; want two, naming the share and how to skip", lines)
		}
	})
	t.Run("never quiet", func(t *testing.T) {
		r, err := WaitQuiet(context.Background(), Quiet{Max: 20 * time.Millisecond, Every: time.Millisecond,
			busy: func(ctx context.Context, d time.Duration) (float64, bool) { time.Sleep(d); return 0.6, true }})
		if err != nil || !r.Busy || r.Waited > time.Second {
			t.Errorf("%+v, %v; want the wait to end at its bound, busy", r, err)
		}
		if got := r.String(); !strings.Contains(got, "60%") {
			t.Errorf("String() = %q", got)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := WaitQuiet(ctx, Quiet{Max: time.Hour, busy: seq(0.9)})
		if err == nil {
			t.Error("a cancelled wait returned no error")
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		r, err := WaitQuiet(context.Background(), Quiet{Max: time.Hour, busy: func(context.Context, time.Duration) (float64, bool) { return 0, false }})
		if err != nil || r.Known || r.Busy {
			t.Errorf("%+v, %v; want an unknown load to end the wait at once", r, err)
		}
	})
}
