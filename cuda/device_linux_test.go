//go:build linux

package cuda

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/internal/nativelib"
)

// testPTX declares the kernels of testPlan as clang's PTX does; the fake
// reads the parameter sizes from the signatures and runs nothing.
const testPTX = `.version 7.0
.target sm_80
.address_size 64

.visible .entry convert(.param .u64 convert_param_0, .param .u64 convert_param_1, .param .u32 convert_param_2)
{
	ret;
}

.visible .entry step(.param .u64 x, .param .u64 y, .param .f32 lr, .param .s32 k, .param .u64 w, .param .u64 seed)
{
	ret;
}
`

// testPlan is a stand-in for the Net's plan (cuda/kernels): one conversion
// and two step launches over batch samples of values values.
func testPlan(batch, values int) Plan {
	step := func(threads uint32) Launch {
		return Launch{Module: "net", Kernel: "step", Grid: [3]uint32{uint32(batch), 1, 1}, Block: [3]uint32{threads, 1, 1},
			Args: []Arg{Buf{"x"}, Buf{"y"}, float32(0.5), int32(-3), Buf{"w"}, uint64(0x0123456789abcdef)}}
	}
	loss := make([]byte, 4)
	*(*float32)(unsafe.Pointer(&loss[0])) = 2.5
	return Plan{
		Modules: map[string][]byte{"net": []byte(testPTX)},
		Buffers: []Buffer{
			{Name: "x", Bytes: int64(batch * values * 4)},
			{Name: "x8", Bytes: int64(batch * values)},
			{Name: "y", Bytes: int64(batch * 4)},
			{Name: "w", Bytes: 16, Init: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
			{Name: "loss", Bytes: 4, Init: loss},
		},
		Input: "x", InputU8: "x8", Labels: "y",
		Convert: []Launch{{Module: "net", Kernel: "convert", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{128, 1, 1}, SharedBytes: 64,
			Args: []Arg{Buf{"x8"}, Buf{"x"}, uint32(batch * values)}}},
		Step: []Launch{step(128), step(256)},
		Loss: "loss",
	}
}

func testBatch(t testing.TB, dt batching.DType, batch, values, index int) *batching.Batch {
	p, err := batching.NewPoolOf(dt, batch, values)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Get()
	b.Index = index
	for i := range b.Data {
		b.Data[i] = float32(i + index)
	}
	for i := range b.Pix {
		b.Pix[i] = uint8(i + index)
	}
	for i := range b.Labels {
		b.Labels[i] = int32(7 + i + index)
	}
	return b
}

// logLine is one line of the fake's log: its operation, first word, and
// key=value fields.
type logLine struct {
	op, word string
	kv       map[string]string
}

func parseLog(s string) []logLine {
	var ls []logLine
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		ll := logLine{op: f[0], kv: map[string]string{}}
		for _, w := range f[1:] {
			if k, v, ok := strings.Cut(w, "="); ok {
				ll.kv[k] = v
			} else if ll.word == "" {
				ll.word = w
			}
		}
		ls = append(ls, ll)
	}
	return ls
}

// span is a log line's t=start-end.
func (l logLine) span(t *testing.T) (float64, float64) {
	a, b, _ := strings.Cut(l.kv["t"], "-")
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad time in %+v", l)
	}
	return x, y
}

func (l logLine) count(ls []logLine, op string) int {
	n := 0
	for _, x := range ls {
		if x.op == op {
			n++
		}
	}
	return n
}

func launches(ls []logLine) []logLine {
	var out []logLine
	for _, l := range ls {
		if l.op == "launch" {
			out = append(out, l)
		}
	}
	return out
}

