package inject

import (
	"context"
	"testing"
	"time"
)

func TestOffByDefault(t *testing.T) {
	t.Setenv("HEADSPACE_INJECT", "raw=0.10")
	if !Enabled && Share("raw") != 0 {
		t.Error("a build without the headspace_inject tag injected a slowdown")
	}
}

func TestBurnUsesTheCPUAskedFor(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := Burn(ctx, time.Hour); d > 5*time.Second {
		t.Errorf("a cancelled burn ran %v", d)
	}
	if d := Burn(context.Background(), 0); d != 0 {
		t.Errorf("Burn(0) took %v, want nothing", d)
	}
}

// TestBurnStopsAtTheTarget: the burn reads its CPU time every few
// microseconds and stops at the first reading that reaches the target.
func TestBurnStopsAtTheTarget(t *testing.T) {
	var now time.Duration
	reads := 0
	read := func() (time.Duration, error) { reads++; now += 10 * time.Microsecond; return now, nil }
	burn(context.Background(), 95*time.Microsecond, read)
	// The first reading is the start; the target is reached at the 10th after it.
	if reads != 11 {
		t.Errorf("%d readings of the CPU time, want 11 (stop at the first at or past the target)", reads)
	}
}
