//go:build linux

package cuda

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/cuda/netref"
)

// libContext is a context of the fake driver whose plans call the fake
// cuDNN f.
func libContext(t *testing.T, f *fakeDNN) *Context {
	t.Helper()
	c := loadFake(t).open()
	c.dnn = f.lib
	t.Cleanup(func() {
		if n := f.Live(); n != 0 {
			t.Errorf("the fake cuDNN/cuBLAS holds %d objects at the end", n)
		}
	})
	return c
}

func lib(op string, args ...Arg) Launch { return Launch{Module: LibraryModule, Kernel: op, Args: args} }

func f32Init(v []float64) []byte {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return slices.Clone(bytesOf(f))
}

func f32Want(v []float64) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

// libCheckTol is the tolerance of the fake cuDNN's float32 sums against
// netref's float64 (fp32 math), or of its TF32 rounding (tf32): relative
// to the largest value wanted.
func libCheckTol(want []float64, tf32 bool) float64 {
	m := 0.0
	for _, v := range want {
		m = max(m, math.Abs(v))
	}
	if tf32 {
		return 2e-3 * m
	}
	return 1e-5 * m
}

// Each library op computes what the kernel it replaces computes: run
// through a program (RunCheck) on the fake driver and the fake cuDNN,
// which computes on the driver's host memory, its output matches
// cuda/netref's: the forward pass with bias (and ReLU), the data
// gradient, the weights' and biases' gradient, ReLU's gradient in place;
// fp32 and tf32. A wrong argument order (channels swapped, the bias
// missed, the wrong buffer) fails here.
func TestLibraryOpsCompute(t *testing.T) {
	f := loadFakeDNN(t)
	c := libContext(t, f)
	const n, cin, cout, side = 2, 3, 5, 6
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(k int) []float64 {
		v := make([]float64, k)
		for i := range v {
			v[i] = float64(float32(rng.Float64()*2 - 1))
		}
		return v
	}
	x, params, dy := draw(n*cin*side*side), draw(cout*cin*9+cout), draw(n*cout*side*side)
	y := netref.ConvForward(x, params, n, cin, cout, side, true)
	for _, tf32 := range []int32{0, 1} {
		for _, tc := range []struct {
			name   string
			launch Launch
			bufs   []Buffer
			out    string
			want   []float64
		}{
			{"forward relu", lib(OpConvForward, Buf{"x"}, Buf{"p"}, Buf{"y"}, int32(n), int32(cin), int32(cout), int32(side), int32(1), tf32),
				[]Buffer{{Name: "y", Bytes: int64(4 * len(dy))}}, "y", y},
			{"forward", lib(OpConvForward, Buf{"x"}, Buf{"p"}, Buf{"y"}, int32(n), int32(cin), int32(cout), int32(side), int32(0), tf32),
				[]Buffer{{Name: "y", Bytes: int64(4 * len(dy))}}, "y", netref.ConvForward(x, params, n, cin, cout, side, false)},
			{"backward data", lib(OpConvBackwardData, Buf{"dy"}, Buf{"p"}, Buf{"dx"}, int32(n), int32(cin), int32(cout), int32(side), tf32),
				[]Buffer{{Name: "dx", Bytes: int64(4 * len(x))}}, "dx", netref.ConvBackwardData(dy, params, n, cin, cout, side)},
			{"backward params", lib(OpConvBackwardParams, Buf{"dy"}, Buf{"x"}, Buf{"g"}, int32(n), int32(cin), int32(cout), int32(side), tf32),
				[]Buffer{{Name: "g", Bytes: int64(4 * len(params)), Init: f32Init(params)}}, "g", netref.ConvBackwardParams(dy, x, n, cin, cout, side)},
			{"relu backward", lib(OpReLUBackward, Buf{"dy"}, Buf{"yr"}, int32(len(dy))),
				[]Buffer{{Name: "yr", Bytes: int64(4 * len(y)), Init: f32Init(y)}}, "dy", netref.ReLUBackward(dy, y)},
		} {
			bufs := append([]Buffer{{Name: "x", Bytes: int64(4 * len(x)), Init: f32Init(x)}, {Name: "p", Bytes: int64(4 * len(params)), Init: f32Init(params)},
				{Name: "dy", Bytes: int64(4 * len(dy)), Init: f32Init(dy)}}, tc.bufs...)
			tol := libCheckTol(tc.want, tf32 == 1)
			if tc.launch.Kernel == OpReLUBackward {
				tol = 0 // a selection: exact
			}
			r, err := RunCheck(context.Background(), c, nil, Check{Name: tc.name, Buffers: bufs, Launches: []Launch{tc.launch},
				Outputs: []Output{{Buf: tc.out, Want: f32Want(tc.want), Tol: tol}}})
			if err != nil {
				t.Fatalf("%s tf32=%d: %v", tc.name, tf32, err)
			}
			if !r.OK() || r.Outputs[0].MaxErr == math.Inf(1) {
				t.Errorf("%s tf32=%d: largest error %g, tolerance %g", tc.name, tf32, r.Outputs[0].MaxErr, r.Outputs[0].Tol)
			}
			// TF32 must round: its error is above fp32's bound.
			if tf32 == 1 && tc.launch.Kernel != OpReLUBackward && r.Outputs[0].MaxErr <= libCheckTol(tc.want, false) {
				t.Errorf("%s tf32: error %g within fp32's %g: the operands were not rounded to TF32", tc.name, r.Outputs[0].MaxErr, libCheckTol(tc.want, false))
			}
		}
	}
}

