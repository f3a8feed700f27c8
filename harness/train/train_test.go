package train

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/device"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStepSummary(t *testing.T) {
	var r Result
	for i := 1; i <= 100; i++ {
		r.StepTimes = append(r.StepTimes, time.Duration(i)*time.Millisecond)
	}
	s := r.StepSummary()
	if s.P50 != 50500*time.Microsecond || s.P90 != 90*time.Millisecond || s.P99 != 99*time.Millisecond || s.Max != 100*time.Millisecond {
		t.Errorf("summary %+v", s)
	}
	if (Result{}).StepSummary() != (Summary{}) {
		t.Error("empty summary not zero")
	}
}

// slow is a loader whose Next takes wait: the loop's input wait.
type slow struct {
	b    *batching.Batch
	wait time.Duration
	n    int
}

func (s *slow) Next(ctx context.Context) (*batching.Batch, error) {
	s.n++
	select {
	case <-time.After(s.wait):
		return s.b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (s *slow) Release(*batching.Batch) {}
func (s *slow) Close() error            { return nil }

func newBatch(t *testing.T) *batching.Batch {
	t.Helper()
	p, err := batching.NewPoolOf(batching.Float32, 2, 12)
	if err != nil {
		t.Fatal(err)
	}
	return p.Get()
}

func TestRun(t *testing.T) {
	dev, err := device.NewEmulated(device.EmulatedConfig{Step: time.Millisecond, Pinned: true, PinnedBandwidth: 1e12, PageableBandwidth: 1e12})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ld := &slow{b: newBatch(t), wait: 5 * time.Millisecond}
	res, err := Run(context.Background(), ld, dev, 2, Config{Steps: 4, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ld.n != 5 || res.Steps != 4 || len(res.StepTimes) != 4 || len(res.Waits) != 4 || res.DeviceStats.Steps != 4 || res.DeviceStats.Uploads != 4 {
		t.Errorf("%d batches taken, result %+v", ld.n, res)
	}
	// Every measured step waited for its batch: the waits are in the result
	// and bounded by the wall time.
	if res.InputWait < 4*ld.wait || res.InputWait > res.Wall || res.InputBound() <= 0 || res.InputBound() > 1 {
		t.Errorf("input wait %v of wall %v (bound %.2f)", res.InputWait, res.Wall, res.InputBound())
	}
	if res.SamplesPerSec() != 2*res.StepsPerSec() {
		t.Errorf("samples/s %v is not twice steps/s %v", res.SamplesPerSec(), res.StepsPerSec())
	}
	od, err := OnDevice(context.Background(), newBatch(t), dev, Config{Steps: 3})
	if err != nil || od.DeviceStats.Uploads != 0 || od.DeviceStats.Steps != 3 || od.InputWait != 0 {
		t.Errorf("OnDevice: %+v, %v", od.DeviceStats, err)
	}
}

func TestRunErrors(t *testing.T) {
	dev, _ := device.NewEmulated(device.EmulatedConfig{Step: time.Millisecond, PinnedBandwidth: 1e12, PageableBandwidth: 1e12})
	defer dev.Close()
	for _, c := range []Config{{Steps: 0}, {Steps: 1, Warmup: -1}} {
		if _, err := Run(context.Background(), Repeat{newBatch(t)}, dev, 2, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, &slow{b: newBatch(t), wait: time.Hour}, dev, 2, Config{Steps: 3}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
	if err := (Config{Steps: 1, Warmup: -2}).Validate(); err == nil || !strings.Contains(err.Error(), "warm-up") {
		t.Errorf("Validate: %v", err)
	}
}
