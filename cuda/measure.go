package cuda

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/internal/summary"
)

// Bandwidth is one copy speed measured on the GPU.
type Bandwidth struct {
	HostToDevice bool  // false: device to host
	Pinned       bool  // host side page-locked (cuMemHostAlloc) or pageable
	Bytes        int64 // bytes per copy
	Time         time.Duration
}

// GBps is the speed in GB/s (10⁹ bytes a second).
func (b Bandwidth) GBps() float64 { return float64(b.Bytes) / b.Time.Seconds() / 1e9 }

// Direction is "htod" or "dtoh".
func (b Bandwidth) Direction() string {
	if b.HostToDevice {
		return "htod"
	}
	return "dtoh"
}

// MeasureBandwidth times copies of each size in both directions, from
// pinned and from pageable host memory, on a stream with events; each
// figure is the median of reps copies.
func MeasureBandwidth(ctx context.Context, c *Context, sizes []int64, reps int) ([]Bandwidth, error) {
	if len(sizes) == 0 || reps <= 0 {
		return nil, fmt.Errorf("cuda: bandwidth: no sizes or repetitions")
	}
	max := slices.Max(sizes)
	var out []Bandwidth
	err := c.run(func() (err error) {
		rig := &copyRig{pageable: make([]byte, max)}
		// Release whatever was made, keeping the first error.
		defer func() { err = cmp.Or(err, rig.release(c)) }()
		if err := rig.alloc(c, max); err != nil {
			return err
		}
		for _, n := range sizes {
			for _, htod := range []bool{true, false} {
				for _, pin := range []bool{true, false} {
					t, err := c.timeCopy(ctx, *rig, n, htod, pin, reps)
					if err != nil {
						return err
					}
					out = append(out, Bandwidth{HostToDevice: htod, Pinned: pin, Bytes: n, Time: t})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: bandwidth: %w", err)
	}
	return out, nil
}

// copyRig is what MeasureBandwidth times copies with: a device buffer,
// pinned and pageable host buffers, a stream and two events.
type copyRig struct {
	dev                uint64
	pinned, pageable   []byte
	stream, start, end uintptr
}

// alloc makes the rig's device and pinned buffers of max bytes, its
// stream and its events, on the driver thread; what it made before an
// error is left for release.
func (rig *copyRig) alloc(c *Context, max int64) (err error) {
	if rig.dev, err = c.memAlloc(max); err != nil {
		return fmt.Errorf("%d bytes on the device: %w", max, err)
	}
	if rig.pinned, err = c.hostAlloc(int(max)); err != nil {
		return fmt.Errorf("%d pinned bytes: %w", max, err)
	}
	if rig.stream, err = c.streamCreate(); err != nil {
		return err
	}
	if rig.start, err = c.eventCreate(); err != nil {
		return err
	}
	rig.end, err = c.eventCreate()
	return err
}

// release frees whatever alloc made, in reverse order, and returns the
// first error.
func (rig *copyRig) release(c *Context) error {
	errs := []error{ifNZ(rig.end, c.eventDestroy), ifNZ(rig.start, c.eventDestroy), ifNZ(rig.stream, c.streamDestroy)}
	if rig.pinned != nil {
		errs = append(errs, c.hostFree(rig.pinned))
	}
	if rig.dev != 0 {
		errs = append(errs, c.memFree(rig.dev))
	}
	runtime.KeepAlive(rig.pageable)
	return cmp.Or(errs...)
}

// timeCopy is the median GPU time of reps copies of n bytes, host to
// device or back, from pinned or pageable memory. It runs on the driver
// thread.
func (c *Context) timeCopy(ctx context.Context, rig copyRig, n int64, htod, pin bool, reps int) (time.Duration, error) {
	host := unsafe.Pointer(&rig.pageable[0])
	if pin {
		host = unsafe.Pointer(&rig.pinned[0])
	}
	times := make([]time.Duration, reps)
	for r := range times {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := c.eventRecord(rig.start, rig.stream); err != nil {
			return 0, err
		}
		var err error
		if htod {
			err = c.htod(rig.dev, host, n, rig.stream)
		} else {
			err = c.dtoh(host, rig.dev, n, rig.stream)
		}
		if err == nil {
			err = c.eventRecord(rig.end, rig.stream)
		}
		if err == nil {
			err = c.eventSync(rig.end)
		}
		if err == nil {
			times[r], err = c.elapsed(rig.start, rig.end)
		}
		if err != nil {
			return 0, fmt.Errorf("copy of %d bytes: %w", n, err)
		}
	}
	return summary.MedianDuration(times), nil
}

func ifNZ(h uintptr, f func(uintptr) error) error {
	if h == 0 {
		return nil
	}
	return f(h)
}

// OutputResult is one output of a Check against its reference.
type OutputResult struct {
	Buf    string
	MaxErr float64 // the largest absolute error; +Inf if any value is NaN or infinite
	Tol    float64
}

// OK reports whether the output is within its tolerance.
func (o OutputResult) OK() bool { return o.MaxErr <= o.Tol }

// CheckResult is a Check's outcome.
type CheckResult struct {
	Name    string
	Outputs []OutputResult
}

// OK reports whether every output is within its tolerance.
func (r CheckResult) OK() bool {
	for _, o := range r.Outputs {
		if !o.OK() {
			return false
		}
	}
	return true
}

// RunCheck runs a Check's launches with the given modules and compares its
// outputs with their Want.
func RunCheck(ctx context.Context, c *Context, modules map[string][]byte, ch Check) (CheckResult, error) {
	res := CheckResult{Name: ch.Name}
	err := c.run(func() (err error) {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := newProgram(c, modules, ch.Buffers, ch.Launches)
		if err != nil {
			return err
		}
		var stream uintptr
		defer func() { err = cmp.Or(err, ifNZ(stream, c.streamDestroy), p.release()) }()
		if stream, err = c.streamCreate(); err != nil {
			return err
		}
		if err := p.enqueue(0, stream); err != nil {
			return err
		}
		if err := c.streamSync(stream); err != nil {
			return err
		}
		for _, o := range ch.Outputs {
			got := make([]float32, len(o.Want))
			if int64(len(got))*4 > p.sizes[o.Buf] {
				return fmt.Errorf("output %s: %d values, the buffer holds %d bytes", o.Buf, len(got), p.sizes[o.Buf])
			}
			if len(got) > 0 {
				if err := c.dtoh(unsafe.Pointer(&got[0]), p.ptrs[o.Buf], int64(len(got))*4, stream); err != nil {
					return fmt.Errorf("output %s: %w", o.Buf, err)
				}
				if err := c.streamSync(stream); err != nil {
					return err
				}
			}
			res.Outputs = append(res.Outputs, OutputResult{Buf: o.Buf, MaxErr: maxAbsErr(got, o.Want), Tol: o.Tol})
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("cuda: check %s: %w", ch.Name, err)
	}
	return res, nil
}

func maxAbsErr(got, want []float32) float64 {
	m := 0.0
	for i := range got {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return math.Inf(1)
		}
		m = max(m, math.Abs(g-float64(want[i])))
	}
	return m
}

// TimeSteps uploads b once and times n steps on it after warmup, each on
// the GPU (its StepTime), with a Sync after each so that steps do not
// overlap. It returns the times and the loss after the last step.
func TimeSteps(ctx context.Context, d *Device, b *batching.Batch, warmup, n int) ([]time.Duration, float32, error) {
	buf, err := d.Upload(ctx, b)
	if err != nil {
		return nil, 0, err
	}
	defer d.Free(buf)
	times := make([]time.Duration, 0, n)
	for i := range warmup + n {
		s0 := d.Stats()
		if err := d.Step(ctx, buf); err != nil {
			return nil, 0, err
		}
		if err := d.Sync(ctx); err != nil {
			return nil, 0, err
		}
		s := d.Stats().Sub(s0)
		if i >= warmup {
			times = append(times, s.StepTime+s.ConvertTime)
		}
	}
	loss := float32(math.NaN())
	if d.plan.Loss != "" {
		if loss, err = d.Loss(ctx); err != nil {
			return nil, 0, err
		}
	}
	return times, loss, nil
}
