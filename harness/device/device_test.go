package device

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/batching"
)

// These tests check lower bounds only: an emulated wait can overrun on a
// busy machine but never finish early, so the checks cannot flake.

func batch(t *testing.T, values int) *batching.Batch {
	t.Helper()
	p, err := batching.NewPool(1, values)
	if err != nil {
		t.Fatal(err)
	}
	return p.Get()
}

func TestUploadTakesBytesOverBandwidth(t *testing.T) {
	for _, pinned := range []bool{true, false} {
		d, err := NewEmulated(EmulatedConfig{Pinned: pinned, PinnedBandwidth: 4e6, PageableBandwidth: 2e6})
		if err != nil {
			t.Fatal(err)
		}
		b := batch(t, 9999) // 40000 bytes with the label
		want := 10 * time.Millisecond
		if !pinned {
			want = 20 * time.Millisecond
		}
		t0 := time.Now()
		buf, err := d.Upload(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(t0); el < want {
			t.Errorf("pinned=%v: upload of 40 kB took %v, want at least %v", pinned, el, want)
		}
		if buf.Bytes() != 40000 {
			t.Errorf("buffer holds %d bytes", buf.Bytes())
		}
		s := d.Stats()
		if s.Uploads != 1 || s.UploadBytes != 40000 || s.UploadTime != want {
			t.Errorf("stats %+v", s)
		}
		d.Close()
	}
}

// TestStepRunsAhead checks the stream semantics: Step returns once the
// previous step has finished, so n steps and a Sync take at least n×Step,
// and the device counts n×Step of busy time.
func TestStepRunsAhead(t *testing.T) {
	d, _ := NewEmulated(EmulatedConfig{Step: 5 * time.Millisecond, PinnedBandwidth: 1e12, PageableBandwidth: 1e12})
	defer d.Close()
	buf, err := d.Upload(context.Background(), batch(t, 4))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for range 4 {
		if err := d.Step(context.Background(), buf); err != nil {
			t.Fatal(err)
		}
	}
	afterSteps := time.Since(t0)
	if err := d.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el < 20*time.Millisecond {
		t.Errorf("4 steps of 5ms and a sync took %v", el)
	}
	if afterSteps < 15*time.Millisecond {
		t.Errorf("the 4th Step returned after %v, before the 3rd step could finish", afterSteps)
	}
	if s := d.Stats(); s.Steps != 4 || s.StepTime != 20*time.Millisecond {
		t.Errorf("stats %+v", s)
	}
	if d := (Stats{Steps: 5, StepTime: 9}).Sub(Stats{Steps: 2, StepTime: 4}); d.Steps != 3 || d.StepTime != 5 {
		t.Errorf("Sub = %+v", d)
	}
}

func TestCancelAndMisuse(t *testing.T) {
	d, _ := NewEmulated(EmulatedConfig{Step: time.Hour, PinnedBandwidth: 1, PageableBandwidth: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Upload(ctx, batch(t, 4)); !errors.Is(err, context.Canceled) {
		t.Errorf("Upload with a cancelled context = %v", err)
	}
	type foreign struct{ Buffer }
	if err := d.Step(context.Background(), foreign{}); err == nil {
		t.Error("Step accepted another device's buffer")
	}
	d.Close()
	if _, err := d.Upload(context.Background(), batch(t, 1)); err == nil {
		t.Error("Upload on a closed device succeeded")
	}
	for _, bad := range []EmulatedConfig{{Step: -1, PinnedBandwidth: 1, PageableBandwidth: 1}, {PinnedBandwidth: 0, PageableBandwidth: 1}, {PinnedBandwidth: 1}} {
		if _, err := NewEmulated(bad); err == nil {
			t.Errorf("NewEmulated(%+v) accepted", bad)
		}
	}
}
