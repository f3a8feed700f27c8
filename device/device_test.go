package device

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/batching"
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

// TestUint8Transfer uploads a float32 and a uint8 batch of the same shape
// and steps on each: the uint8 payload takes a quarter of the float32
// payload's upload time (labels are int32 either way), and only the uint8
// step runs the conversion kernel, which Stats counts in ConvertTime and
// not in StepTime.
func TestUint8Transfer(t *testing.T) {
	const size, values = 2, 5000 // 10000 values: 40000 float32 bytes, 10000 uint8 bytes
	const bw = 4e6               // bytes/s: 10 ms for the float32 payload
	labels := time.Duration(float64(4*size) / bw * 1e9)
	cfg := EmulatedConfig{Step: time.Millisecond, Pinned: true, PinnedBandwidth: bw, PageableBandwidth: bw, ConvertBandwidth: 8e6}
	type got struct {
		bytes            int64
		upload, convert  time.Duration
		steps, stepTime  int64
		elapsedAfterSync time.Duration
	}
	run := func(dt batching.DType) got {
		d, err := NewEmulated(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		p, err := batching.NewPoolOf(dt, size, values)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		buf, err := d.Upload(context.Background(), p.Get())
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Step(context.Background(), buf); err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := d.Stats()
		return got{buf.Bytes(), s.UploadTime, s.ConvertTime, s.Steps, int64(s.StepTime), time.Since(t0)}
	}
	f32, u8 := run(batching.Float32), run(batching.Uint8)
	near := func(a, b time.Duration) bool { return a-b <= 2 && b-a <= 2 } // float → ns truncation
	for _, tc := range []struct {
		name      string
		g         got
		bytes     int64
		upload    time.Duration
		convert   time.Duration
		atLeastNs time.Duration
	}{
		{"float32", f32, 4*size*values + 4*size, 10*time.Millisecond + labels, 0, 11 * time.Millisecond},
		{"uint8", u8, size*values + 4*size, 2500*time.Microsecond + labels, 5 * time.Millisecond, 8500 * time.Microsecond},
	} {
		g := tc.g
		if g.bytes != tc.bytes || !near(g.upload, tc.upload) || !near(g.convert, tc.convert) {
			t.Errorf("%s: %d bytes in %v, conversion %v; want %d bytes in %v, conversion %v", tc.name, g.bytes, g.upload, g.convert, tc.bytes, tc.upload, tc.convert)
		}
		if g.steps != 1 || time.Duration(g.stepTime) != time.Millisecond {
			t.Errorf("%s: %d steps of %v busy, want 1 of 1ms (the conversion is not step time)", tc.name, g.steps, time.Duration(g.stepTime))
		}
		if g.elapsedAfterSync < tc.atLeastNs {
			t.Errorf("%s: upload, step and sync took %v, want at least %v", tc.name, g.elapsedAfterSync, tc.atLeastNs)
		}
	}
	if !near(4*(u8.upload-labels), f32.upload-labels) {
		t.Errorf("uint8 payload upload %v is not a quarter of float32's %v", u8.upload-labels, f32.upload-labels)
	}
	if d := (Stats{ConvertTime: 9}).Sub(Stats{ConvertTime: 4}); d.ConvertTime != 5 {
		t.Errorf("Sub = %+v", d)
	}
}

func TestConvertBandwidth(t *testing.T) {
	for _, tc := range []struct {
		bw     float64
		values int
		want   time.Duration
		ok     bool
	}{
		{0, 250, time.Nanosecond, true}, // the default, 1000 GB/s: 1000 bytes a µs
		{DefaultConvertBandwidth, 250_000, time.Microsecond, true},
		{4e9, 1_000_000, time.Millisecond, true},
		{-1, 0, 0, false},
		{math.NaN(), 0, 0, false},
		{math.Inf(1), 0, 0, false},
	} {
		cfg := EmulatedConfig{PinnedBandwidth: 1, PageableBandwidth: 1, ConvertBandwidth: tc.bw}
		if err := cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("bandwidth %g: Validate = %v", tc.bw, err)
			continue
		}
		if tc.ok {
			if got := cfg.ConvertTime(tc.values); got < tc.want-1 || got > tc.want+1 {
				t.Errorf("bandwidth %g: ConvertTime(%d) = %v, want %v", tc.bw, tc.values, got, tc.want)
			}
		}
	}
	if DefaultEmulated().ConvertBandwidth != DefaultConvertBandwidth {
		t.Error("DefaultEmulated has no conversion bandwidth")
	}
}
