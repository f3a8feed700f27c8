package ladder

import (
	"context"
	"github.com/headspace-bench/headspace/harness/level"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/train"
)

// TestRunUint8EveryLevel runs every level in both transfers and checks the
// uint8 run completes, uploads a quarter of the float32 run's value bytes
// (labels are int32 in both), and has its conversion counted on the device
// at every step (the device level included) and only there.
func TestRunUint8EveryLevel(t *testing.T) {
	cfg := small("fast", 2)
	values := int64(cfg.Batch * cfg.Transforms.OutLen())
	labels := int64(4 * cfg.Batch)
	const steps = 5
	for _, tc := range []struct {
		level   level.Level
		uploads int64
	}{
		{level.None, steps}, {level.Raw, steps}, {level.Sample, steps}, {level.Host, steps}, {level.Device, 0},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			got := map[string]train.Result{}
			for _, transfer := range []string{"", "float32", "uint8"} {
				c := cfg
				if transfer == "uint8" {
					c.Placement = loader.Device
				}
				dev := fastDevice(t)
				res, err := Run(context.Background(), tc.level, c, dev, train.Config{Steps: steps, Warmup: 1})
				dev.Close()
				if err != nil {
					t.Fatalf("transfer %q: %v", transfer, err)
				}
				if res.Steps != steps || res.DeviceStats.Steps != steps || res.DeviceStats.Uploads != tc.uploads {
					t.Errorf("transfer %q: %d steps, %d device steps, %d uploads; want %d, %d, %d", transfer, res.Steps, res.DeviceStats.Steps, res.DeviceStats.Uploads, steps, steps, tc.uploads)
				}
				got[transfer] = res
			}
			f32, u8 := got["float32"], got["uint8"]
			if def := got[""]; def.DeviceStats.UploadBytes != f32.DeviceStats.UploadBytes || def.DeviceStats.ConvertTime != 0 {
				t.Errorf("the default transfer is not float32: %+v", def.DeviceStats)
			}
			if tc.uploads > 0 {
				wantF, wantU := float64(4*values+labels), float64(values+labels)
				if f, u := f32.UploadBytesPerBatch(), u8.UploadBytesPerBatch(); f != wantF || u != wantU || 4*(u-float64(labels)) != f-float64(labels) {
					t.Errorf("upload bytes per batch: float32 %v, uint8 %v; want %v and %v (a quarter of the values' bytes)", f, u, wantF, wantU)
				}
			} else if f32.UploadBytesPerBatch() != 0 || u8.UploadBytesPerBatch() != 0 {
				t.Errorf("level device uploaded in the measured steps")
			}
			conv := device.EmulatedConfig{}.ConvertTime(int(values)) // fastDevice leaves the default bandwidth
			if f32.DeviceStats.ConvertTime != 0 || u8.DeviceStats.ConvertTime != steps*conv {
				t.Errorf("conversion time: float32 %v, uint8 %v; want 0 and %d×%v", f32.DeviceStats.ConvertTime, u8.DeviceStats.ConvertTime, steps, conv)
			}
			b := (Point{Level: tc.level, Workers: 2, Impl: "fast", Placement: loader.Device, Pinned: true}).Benchmark(u8)
			if !strings.HasPrefix(string(b.Name), "BenchmarkLadder/level="+tc.level.String()+"/workers=2/transforms=fast/placement=device/pinned=true") {
				t.Errorf("benchmark name %s", b.Name)
			}
			if v, ok := b.Value("upload-B/op"); (tc.uploads > 0) != ok || (ok && v != float64(values+labels)) {
				t.Errorf("upload-B/op = %v, %v", v, ok)
			}
		})
	}
}

// TestUint8LoaderStopsCleanly checks a uint8 run that is cancelled returns
// the context's error and leaves no goroutine (goleak in TestMain).
func TestUint8LoaderStopsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := small("naive", 2)
	cfg.Placement = loader.Device
	dev, _ := device.NewEmulated(device.EmulatedConfig{Step: time.Hour, PinnedBandwidth: 1e12, PageableBandwidth: 1e12})
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := Run(ctx, level.None, cfg, dev, train.Config{Steps: 3}); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Run after cancel = %v", err)
	}
}