// readDevice copies n bytes at device pointer p back to the host.
func readDevice(t *testing.T, c *Context, p uint64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := c.run(func() error {
		if err := c.dtoh(unsafe.Pointer(&b[0]), p, int64(n), 0); err != nil {
			return err
		}
		return c.ctxSync()
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

func newTestDevice(t *testing.T, c *Context, pinned bool) *Device {
	t.Helper()
	d, err := NewDevice(c, DeviceConfig{Plan: testPlan(2, 16), Pinned: pinned})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

func TestOpenDescribesTheDevice(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	i := c.Info()
	if i.Name != "Fake GPU (testdata/fakecuda.c)" || i.Driver() != "12.4" || i.JITTarget() != "sm_90" || i.SMs != 132 || i.TotalMem != 80<<30 || i.PCIBusID != "0000:65:00.0" {
		t.Errorf("info %+v", i)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	if err := c.run(func() error { return nil }); err == nil {
		t.Error("a closed context ran a call")
	}
}

// Issue 32, item 14: a driver that never returns from cuInit. Open gives
// up when its context ends, with an error that wraps the context's (so a
// command exits 130 on SIGINT), and when the driver comes back after all
// the primary context it retained is released: nothing is left held.
func TestOpenAbandonsAHungInit(t *testing.T) {
	f := loadFake(t)
	retains := f.Retains()
	f.HangInit(true)
	defer f.HangInit(false)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		c, err := openContext(ctx, f.lib, 0)
		if c != nil {
			c.Close()
		}
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cuda: opening device 0: the driver's initialisation had not returned") {
			t.Errorf("Open with cuInit hung and its context cancelled = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open still waiting for a hung cuInit 10 s after its context was cancelled")
	}
	f.HangInit(false)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if n, _ := f.Live(); n == 0 && f.Retains() > retains {
			break
		}
		if time.Now().After(deadline) {
			_, what := f.Live()
			t.Fatalf("the abandoned open, once cuInit returned: %d retains, and it holds %s", f.Retains()-retains, what)
		}
	}
}

// TestCallsStayOnTheDriverThread: the fake has a current context only on
// the thread that made it current, so a call from any other thread fails;
// every other test passing shows the binding never makes one.
func TestCallsStayOnTheDriverThread(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	if _, err := c.memAlloc(8); err == nil || !strings.Contains(err.Error(), "cuMemAlloc_v2: CUDA_ERROR_INVALID_CONTEXT") {
		t.Errorf("a call off the driver thread = %v", err)
	}
	if err := c.run(func() error {
		p, err := c.memAlloc(8)
		if err != nil {
			return err
		}
		return c.memFree(p)
	}); err != nil {
		t.Errorf("the same call on the driver thread = %v", err)
	}
}

// TestArgumentMarshalling checks that every kind of kernel argument
// arrives as the kernel's signature wants it, that the launches that name
// the plan's input and labels read the uploaded batch, and that the batch
// arrives intact.
func TestArgumentMarshalling(t *testing.T) {
	for _, tc := range []struct {
		dt     batching.DType
		pinned bool
	}{{batching.Float32, true}, {batching.Float32, false}, {batching.Uint8, true}, {batching.Uint8, false}} {
		t.Run(fmt.Sprintf("%v/pinned=%v", tc.dt, tc.pinned), func(t *testing.T) {
			f := loadFake(t)
			c := f.open()
			d := newTestDevice(t, c, tc.pinned)
			b := testBatch(t, tc.dt, 2, 16, 3)
			ctx := context.Background()
			buf, err := d.Upload(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Step(ctx, buf); err != nil {
				t.Fatal(err)
			}
			if err := d.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			db := buf.(*buffer)
			if got := readDevice(t, c, db.ptr, len(payload(b))); string(got) != string(payload(b)) {
				t.Errorf("the batch's values arrived as %v", got)
			}
			if got := readDevice(t, c, db.ptr+uint64(db.labelOff), 8); string(got) != string(bytesOf(b.Labels)) {
				t.Errorf("the labels arrived as %v, want %v", got, bytesOf(b.Labels))
			}
			if buf.Bytes() != b.Bytes() {
				t.Errorf("buffer of %d bytes, batch of %d", buf.Bytes(), b.Bytes())
			}
			hex := func(v uint64) string { return strconv.FormatUint(v, 16) }
			x, labels, w := db.ptr, db.ptr+uint64(db.labelOff), d.prog.ptrs["w"]
			var want []string
			if tc.dt == batching.Uint8 {
				x = d.prog.ptrs["x"]
				want = append(want, "convert grid=2,1,1 block=128,1,1 shared=64 params=8:"+hex(db.ptr)+",8:"+hex(x)+",4:20")
			}
			for _, threads := range []string{"128", "256"} {
				want = append(want, "step grid=2,1,1 block="+threads+",1,1 shared=0 params=8:"+hex(x)+",8:"+hex(labels)+
					",4:"+hex(uint64(math.Float32bits(0.5)))+",4:fffffffd,8:"+hex(w)+",8:123456789abcdef")
			}
			var got []string
			for _, l := range launches(parseLog(f.Log())) {
				got = append(got, fmt.Sprintf("%s grid=%s block=%s shared=%s params=%s", l.word, l.kv["grid"], l.kv["block"], l.kv["shared"], l.kv["params"]))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("launches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if loss, err := d.Loss(ctx); err != nil || loss != 2.5 {
				t.Errorf("Loss = %v, %v; want the loss buffer's 2.5", loss, err)
			}
			d.Free(buf)
		})
	}
}

// TestOrderingAndStats runs five steps on batches uploaded into one pooled
// buffer and checks, from the fake's clocks, that each step starts after
// its batch's copy, that each copy into the reused buffer starts after the
// step that read it, that Stats are the GPU's times, and that the pool
// allocates one device buffer (and two pinned staging buffers).
func TestOrderingAndStats(t *testing.T) {
	for _, tc := range []struct {
		dt     batching.DType
		pinned bool
	}{{batching.Float32, true}, {batching.Float32, false}, {batching.Uint8, true}} {
		t.Run(fmt.Sprintf("%v/pinned=%v", tc.dt, tc.pinned), func(t *testing.T) {
			f := loadFake(t)
			c := f.open()
			d := newTestDevice(t, c, tc.pinned)
			ctx := context.Background()
			const steps = 5
			skip := len(parseLog(f.Log())) // setup
			var bytes int64
			for i := range steps {
				b := testBatch(t, tc.dt, 2, 16, i)
				bytes += b.Bytes()
				buf, err := d.Upload(ctx, b)
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Step(ctx, buf); err != nil {
					t.Fatal(err)
				}
				d.Free(buf)
			}
			if err := d.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			ls := parseLog(f.Log())[skip:]
			// Group the log per step: the copies, then the launches.
			type stepLog struct{ copyStart, copyEnd, runStart, runEnd float64 }
			var sl []stepLog
			for _, l := range ls {
				switch l.op {
				case "htod":
					a, b := l.span(t)
					if len(sl) == 0 || sl[len(sl)-1].runEnd > 0 {
						sl = append(sl, stepLog{copyStart: a})
					}
					sl[len(sl)-1].copyEnd = b
					if p := l.kv["pinned"]; p != map[bool]string{true: "1", false: "0"}[tc.pinned] {
						t.Errorf("pinned=%v device copied with pinned=%s", tc.pinned, p)
					}
				case "launch":
					a, b := l.span(t)
					s := &sl[len(sl)-1]
					if s.runStart == 0 || a < s.runStart {
						s.runStart = a
					}
					s.runEnd = b
				}
			}
			if len(sl) != steps {
				t.Fatalf("%d steps in the log:\n%s", len(sl), f.Log())
			}
			for i, s := range sl {
				if s.runStart < s.copyEnd {
					t.Errorf("step %d started at %v, before its copy ended at %v", i, s.runStart, s.copyEnd)
				}
				if i > 0 && s.copyStart < sl[i-1].runEnd {
					t.Errorf("copy %d into the reused buffer started at %v, before step %d ended at %v", i, s.copyStart, i-1, sl[i-1].runEnd)
				}
			}
			// The fake's model: a launch 1 ms; a copy 1 ns a byte pinned,
			// 2 pageable. Pinned copies move the staging buffer whole:
			// values padded to 256 bytes, then labels.
			per := map[bool]int64{true: 256 + 8, false: 2 * (128 + 8)}[tc.pinned]
			convert := int64(0)
			if tc.dt == batching.Uint8 {
				per = map[bool]int64{true: 32 + 256 - 32 + 8, false: 2 * (32 + 8)}[tc.pinned]
				convert = steps * 1e6
			}
			s := d.Stats()
			near := func(got, want int64) bool { return got >= want-steps && got <= want+steps } // float32 ms to ns
			if s.Uploads != steps || s.UploadBytes != bytes || s.Steps != steps || s.StepTime.Nanoseconds() != 2*steps*1e6 ||
				s.ConvertTime.Nanoseconds() != convert || !near(s.UploadTime.Nanoseconds(), steps*per) {
				t.Errorf("stats %+v; want %d uploads of %d bytes in %d ns, %d steps of 2 ms, conversions %d ns", s, steps, bytes, steps*per, steps, convert)
			}
			staging := map[bool]int{true: 2, false: 0}[tc.pinned]
			if n, h := ls[0].count(ls, "alloc"), ls[0].count(ls, "hostalloc"); n != 1 || h != staging {
				t.Errorf("%d device buffers and %d pinned staging buffers for %d batches freed after each step; want 1 and %d", n, h, steps, staging)
			}
		})
	}
}

// TestPoolGrows: buffers still out are not reused; freed ones are.
func TestPoolGrows(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	d := newTestDevice(t, c, true)
	ctx := context.Background()
	skip := len(parseLog(f.Log()))
	var bufs []any
	for round := range 2 {
		for i := range 3 {
			buf, err := d.Upload(ctx, testBatch(t, batching.Float32, 2, 16, i))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Step(ctx, buf); err != nil {
				t.Fatal(err)
			}
			bufs = append(bufs, buf)
		}
		for _, b := range bufs[3*round:] {
			d.Free(b.(*buffer))
		}
	}
	ls := parseLog(f.Log())[skip:]
	if n := ls[0].count(ls, "alloc"); n != 3 {
		t.Errorf("%d device buffers for 3 alive at once, twice", n)
	}
	// A buffer freed and taken again is the same memory.
	if bufs[3] != bufs[2] && bufs[3] != bufs[1] && bufs[3] != bufs[0] {
		t.Error("the second round did not reuse a freed buffer")
	}
}

func TestErrors(t *testing.T) {
	bad := testPlan(2, 16)
	bad.Modules = map[string][]byte{"net": []byte(strings.Replace(testPTX, "\tret;", "\t@bad ret;", 1))}
	missing := testPlan(2, 16)
	missing.Step = append(missing.Step, Launch{Module: "net", Kernel: "nosuch", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}})
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		plan  Plan
		setup func(f *fake) // before NewDevice
		later func(f *fake) // after NewDevice
		want  []string
		oom   bool
	}{
		{name: "out of memory at setup", setup: func(f *fake) { f.SetMemLimit(100) },
			want: []string{"device setup: buffer ", "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)"}, oom: true},
		{name: "out of memory at upload", later: func(f *fake) { f.SetMemLimit(200) },
			want: []string{"upload of batch 0: device buffer of 264 bytes: cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY"}, oom: true},
		{name: "bad PTX", plan: bad,
			want: []string{"module net: cuda: cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218): JIT log: ptxas application ptx input, line 7; error   : Unknown symbol '@bad'"}},
		{name: "missing kernel", plan: missing,
			want: []string{"module net: kernel nosuch: cuda: cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (500)"}},
		{name: "launch failure", later: func(f *fake) { f.Fail("cuLaunchKernel", 1, 719) },
			want: []string{"step 0: kernel step: cuda: cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED (719)"}},
		{name: "a result CUDA cannot name", later: func(f *fake) { f.Fail("cuMemcpyHtoDAsync_v2", 0, 12345) },
			want: []string{"cuda: cuMemcpyHtoDAsync_v2: CUresult 12345 (12345)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := loadFake(t)
			c := f.open()
			if tc.plan.Modules == nil {
				tc.plan = testPlan(2, 16)
			}
			if tc.setup != nil {
				tc.setup(f)
			}
			d, err := NewDevice(c, DeviceConfig{Plan: tc.plan, Pinned: true})
			if err == nil {
				defer d.Close()
				if tc.later != nil {
					tc.later(f)
				}
				var buf any
				if buf, err = d.Upload(ctx, testBatch(t, batching.Float32, 2, 16, 0)); err == nil {
					err = d.Step(ctx, buf.(*buffer))
				}
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if IsOutOfMemory(err) != tc.oom {
				t.Errorf("IsOutOfMemory(%v) = %v", err, !tc.oom)
			}
		})
	}
}

// scenario is everything the package does, once: a device, uploads
// pinned and pageable, float32 and uint8 steps, a loss, a bandwidth
// measurement and a kernel check, and closing it all.
func scenario(f *fake) (err error) {
	c, err := openContext(context.Background(), f.lib, 0)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	ctx := context.Background()
	for _, pinned := range []bool{true, false} {
		d, err := NewDevice(c, DeviceConfig{Plan: testPlan(2, 16), Pinned: pinned})
		if err != nil {
			return err
		}
		for i, dt := range []batching.DType{batching.Float32, batching.Uint8, batching.Float32} {
			buf, err := d.Upload(ctx, testBatch(nil, dt, 2, 16, i))
			if err == nil {
				err = d.Step(ctx, buf)
				d.Free(buf)
			}
			if err != nil {
				return errors.Join(err, d.Close())
			}
		}
		if _, err := d.Loss(ctx); err != nil {
			return errors.Join(err, d.Close())
		}
		if err := d.Close(); err != nil {
			return err
		}
	}
	if _, err := MeasureBandwidth(ctx, c, []int64{64}, 1); err != nil {
		return err
	}
	_, err = RunCheck(ctx, c, testPlan(2, 16).Modules, testCheck([]float32{1, 2, 3}))
	return err
}

// TestEveryEntryPointFails makes each entry point the binding resolves
// fail in turn, in a scenario that uses them all: the error must name the
// call and CUDA's name for the failure, and nothing may leak except what
// a failed release call itself leaves.
func TestEveryEntryPointFails(t *testing.T) {
	f := loadFake(t)
	if err := scenario(f); err != nil {
		t.Fatalf("the scenario fails without injected failures: %v", err)
	}
	releases := map[string]bool{"cuMemFree_v2": true, "cuMemFreeHost": true, "cuStreamDestroy_v2": true, "cuEventDestroy_v2": true,
		"cuModuleUnload": true, "cuDevicePrimaryCtxRelease_v2": true}
	for _, s := range (&driverLib{}).symbols() {
		if s.Name == "cuGetErrorName" {
			continue // called only to name a failure; TestErrors covers its own failure ("CUresult 12345")
		}
		t.Run(s.Name, func(t *testing.T) {
			nativelib.Call(f.reset)
			f.Fail(s.Name, 0, 700)
			err := scenario(f)
			if !strings.Contains(f.Log(), "fail "+s.Name+" 700") {
				t.Fatalf("the scenario never calls %s", s.Name)
			}
			want := "cuda: " + s.Name + ": CUDA_ERROR_ILLEGAL_ADDRESS (700)"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v does not say %q", err, want)
			}
			if n, what := f.Live(); n != 0 {
				if !releases[s.Name] {
					t.Errorf("after a failed %s the fake driver holds %s", s.Name, what)
				}
				nativelib.Call(f.forget)
			}
		})
	}
}

func TestMisuse(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	d := newTestDevice(t, c, true)
	other := newTestDevice(t, c, true)
	ctx := context.Background()
	buf, err := d.Upload(ctx, testBatch(t, batching.Float32, 2, 16, 0))
	if err != nil {
		t.Fatal(err)
	}
	ob, err := other.Upload(ctx, testBatch(t, batching.Float32, 2, 16, 0))
	if err != nil {
		t.Fatal(err)
	}
	noConvert := testPlan(2, 16)
	noConvert.Convert = nil
	nc, err := NewDevice(c, DeviceConfig{Plan: noConvert})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, wrongSize := d.Upload(ctx, testBatch(t, batching.Float32, 2, 15, 0))
	_, wrongLabels := d.Upload(ctx, testBatch(t, batching.Float32, 1, 32, 0))
	_, u8 := nc.Upload(ctx, testBatch(t, batching.Uint8, 2, 16, 0))
	_, cancelledUpload := d.Upload(cancelled, testBatch(t, batching.Float32, 2, 16, 0))
	foreign := d.Step(ctx, ob)
	other.Free(ob)
	d.Free(buf)
	freed := d.Step(ctx, buf)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{wrongSize, "upload of batch 0: 120 float32 bytes, the plan's input x holds 128"},
		{wrongLabels, "upload of batch 0: 4 label bytes, the plan's y holds 8"},
		{u8, "a uint8 batch, and the plan has no conversion"},
		{cancelledUpload, "context canceled"},
		{foreign, "step on a buffer of another device"},
		{freed, "step on a freed buffer"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want %q", tc.err, tc.want)
		}
	}
	for _, p := range []Plan{{}, {Input: "x"}, func() Plan { p := testPlan(2, 16); p.Buffers[0].Init = []byte{1}; return p }(),
		func() Plan { p := testPlan(2, 16); p.Step[0].Args[0] = Buf{"nope"}; return p }(),
		func() Plan { p := testPlan(2, 16); p.Step[0].Args[1] = 3; return p }(),
		func() Plan { p := testPlan(2, 16); p.Step[0].Grid[1] = 0; return p }()} {
		if d, err := NewDevice(c, DeviceConfig{Plan: p}); err == nil {
			d.Close()
			t.Errorf("NewDevice accepted %+v", p)
		}
	}
	d.Close()
	if _, err := d.Upload(ctx, testBatch(t, batching.Float32, 2, 16, 0)); err == nil || !strings.Contains(err.Error(), "closed device") {
		t.Errorf("upload on a closed device = %v", err)
	}
}

// TestStepAllocatesNothing: the per-batch path (Upload, Step, Free) makes
// no garbage. The memory profile names every allocation site: the only
// ones allowed refill caches that a GC empties (purego's sync.Pool of call
// blocks, which the race detector also drops at random, and the runtime's
// channel waiters). Without -race, AllocsPerRun must be 0 as well.
func TestStepAllocatesNothing(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	for _, dt := range []batching.DType{batching.Float32, batching.Uint8} {
		d := newTestDevice(t, c, true)
		b := testBatch(t, dt, 2, 16, 0)
		ctx := context.Background()
		step := func() {
			buf, err := d.Upload(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Step(ctx, buf); err != nil {
				t.Fatal(err)
			}
			d.Free(buf)
		}
		step() // the pool's buffer and the staging buffers
		step()
		if sites := allocationSites(step, 50); len(sites) > 0 {
			t.Errorf("%v: upload, step and free allocate at:\n%s", dt, strings.Join(sites, "\n"))
		}
		if allocs := testing.AllocsPerRun(50, step); allocs != 0 && !raceEnabled {
			t.Errorf("%v: %v allocations per upload, step and free", dt, allocs)
		}
	}
}

// allocationSites runs f n times with every allocation profiled and
// returns the stacks of those made by the Device's code, other than
// refills of caches that a GC empties.
func allocationSites(f func(), n int) []string {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	profile := func() map[[32]uintptr]int64 {
		runtime.GC()
		runtime.GC() // a cycle publishes the allocations of the one before
		recs := make([]runtime.MemProfileRecord, 4096)
		k, ok := runtime.MemProfile(recs, true)
		for !ok {
			recs = make([]runtime.MemProfileRecord, 2*k)
			k, ok = runtime.MemProfile(recs, true)
		}
		m := map[[32]uintptr]int64{}
		for _, r := range recs[:k] {
			m[r.Stack0] += r.AllocObjects
		}
		return m
	}
	before := profile()
	for range n {
		f()
	}
	var sites []string
	for stk, count := range profile() {
		if count == before[stk] {
			continue
		}
		var names []string
		ours, pool := false, false
		frames := runtime.CallersFrames(stk[:])
		for {
			fr, more := frames.Next()
			names = append(names, fr.Function)
			ours = ours || strings.Contains(fr.Function, "headspace/cuda.(*Device)")
			pool = pool || strings.HasPrefix(fr.Function, "github.com/ebitengine/purego.init") || strings.HasPrefix(fr.Function, "sync.(*Pool)") || fr.Function == "runtime.acquireSudog"
			if !more {
				break
			}
		}
		if ours && !pool {
			sites = append(sites, fmt.Sprintf("%d objects: %s", count-before[stk], strings.Join(names, " < ")))
		}
	}
	return sites
}

// BenchmarkStep is the binding's overhead per batch on the fake driver:
// go test -run=^$ -bench=Step -benchmem ./cuda
func BenchmarkStep(b *testing.B) {
	t := &testing.T{}
	f := loadFake(t)
	c, err := openContext(context.Background(), f.lib, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	d, err := NewDevice(c, DeviceConfig{Plan: testPlan(2, 16), Pinned: true})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	batch := testBatch(b, batching.Float32, 2, 16, 0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		nativelib.Call(f.reset) // keep the fake's log small
		buf, err := d.Upload(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Step(ctx, buf); err != nil {
			b.Fatal(err)
		}
		d.Free(buf)
	}
}

func testCheck(got []float32) Check {
	init := unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), 4*len(got))
	return Check{
		Name:     "step",
		Buffers:  []Buffer{{Name: "in", Bytes: 8}, {Name: "out", Bytes: int64(len(init)), Init: init}},
		Launches: []Launch{{Module: "net", Kernel: "step", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}, Args: []Arg{Buf{"in"}, Buf{"out"}, float32(1), int32(2), Buf{"in"}, uint64(3)}}},
		Outputs:  []Output{{Buf: "out", Want: []float32{1, 2, 3.5}, Tol: 0.6}},
	}
}

// TestRunCheck: the fake runs nothing, so the output buffer holds its
// Init; the check must read it back and measure its error against Want.
func TestRunCheck(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	ctx := context.Background()
	for _, tc := range []struct {
		got []float32
		tol float64
		err float64
		ok  bool
	}{
		{[]float32{1, 2, 3}, 0.6, 0.5, true},
		{[]float32{1, 2, 3}, 0.1, 0.5, false},
		{[]float32{1, float32(math.NaN()), 3.5}, 0.6, math.Inf(1), false},
	} {
		ch := testCheck(tc.got)
		ch.Outputs[0].Tol = tc.tol
		r, err := RunCheck(ctx, c, testPlan(1, 1).Modules, ch)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Outputs) != 1 || r.Outputs[0].MaxErr != tc.err || r.OK() != tc.ok || r.Name != "step" {
			t.Errorf("got %v, tol %v: %+v, want error %v, ok %v", tc.got, tc.tol, r, tc.err, tc.ok)
		}
	}
	if !strings.Contains(f.Log(), "launch step") {
		t.Error("the check launched nothing")
	}
	bad := testCheck([]float32{1, 2, 3})
	bad.Outputs[0].Want = make([]float32, 9)
	if _, err := RunCheck(ctx, c, testPlan(1, 1).Modules, bad); err == nil || !strings.Contains(err.Error(), "check step: output out: 9 values, the buffer holds 12 bytes") {
		t.Errorf("an output larger than its buffer: %v", err)
	}
}

// TestBandwidth: in the fake's model a pinned copy takes 1 ns a byte and a
// pageable one 2, so the figures must be 1 and 0.5 GB/s.
func TestBandwidth(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	bw, err := MeasureBandwidth(context.Background(), c, []int64{1 << 12, 1 << 16}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(bw) != 8 {
		t.Fatalf("%d figures for 2 sizes, 2 directions, pinned and pageable", len(bw))
	}
	for _, b := range bw {
		want := map[bool]float64{true: 1, false: 0.5}[b.Pinned]
		if math.Abs(b.GBps()-want) > 1e-3 {
			t.Errorf("%s pinned=%v %d bytes: %.4f GB/s, want %v", b.Direction(), b.Pinned, b.Bytes, b.GBps(), want)
		}
	}
	if _, err := MeasureBandwidth(context.Background(), c, nil, 1); err == nil {
		t.Error("no sizes accepted")
	}
}

// TestTimeSteps: each step of the test plan is two 1 ms launches.
func TestTimeSteps(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	d := newTestDevice(t, c, true)
	times, loss, err := TimeSteps(context.Background(), d, testBatch(t, batching.Float32, 2, 16, 0), 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 3 || loss != 2.5 {
		t.Fatalf("times %v, loss %v", times, loss)
	}
	for _, x := range times {
		if x.Nanoseconds() != 2e6 {
			t.Errorf("step of %v, want 2ms", x)
		}
	}
}

// TestPlanForShapes: with PlanFor the device builds the plan for each new
// batch shape on its first upload, and gives the old plan's memory back.
func TestPlanForShapes(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	var asked []string
	d, err := NewDevice(c, DeviceConfig{Pinned: true, PlanFor: func(batch, side int) (Plan, error) {
		asked = append(asked, fmt.Sprintf("%dx%d", batch, side))
		if batch > 8 {
			return Plan{}, errors.New("too big")
		}
		return testPlan(batch, 3*side*side), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	for _, shape := range [][2]int{{2, 48}, {2, 48}, {3, 48}, {2, 12}} {
		buf, err := d.Upload(ctx, testBatch(t, batching.Float32, shape[0], shape[1], 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Step(ctx, buf); err != nil {
			t.Fatal(err)
		}
		d.Free(buf)
		ls := launches(parseLog(f.Log()))
		if g := ls[len(ls)-1].kv["grid"]; g != fmt.Sprintf("%d,1,1", shape[0]) {
			t.Errorf("batch of %d ran the plan with grid %s", shape[0], g)
		}
	}
	if got := strings.Join(asked, " "); got != "2x4 3x4 2x2" {
		t.Errorf("plans built for %s, want 2x4 3x4 2x2", got)
	}
	ls := parseLog(f.Log())
	if n := ls[0].count(ls, "module"); n != 3 {
		t.Errorf("%d modules loaded for three shapes", n)
	}
	for _, tc := range []struct {
		b    *batching.Batch
		want string
	}{
		{testBatch(t, batching.Float32, 2, 10, 0), "a sample of 10 values is not 3×side×side"},
		{testBatch(t, batching.Float32, 9, 12, 0), "the plan for batch 9 of 12-value samples: too big"},
	} {
		if _, err := d.Upload(ctx, tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("upload = %v, want %q", err, tc.want)
		}
	}
}

// TestPlanForSample: with PlanForSample the device asks for a plan by the
// samples' length, whatever their layout (the device transform's header and
// raw pixels), and runs its Convert launches on the uploaded uint8 batch.
func TestPlanForSample(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	var asked []string
	d, err := NewDevice(c, DeviceConfig{Pinned: true, PlanForSample: func(batch, sampleLen int) (Plan, error) {
		asked = append(asked, fmt.Sprintf("%dx%d", batch, sampleLen))
		return testPlan(batch, sampleLen), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	for _, values := range []int{16 + 3*4*4, 16 + 3*6*5} { // not 3×side×side
		buf, err := d.Upload(ctx, testBatch(t, batching.Uint8, 2, values, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Step(ctx, buf); err != nil {
			t.Fatal(err)
		}
		d.Free(buf)
		ls := launches(parseLog(f.Log()))
		if n := len(ls); n < 3 || ls[n-3].word != "convert" {
			t.Errorf("samples of %d bytes: the conversion did not run before the step", values)
		}
	}
	if got := strings.Join(asked, " "); got != "2x64 2x106" {
		t.Errorf("plans built for %s, want 2x64 2x106", got)
	}
}

// TestClosedContext: a device whose context was closed first says so
// instead of waiting for a driver thread that has gone.
func TestClosedContext(t *testing.T) {
	f := loadFake(t)
	c, err := openContext(context.Background(), f.lib, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDevice(c, DeviceConfig{Plan: testPlan(2, 16), Pinned: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	buf, err := d.Upload(ctx, testBatch(t, batching.Float32, 2, 16, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	d.Free(buf) // nothing to do, and no hang
	if _, err := d.Upload(ctx, testBatch(t, batching.Float32, 2, 16, 0)); !errors.Is(err, errClosedContext) {
		t.Errorf("upload after the context closed = %v", err)
	}
	if err := d.Step(ctx, buf); !errors.Is(err, errClosedContext) {
		t.Errorf("step after the context closed = %v", err)
	}
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "close devices before their context") {
		t.Errorf("close after the context closed = %v", err)
	}
	nativelib.Call(f.forget) // the device's memory is leaked, as it would be on a GPU
}

// TestTimesNotReadyYet: a step whose events the GPU has not passed is
// counted later (by Sync), not lost and not an error.
func TestTimesNotReadyYet(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	d := newTestDevice(t, c, true)
	ctx := context.Background()
	buf, err := d.Upload(ctx, testBatch(t, batching.Float32, 2, 16, 0))
	if err != nil {
		t.Fatal(err)
	}
	f.Fail("cuEventQuery", 0, 600) // CUDA_ERROR_NOT_READY: still running
	if err := d.Step(ctx, buf); err != nil {
		t.Fatalf("a step whose upload is still timing: %v", err)
	}
	if !strings.Contains(f.Log(), "fail cuEventQuery 600") {
		t.Fatal("the step did not query its events")
	}
	if s := d.Stats(); s.Steps != 1 || s.UploadTime != 0 {
		t.Errorf("before Sync: %+v, want the step counted and the upload's time not yet", s)
	}
	if err := d.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.StepTime.Nanoseconds() != 2e6 || s.UploadTime <= 0 {
		t.Errorf("after Sync: %+v, want 2ms of steps and the upload's time", s)
	}
	d.Free(buf)
}

// TestUploadDecodesJPEG: with DeviceConfig.Decode, a batch that carries
// JPEG files is uploaded as its labels and, per sample, its header (the
// first bytes of its Pix slot) and its image decoded on the device after
// it, interleaved RGB, the slot's bytes after the image as the upload
// leaves them; its step runs the conversion on it; the upload counts the
// files' bytes. A bad file fails the upload naming the image, and the next
// upload is not failed by it; a batch of files on a device without a
// decoder is refused.
func TestUploadDecodesJPEG(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	so := fakeNvjpeg(t)
	const w, h, hdr, n = 4, 3, 16, 2
	const sample = hdr + 3*w*h
	dec, err := NewJPEGSampleDecoder(c, []string{so}, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	plan := func(batch, sampleLen int) (Plan, error) { return testPlan(batch, sampleLen), nil }
	d, err := NewDevice(c, DeviceConfig{PlanForSample: plan, Decode: &DeviceDecode{Decoder: dec, Width: w, Height: h, Header: hdr}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	for round := range 3 { // the pooled buffer is reused after its step
		b := testBatch(t, batching.Uint8, n, sample, round)
		want := make([]byte, 0, n*sample)
		var files int64
		for j := range n {
			file, _ := fakeJPEG(w, h, byte(40*j+round))
			b.JPEG = append(b.JPEG, file)
			files += int64(len(file))
			want = append(want, b.SamplePix(j)[:hdr]...)
			want = append(want, file[15:]...)
		}
		before := d.Stats()
		buf, err := d.Upload(ctx, b)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		bb := buf.(*buffer)
		if got := readDevice(t, c, bb.ptr, n*sample); !bytes.Equal(got, want) {
			t.Fatalf("round %d: the device holds %v, want %v", round, got, want)
		}
		if got := readDevice(t, c, bb.ptr+uint64(bb.labelOff), 4*n); !bytes.Equal(got, bytesOf(b.Labels)) {
			t.Errorf("round %d: labels %v, want %v", round, got, bytesOf(b.Labels))
		}
		if s := d.Stats().Sub(before); s.Uploads != 1 || s.UploadBytes != files+4*n {
			t.Errorf("round %d: %d uploads of %d bytes, want 1 of %d (the files and the labels)", round, s.Uploads, s.UploadBytes, files+4*n)
		}
		if err := d.Step(ctx, buf); err != nil {
			t.Fatal(err)
		}
		if ls := launches(parseLog(f.Log())); len(ls) < 3 || ls[len(ls)-3].word != "convert" {
			t.Errorf("round %d: the conversion did not run before the step", round)
		}
		d.Free(buf)
	}

	bad := testBatch(t, batching.Uint8, n, sample, 0)
	good, _ := fakeJPEG(w, h, 0)
	bad.JPEG = [][]byte{good, []byte("not a jpeg")}
	if _, err := d.Upload(ctx, bad); err == nil || !strings.Contains(err.Error(), "batch 0") || !strings.Contains(err.Error(), "image 1") {
		t.Errorf("a bad file: %v, want an error naming batch 0 and image 1", err)
	}
	bad.JPEG = [][]byte{good}
	if _, err := d.Upload(ctx, bad); err == nil || !strings.Contains(err.Error(), "1 JPEG files for 2") {
		t.Errorf("one file for two samples: %v", err)
	}
	bad.JPEG = [][]byte{good, good}
	buf, err := d.Upload(ctx, bad)
	if err != nil {
		t.Fatalf("an upload after failed ones: %v", err)
	}
	d.Free(buf)

	plain, err := NewDevice(c, DeviceConfig{PlanForSample: plan})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Upload(ctx, bad); err == nil || !strings.Contains(err.Error(), "decodes none") {
		t.Errorf("JPEG files on a device without a decoder: %v", err)
	}
	if _, err := NewDevice(c, DeviceConfig{PlanForSample: plan, Decode: &DeviceDecode{Width: w, Height: h, Header: hdr}}); err == nil {
		t.Error("a Decode without a decoder accepted")
	}
}
