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
