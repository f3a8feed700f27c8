package kernels

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/cuda"
)

// libraryAccess is what a library op touches, as package cuda's op table
// defines its arguments: the bytes of each buffer argument and which it
// writes (threads -1: no grid).
func libraryAccess(t *testing.T, l Launch) access {
	t.Helper()
	i := func(k int) int64 { return int64(l.Args[k].(int32)) }
	switch l.Kernel {
	case cuda.OpConvForward, cuda.OpConvBackwardData, cuda.OpConvBackwardParams:
		n, c, k, s2 := i(3), i(4), i(5), i(6)*i(6)
		in, out, params := 4*n*c*s2, 4*n*k*s2, 4*(k*c*9+k)
		tf32 := i(len(l.Args) - 1)
		if tf32 != 0 && tf32 != 1 {
			t.Errorf("%s: tf32 flag %d", l.Kernel, tf32)
		}
		switch l.Kernel {
		case cuda.OpConvForward:
			return access{-1, map[int]int64{0: in, 1: params, 2: out}, []int{2}}
		case cuda.OpConvBackwardData:
			return access{-1, map[int]int64{0: out, 1: params, 2: in}, []int{2}}
		}
		return access{-1, map[int]int64{0: out, 1: in, 2: params}, []int{2}}
	case cuda.OpReLUBackward:
		return access{-1, map[int]int64{0: 4 * i(2), 1: 4 * i(2)}, []int{0}}
	}
	t.Fatalf("no access rule for library op %s", l.Kernel)
	return access{}
}

// checkLibraryLaunches checks a plan's library ops against its buffers:
// every buffer argument names a buffer large enough for what the op
// touches, and the precision flag is the plan's.
func checkLibraryLaunches(t *testing.T, what string, bufs []Buffer, launches []Launch, tf32 int32) {
	t.Helper()
	size := map[string]int64{}
	for _, b := range bufs {
		size[b.Name] = b.Bytes
	}
	for j, l := range launches {
		if l.Module != cuda.LibraryModule {
			continue
		}
		acc := libraryAccess(t, l)
		for k, need := range acc.bytes {
			b := l.Args[k].(Buf)
			if size[b.Name] < need {
				t.Errorf("%s: launch %d (%s) argument %d, buffer %s of %d bytes, the op touches %d", what, j, l.Kernel, k, b.Name, size[b.Name], need)
			}
		}
		if l.Kernel != cuda.OpReLUBackward && l.Args[len(l.Args)-1] != tf32 {
			t.Errorf("%s: launch %d (%s): tf32 flag %v, want %d", what, j, l.Kernel, l.Args[len(l.Args)-1], tf32)
		}
	}
}

// replaced reports whether OnLibraries replaces kernel l.
func replaced(l Launch) bool {
	switch l.Kernel {
	case "conv3x3_forward", "conv3x3_forward_tf32", "conv3x3_backward_params_partial", "conv3x3_backward_params_tf32", "params_reduce", "relu_backward":
		return l.Module == Module || l.Module == TF32Module
	}
	return false
}