// The algorithm search runs once per shape and precision on a Context,
// however many programs use it (cudnn.benchmark=True), and each
// program's step is the library calls alone: descriptors and searches
// come when the program is made.
func TestLibraryOpsSearchOnce(t *testing.T) {
	f := loadFakeDNN(t)
	c := libContext(t, f)
	ch := func(side int, tf32 int32) Check {
		n := 2 * 3 * side * side
		return Check{Name: "fwd", Buffers: []Buffer{{Name: "x", Bytes: int64(4 * n)}, {Name: "p", Bytes: 4 * (4*3*9 + 4)}, {Name: "y", Bytes: int64(4 * 2 * 4 * side * side)}},
			Launches: []Launch{lib(OpConvForward, Buf{"x"}, Buf{"p"}, Buf{"y"}, int32(2), int32(3), int32(4), int32(side), int32(0), tf32)}}
	}
	for _, cc := range []Check{ch(8, 0), ch(8, 0), ch(8, 1), ch(4, 0), ch(8, 0)} {
		if _, err := RunCheck(context.Background(), c, nil, cc); err != nil {
			t.Fatal(err)
		}
	}
	finds := lines(f.Log(), "cudnnFindConvolutionForwardAlgorithm")
	if want := []string{"cudnnFindConvolutionForwardAlgorithm math 3", "cudnnFindConvolutionForwardAlgorithm math 1", "cudnnFindConvolutionForwardAlgorithm math 3"}; !slices.Equal(finds, want) {
		t.Errorf("searches %q, want one per shape and precision: %q", finds, want)
	}
	if got := lines(f.Log(), "cudnnConvolutionForward"); len(got) != 5 {
		t.Errorf("%d forward calls, want 5", len(got))
	}
}

// A library op in a Device's step reads the batch just uploaded, as a
// kernel that names the plan's Input does: the plan's own input buffer
// holds other values, and the loss read back is the convolution of the
// uploaded batch (side 1: the centre taps alone, plus the bias). Upload,
// step and free allocate nothing, as with kernels alone.
func TestLibraryOpsReadTheBatch(t *testing.T) {
	f := loadFakeDNN(t)
	c := libContext(t, f)
	params := make([]float64, 1*3*9+1)
	params[4], params[9+4], params[18+4], params[27] = 1, 2, 3, 0.5 // centre taps, then the bias
	plan := Plan{
		Buffers: []Buffer{{Name: "x", Bytes: 12, Init: f32Init([]float64{100, 100, 100})}, {Name: "y", Bytes: 4}, {Name: "p", Bytes: 4 * 28, Init: f32Init(params)}, {Name: "out", Bytes: 4}},
		Input:   "x", Labels: "y", Loss: "out",
		Step: []Launch{lib(OpConvForward, Buf{"x"}, Buf{"p"}, Buf{"out"}, int32(1), int32(3), int32(1), int32(1), int32(1), int32(0))},
	}
	d, err := NewDevice(c, DeviceConfig{Plan: plan, Pinned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, err := batching.NewPool(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Get()
	copy(b.Data, []float32{1, -2, 4})
	_, loss, err := TimeSteps(context.Background(), d, b, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := float32(1*1 - 2*2 + 3*4 + 0.5); loss != want {
		t.Errorf("the step's output %v, want %v (the uploaded batch's convolution; the plan's own input would give 600.5)", loss, want)
	}
	// The per-batch path allocates nothing with library ops either.
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
	step()
	if sites := allocationSites(step, 50); len(sites) > 0 {
		t.Errorf("upload, step and free of a plan with a library op allocate at:\n%s", strings.Join(sites, "\n"))
	}
	if allocs := testing.AllocsPerRun(20, step); allocs != 0 && !raceEnabled {
		t.Errorf("%v allocations per upload, step and free of a plan with a library op", allocs)
	}
}

// A plan's library ops are checked before anything is made: an unknown
// op, arguments of the wrong kind or count, a negative size, a buffer
// that is not the plan's; a failing search is the program's error,
// naming the op, and leaves nothing behind.
func TestLibraryOpsErrors(t *testing.T) {
	bufs := []Buffer{{Name: "a", Bytes: 4096}, {Name: "b", Bytes: 4096}, {Name: "c", Bytes: 4096}}
	for _, tc := range []struct {
		launch Launch
		want   string
	}{
		{lib("conv_sideways", Buf{"a"}), `no library op "conv_sideways"`},
		{lib(OpReLUBackward, Buf{"a"}, Buf{"b"}), "relu_backward): 2 arguments, want 3"},
		{lib(OpReLUBackward, Buf{"a"}, int32(3), int32(3)), "argument 1: int32, want a buffer"},
		{lib(OpReLUBackward, Buf{"a"}, Buf{"b"}, uint32(3)), "argument 2: uint32, want an int32"},
		{lib(OpReLUBackward, Buf{"a"}, Buf{"b"}, int32(-3)), "argument 2: -3"},
		{lib(OpReLUBackward, Buf{"a"}, Buf{"z"}, int32(3)), `argument 1: no buffer "z"`},
	} {
		if err := validate(nil, bufs, []Launch{tc.launch}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.launch, err, tc.want)
		}
	}
	f := loadFakeDNN(t)
	c := libContext(t, f)
	f.Fail("cudnnFindConvolutionBackwardDataAlgorithm", 0, 4001)
	_, err := RunCheck(context.Background(), c, nil, Check{Name: "fwd", Buffers: bufs,
		Launches: []Launch{lib(OpConvForward, Buf{"a"}, Buf{"b"}, Buf{"c"}, int32(1), int32(3), int32(4), int32(4), int32(0), int32(0))}})
	if want := "cudnn conv_forward: cuda: cudnnFindConvolutionBackwardDataAlgorithm: CUDNN_STATUS_ALLOC_FAILED (4001): conv 1x3x4x4"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a failing search: %v, want %q", err, want)
	}
}
