package workloads

import (
	"context"
	"github.com/headspace-bench/headspace/harness/level"
	"runtime"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// fakeProbe hands out samples whose run-queue delay is the next share
// of wall time in shares.
type fakeProbe struct{ share float64 }

func (f fakeProbe) Stop() disturb.Sample {
	return disturb.Sample{Wall: time.Second, RunDelay: time.Duration(f.share * float64(time.Second)), HasRunDelay: true,
		CPU: 400 * time.Millisecond, HasCPU: true}
}

func withShares(t *testing.T, shares ...float64) *int {
	t.Helper()
	calls := 0
	prev := startProbe
	startProbe = func() prober {
		s := shares[min(calls, len(shares)-1)]
		calls++
		return fakeProbe{s}
	}
	t.Cleanup(func() { startProbe = prev })
	return &calls
}

// TestDisturbedRunsAreRepeated: a run whose run-queue delay exceeds the
// policy's share of its wall time is repeated, at most Reruns times; the
// least disturbed attempt is kept, marked when it stays disturbed, and
// the record carries the CPU time per step, the delay and the reruns.
func TestDisturbedRunsAreRepeated(t *testing.T) {
	for _, tc := range []struct {
		name          string
		policy        disturb.Policy
		shares        []float64
		wantRuns      int
		wantReruns    float64 // 0: no reruns value
		wantDisturbed bool
		wantDelay     float64
	}{
		{"quiet", disturb.DefaultPolicy(), []float64{0.01}, 1, 0, false, 1},
		{"disturbed once", disturb.DefaultPolicy(), []float64{0.30, 0.02}, 2, 1, false, 2},
		{"stays disturbed", disturb.DefaultPolicy(), []float64{0.50, 0.20, 0.40}, 3, 2, true, 20},
		{"no reruns", disturb.Policy{MaxDelay: 0.05}, []float64{0.50}, 1, 0, true, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := withShares(t, tc.shares...)
			l, env := tinyLadder()
			l.Levels, l.Count, l.Disturb = []level.Level{level.Device}, 1, tc.policy
			rs, err := l.Run(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if *calls != tc.wantRuns || len(rs) != 1 {
				t.Fatalf("%d attempts, %d records; want %d attempts, 1 record", *calls, len(rs), tc.wantRuns)
			}
			get := func(unit string) (float64, bool) { return resultfile.Value(rs[0], unit) }
			if v, _ := get(disturb.RunDelayUnit); v != tc.wantDelay {
				t.Errorf("run-delay-%% = %v, want %v (the least disturbed attempt)", v, tc.wantDelay)
			}
			if v, ok := get(disturb.RerunsUnit); v != tc.wantReruns || ok != (tc.wantReruns > 0) {
				t.Errorf("reruns = %v (present %v), want %v", v, ok, tc.wantReruns)
			}
			if _, ok := get(disturb.DisturbedUnit); ok != tc.wantDisturbed {
				t.Errorf("disturbed mark present = %v, want %v", ok, tc.wantDisturbed)
			}
			steps := float64(l.Train.Steps)
			if v, _ := get(disturb.CPUUnit); v != float64(400*time.Millisecond)/steps {
				t.Errorf("cpu-ns/op = %v, want 400 ms over %v steps", v, steps)
			}
		})
	}
}

// TestRunsRecordTheirDisturbance: a real run records its CPU time per
// step and, on Linux, its run-queue delay and (where PSI exists) the
// machine's CPU pressure; the policy is in the settings.
func TestRunsRecordTheirDisturbance(t *testing.T) {
	l, env := tinyLadder()
	l.Levels, l.Count, l.Disturb = []level.Level{level.None}, 1, disturb.Policy{MaxDelay: 5}
	rs, err := l.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]bool{}
	for _, v := range rs[0].Values {
		units[v.Unit] = true
	}
	if runtime.GOOS == "linux" && (!units[disturb.RunDelayUnit] || !units[disturb.CPUUnit]) {
		t.Errorf("units %v: want %s and %s on Linux", units, disturb.RunDelayUnit, disturb.CPUUnit)
	}
	want := map[string]string{"disturb-max-delay": "500%", "disturb-reruns": "0"}
	for _, c := range l.Settings() {
		if w, ok := want[c.Key]; ok && c.Value == w {
			delete(want, c.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("settings lack %v", want)
	}
}