// OnLibraries puts a library op in place of every convolution kernel of
// the Net's plan (fp32 or tf32) and keeps every other launch in order:
// for each layer a forward op (bias and ReLU as the kernel had them), a
// data gradient (every layer but the first), a parameter gradient in
// place of the partial sums and their reduction, and the ReLU's gradient;
// each op's buffers hold what it touches, its precision flag is the
// asked one, the partial sums' buffer is gone, and the step's buffers
// flow as the kernels' do (each read after a write, no parameter read
// after its update).
func TestOnLibraries(t *testing.T) {
	for _, tc := range []struct {
		batch, side int
		from, to    string
	}{{2, 16, PrecisionFP32, PrecisionFP32}, {2, 16, PrecisionFP32, PrecisionTF32}, {2, 16, PrecisionTF32, PrecisionTF32}, {256, 256, PrecisionFP32, PrecisionTF32}, {3, 1, PrecisionFP32, PrecisionFP32}} {
		what := fmt.Sprintf("NetPlan(%d, %d) %s on cuDNN at %s", tc.batch, tc.side, tc.from, tc.to)
		p, err := NetPlan(tc.batch, tc.side, 1)
		if err != nil {
			t.Fatal(err)
		}
		if p, err = WithPrecision(p, tc.from); err != nil {
			t.Fatal(err)
		}
		before := clonePlanLaunches(p)
		lp, err := OnLibraries(p, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(before, clonePlanLaunches(p), func(a, b []Launch) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			t.Errorf("%s: OnLibraries changed its argument's launches", what)
		}
		tf32 := int32(0)
		if tc.to == PrecisionTF32 {
			tf32 = 1
		}
		checkLibraryLaunches(t, what, lp.Buffers, lp.Step, tf32)
		if fmt.Sprint(lp.Convert) != fmt.Sprint(p.Convert) {
			t.Errorf("%s: the conversion changed", what)
		}
		ops := map[string]int{}
		var kept []string
		for _, l := range lp.Step {
			if l.Module == cuda.LibraryModule {
				ops[l.Kernel]++
				continue
			}
			if replaced(l) {
				t.Errorf("%s: kernel %s left in the step", what, l.Kernel)
			}
			kept = append(kept, fmt.Sprint(l))
		}
		var want []string
		for _, l := range p.Step {
			if !replaced(l) {
				want = append(want, fmt.Sprint(l))
			}
		}
		if !slices.Equal(kept, want) {
			t.Errorf("%s: the kernels kept differ from the plan's other kernels", what)
		}
		layers := 0
		for _, l := range p.Step {
			if l.Kernel == "sgd_momentum" {
				layers++
			}
		}
		if w := map[string]int{cuda.OpConvForward: layers, cuda.OpConvBackwardData: layers - 1, cuda.OpConvBackwardParams: layers, cuda.OpReLUBackward: layers - 1}; fmt.Sprint(ops) != fmt.Sprint(w) {
			t.Errorf("%s: ops %v, want %v", what, ops, w)
		}
		if _, ok := lp.Buffer(bufPartial); ok || len(lp.Buffers) != len(p.Buffers)-1 {
			t.Errorf("%s: buffers %d (partial sums kept: %v), want the plan's %d less the partial sums", what, len(lp.Buffers), ok, len(p.Buffers))
		}
		if tc.batch == 2 && tc.side == 16 {
			stepDataflow(t, lp)
		}
	}
}

// OnLibrariesLaunches refuses a precision it does not know and partial
// sums whose reduction does not follow.
func TestOnLibrariesErrors(t *testing.T) {
	p, err := NetPlan(2, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OnLibraries(p, "fp16"); err == nil || !strings.Contains(err.Error(), `precision "fp16"`) {
		t.Errorf("fp16: %v", err)
	}
	var lone []Launch
	for _, l := range p.Step {
		if l.Kernel != "params_reduce" {
			lone = append(lone, l)
		}
	}
	if _, err := OnLibrariesLaunches(lone, PrecisionFP32); err == nil || !strings.Contains(err.Error(), "is not followed by the params_reduce") {
		t.Errorf("partial sums without their reduction: %v", err)
	}
}

// LibraryChecks are the checks that OnLibraries changes, each on cuDNN at
// its set's precision with LibraryTolerance times the kernels'
// tolerance: every convolution, parameter-gradient and ReLU-gradient
// check of Checks (fp32) and every TF32 check (tf32), and both steps.
func TestLibraryChecks(t *testing.T) {
	kernelChecks := map[string]Check{}
	for _, c := range append(Checks(1), TF32Checks(1)...) {
		kernelChecks[c.Name] = c
	}
	checks := LibraryChecks(1)
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
		base, ok := strings.CutSuffix(c.Name, " on cuDNN")
		k, found := kernelChecks[base]
		if !ok || !found {
			t.Errorf("%s: not a kernel check's name with \" on cuDNN\"", c.Name)
			continue
		}
		tf32 := int32(0)
		if strings.Contains(base, "tf32") {
			tf32 = 1
		}
		checkLibraryLaunches(t, c.Name, c.Buffers, c.Launches, tf32)
		for i, o := range c.Outputs {
			if o.Tol != k.Outputs[i].Tol*LibraryTolerance || !slices.Equal(o.Want, k.Outputs[i].Want) {
				t.Errorf("%s: output %s: tolerance %g, want %d × %g, same values", c.Name, o.Buf, o.Tol, LibraryTolerance, k.Outputs[i].Tol)
			}
		}
		for _, l := range c.Launches {
			if replaced(l) {
				t.Errorf("%s: kernel %s left", c.Name, l.Kernel)
			}
		}
	}
	want := 0
	for _, c := range append(Checks(1), TF32Checks(1)...) {
		if slices.ContainsFunc(c.Launches, replaced) {
			want++
		}
	}
	if len(checks) != want || !slices.Contains(names, "step uint8 x2 on cuDNN") || !slices.Contains(names, "relu_backward on cuDNN") {
		t.Errorf("%d library checks %q, want %d with both steps and relu_backward", len(checks), names, want)
	}
}
