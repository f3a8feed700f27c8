package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/headspace-bench/headspace/cuda/netref"
)

// TestTF32Signatures checks the Go side's view of net_tf32.cu's kernels
// against net_tf32.ptx, and that the PTX really uses the tensor cores.
func TestTF32Signatures(t *testing.T) {
	checkSignatures(t, TF32Module, tf32Signatures)
	fp32 := map[string]string{"conv3x3_forward_tf32": "conv3x3_forward", "conv3x3_backward_params_tf32": "conv3x3_backward_params_partial"}
	for name, sig := range tf32Signatures {
		if of := fp32[name]; of == "" || sig != signatures[of] {
			t.Errorf("%s takes %q, %s %q: WithPrecision passes the same arguments", name, sig, of, signatures[of])
		}
	}
	for _, instr := range []string{"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cvt.rna.tf32.f32", "bar.sync"} {
		if !bytes.Contains(Modules[TF32Module], []byte(instr)) {
			t.Errorf("net_tf32.ptx has no %s", instr)
		}
	}
}

// TestWithPrecision: fp32 is the plan itself; tf32 replaces exactly the
// conv3x3_forward launches (forward and data gradient) by
// conv3x3_forward_tf32 and the conv3x3_backward_params_partial launches by
// conv3x3_backward_params_tf32, with the same arguments, leaves the rest
// (params_reduce included) and the original plan alone, and its launches
// fit the buffers and the PTX.
func TestWithPrecision(t *testing.T) {
	for _, tc := range []struct{ batch, side int }{{2, 16}, {3, 1}, {256, 256}} {
		p, err := NetPlan(tc.batch, tc.side, 1)
		if err != nil {
			t.Fatal(err)
		}
		orig := clonePlanLaunches(p)
		same, err := WithPrecision(p, PrecisionFP32)
		if err != nil || !reflect.DeepEqual(same, p) {
			t.Errorf("fp32: %v, or the plan changed", err)
		}
		q, err := WithPrecision(p, PrecisionTF32)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(clonePlanLaunches(p), orig) {
			t.Error("WithPrecision modified its argument's launches")
		}
		if len(q.Step) != len(p.Step) {
			t.Fatalf("tf32: %d launches, fp32 %d", len(q.Step), len(p.Step))
		}
		convs, grads := 0, 0
		for i, l := range q.Step {
			fp := p.Step[i]
			tf32 := map[string]string{"conv3x3_forward": "conv3x3_forward_tf32", "conv3x3_backward_params_partial": "conv3x3_backward_params_tf32"}[fp.Kernel]
			if tf32 != "" {
				if fp.Kernel == "conv3x3_forward" {
					convs++
				} else {
					grads++
				}
				if l.Kernel != tf32 || l.Module != TF32Module || !reflect.DeepEqual(l.Args, fp.Args) {
					t.Errorf("launch %d: %s/%s %v, want %s with %v", i, l.Module, l.Kernel, l.Args, tf32, fp.Args)
				}
			} else if !reflect.DeepEqual(l, fp) {
				t.Errorf("launch %d (%s) changed", i, fp.Kernel)
			}
		}
		// Depth+2 forward convolutions, Depth+1 data gradients.
		if depth := int(math.Log2(float64(tc.side))); convs != 2*depth+3 {
			t.Errorf("side %d: %d convolutions converted, want %d", tc.side, convs, 2*depth+3)
		}
		// A parameter gradient per convolution.
		if depth := int(math.Log2(float64(tc.side))); grads != depth+2 {
			t.Errorf("side %d: %d parameter gradients converted, want %d", tc.side, grads, depth+2)
		}
		checkLaunches(t, fmt.Sprintf("tf32 NetPlan(%d, %d)", tc.batch, tc.side), q.Buffers, q.Step)
	}
	if _, err := WithPrecision(Plan{}, "fp16"); err == nil {
		t.Error("precision fp16 was accepted")
	}
}

func clonePlanLaunches(p Plan) [][]Launch {
	return [][]Launch{append([]Launch(nil), p.Convert...), append([]Launch(nil), p.Step...)}
}

// TestTF32ChecksLaunches checks TF32Checks as TestChecksLaunches checks
// Checks: launches that fit, outputs that are not all zero, tolerances
// under 5% of the largest expected value.
func TestTF32ChecksLaunches(t *testing.T) {
	checks := TF32Checks(1)
	if len(checks) != len(tf32Cases)+len(tf32ParamsCases) {
		t.Fatalf("%d checks for %d+%d cases", len(checks), len(tf32Cases), len(tf32ParamsCases))
	}
	for i, c := range checks {
		checkLaunches(t, c.Name, c.Buffers, c.Launches)
		name := ""
		if i < len(tf32Cases) {
			name = tf32Cases[i].name()
		} else {
			name = tf32ParamsCases[i-len(tf32Cases)].name()
			if len(c.Launches) != 2 || c.Launches[0].Kernel != "conv3x3_backward_params_tf32" || c.Launches[1].Kernel != "params_reduce" {
				t.Errorf("%s: launches %v, want the tf32 partial sums and params_reduce", c.Name, c.Launches)
			}
		}
		if c.Name != name {
			t.Errorf("check %d is %q, case %q", i, c.Name, name)
		}
		if len(c.Outputs) != 1 {
			t.Fatalf("%s: %d outputs", c.Name, len(c.Outputs))
		}
		o := c.Outputs[0]
		if !(o.Tol > 0 && o.Tol < 0.05*maxAbs(o.Want)) {
			t.Errorf("%s: tolerance %g", c.Name, o.Tol)
		}
		nonzero := false
		for _, v := range o.Want {
			nonzero = nonzero || v != 0
		}
		if !nonzero {
			t.Errorf("%s: every expected value is 0", c.Name)
		}
	}
}

// TestTF32KernelsOnHost runs net_tf32.cu's conv3x3_forward_tf32 on the CPU:
// the same source, compiled as C++ by g++ with testdata/hostshim.h (each
// block's 128 threads as host threads, __syncthreads a barrier, shared
// memory shared, mma.sync emulated from the PTX ISA's m16n8k8 .tf32
// fragment layouts with operands that must be TF32, cvt.rna.tf32.f32
// emulated), at each TF32Checks launch's grid and block, on its inputs.
// Each output must be within the check's derived tolerance of the float64
// reference (what cuda check asks of the GPU), and within twice it of
// net.cu's fp32 conv3x3_forward, run the same way (its text copied from
// net.cu), which must itself be within fp32's 1e-5 of the reference. The
// errors must be TF32's: on the cases of 27 taps or more, above fp32's by
// an order of magnitude, so an emulation that did not round would fail;
// and at least 1% of the tolerance, so the bound is not vacuous.
// What this cannot test is the PTX itself (a GPU's cuda check does).
func TestTF32KernelsOnHost(t *testing.T) {
	bin := buildConvEmulator(t)
	for i, c := range TF32Checks(7)[:len(tf32Cases)] {
		tc := tf32Cases[i]
		t.Run(c.Name, func(t *testing.T) {
			in, params := c.Buffers[0].Init, c.Buffers[1].Init
			want := c.Outputs[0]
			tf32 := runConvEmulator(t, bin, 1, c.Launches[0], in, params, len(want.Want))
			cv := netref.Conv{In: tc.cin, Out: tc.cout, Side: tc.side, ReLU: tc.relu}
			fpLaunch := convForward("in", "params", "out", tc.n, cv)
			if tc.transposed {
				fpLaunch = convBackwardData("in", "params", "out", tc.n, cv)
			}
			fp32 := runConvEmulator(t, bin, 0, fpLaunch, in, params, len(want.Want))
			if err := want.Compare(tf32); err != nil {
				t.Errorf("tf32 against netref: %v", err)
			}
			fpWant := Output{Buf: "out", Want: want.Want, Tol: max(1e-5*maxAbs(want.Want), 1e-7)}
			if err := fpWant.Compare(fp32); err != nil {
				t.Errorf("fp32 against netref: %v", err)
			}
			vsFP32 := Output{Buf: "out", Want: fp32, Tol: 2 * want.Tol}
			if err := vsFP32.Compare(tf32); err != nil {
				t.Errorf("tf32 against fp32: %v", err)
			}
			errTF32, errFP32 := maxDiff(tf32, want.Want), maxDiff(fp32, want.Want)
			t.Logf("max error: tf32 %.3g, fp32 %.3g; tf32 tolerance %.3g (%.1f%% used)", errTF32, errFP32, want.Tol, 100*errTF32/want.Tol)
			if tc.taps() >= 27 && !(errTF32 > 10*errFP32) {
				t.Errorf("tf32's error %g is not TF32's: fp32's is %g", errTF32, errFP32)
			}
			if errTF32 < want.Tol/100 {
				t.Errorf("tf32's error %g uses under 1%% of the tolerance %g: the bound is loose by orders of magnitude", errTF32, want.Tol)
			}
		})
	}
}

// TestTF32ParamsKernelOnHost runs net_tf32.cu's
// conv3x3_backward_params_tf32 on the CPU as TestTF32KernelsOnHost runs
// the forward kernel, then net.cu's params_reduce on its partial sums
// (text copied from net.cu), at each TF32Checks parameter-gradient
// check's launches, on its inputs. Each gradient must be within the
// check's derived tolerance (TF32ParamsTolerance) of netref's, and
// within twice it of the same chunked sums in float32 (fp32Params: what
// net.cu's fp32 kernels compute, in one order of the additions), which
// must be within fp32's 1e-5 of netref. The errors must be TF32's: ten
// times fp32's, and at least 1% of the bound. (net.cu's fp32
// conv3x3_backward_params_partial is not emulated: its shuffle
// reductions in 256-thread blocks take minutes as host threads.)
func TestTF32ParamsKernelOnHost(t *testing.T) {
	bin := buildConvEmulator(t)
	checks := TF32Checks(7)[len(tf32Cases):]
	if len(checks) != len(tf32ParamsCases) {
		t.Fatalf("%d parameter-gradient checks for %d cases", len(checks), len(tf32ParamsCases))
	}
	for i, c := range checks {
		tc := tf32ParamsCases[i]
		t.Run(c.Name, func(t *testing.T) {
			gout, in := c.Buffers[0].Init, c.Buffers[1].Init
			want := c.Outputs[0]
			tf32 := runParamsEmulator(t, bin, c.Launches, gout, in, len(want.Want))
			fp32 := fp32Params(tc, gout, in)
			if err := want.Compare(tf32); err != nil {
				t.Errorf("tf32 against netref: %v", err)
			}
			fpWant := Output{Buf: "grad", Want: want.Want, Tol: max(1e-5*maxAbs(want.Want), 1e-7)}
			if err := fpWant.Compare(fp32); err != nil {
				t.Errorf("fp32 against netref: %v", err)
			}
			vsFP32 := Output{Buf: "grad", Want: fp32, Tol: 2 * want.Tol}
			if err := vsFP32.Compare(tf32); err != nil {
				t.Errorf("tf32 against fp32: %v", err)
			}
			errTF32, errFP32 := maxDiff(tf32, want.Want), maxDiff(fp32, want.Want)
			t.Logf("max error: tf32 %.3g, fp32 %.3g; tf32 tolerance %.3g (%.1f%% used)", errTF32, errFP32, want.Tol, 100*errTF32/want.Tol)
			if !(errTF32 > 10*errFP32) {
				t.Errorf("tf32's error %g is not TF32's: fp32's is %g", errTF32, errFP32)
			}
			if errTF32 < want.Tol/100 {
				t.Errorf("tf32's error %g uses under 1%% of the tolerance %g: the bound is loose by orders of magnitude", errTF32, want.Tol)
			}
		})
	}
}

// TestTF32ParamsTolerance pins the bound's arithmetic: with no rounding
// of sums (one position, one chunk) it is the operands' 2u+u² and the two
// roundings; it grows with the chunk and with the chunks, and at the
// document's first layer it is about 2.0e-3 of absSum.
func TestTF32ParamsTolerance(t *testing.T) {
	u := math.Ldexp(1, -11)
	if got, want := TF32ParamsTolerance(1, 1, 1), (1+2*u+u*u)*math.Pow(1+math.Ldexp(1, -24), 2)-1; math.Abs(got-want) > 1e-15 {
		t.Errorf("one product: %g, want %g", got, want)
	}
	if !(TF32ParamsTolerance(1, 1<<20, 1<<14) > TF32ParamsTolerance(1, 1<<20, 1<<12)) ||
		!(TF32ParamsTolerance(1, 1<<20, 1<<14) > TF32ParamsTolerance(1, 1<<16, 1<<14)) {
		t.Error("the bound does not grow with the sums' lengths")
	}
	doc := TF32ParamsTolerance(1, 256*256*256, ChunkPositions)
	if first := math.Ldexp(1, -10) + math.Ldexp(1, -22) + float64(ChunkPositions+1024)*math.Ldexp(1, -24); math.Abs(doc-first) > 1e-3*first {
		t.Errorf("document's first layer: %g, its first-order value %g", doc, first)
	}
	if TF32ParamsTolerance(3, 100, 10) != 3*TF32ParamsTolerance(1, 100, 10) {
		t.Error("the bound is not proportional to absSum")
	}
}

// buildConvEmulator compiles testdata/emulate_conv.cc with g++, with
// net.cu's fp32 kernels' text beside it.
func buildConvEmulator(t *testing.T) string {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Fatalf("g++ is needed to run the kernels on the host (make test-deps installs it): %v", err)
	}
	dir := t.TempDir()
	for name, source := range map[string]func() ([]byte, error){"net_conv_fp32.inc": fp32ConvSource, "net_reduce.inc": reduceSource} {
		inc, err := source()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), inc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "emulate_conv")
	out, err := exec.Command(gxx, "-std=c++17", "-O2", "-Wall", "-Werror", "-Wno-unknown-pragmas", "-pthread",
		"-I", dir, "-o", bin, filepath.Join("testdata", "emulate_conv.cc")).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ testdata/emulate_conv.cc: %v\n%s", err, out)
	}
	return bin
}

// netSource is net.cu's text from the line starting from up to the one
// starting to, which must hold each of kernels.
func netSource(from, to string, kernels ...string) ([]byte, error) {
	src, err := os.ReadFile("net.cu")
	if err != nil {
		return nil, err
	}
	i := bytes.Index(src, []byte(from))
	j := bytes.Index(src, []byte(to))
	if i < 0 || j < i {
		return nil, fmt.Errorf("net.cu: no %q before %q: update the test's copy of net.cu's kernels", from, to)
	}
	for _, k := range kernels {
		if !bytes.Contains(src[i:j], []byte(`extern "C" __global__ void `+k+`(`)) {
			return nil, fmt.Errorf("net.cu: %s is no longer between %q and %q: update the test's copy of net.cu's kernels", k, from, to)
		}
	}
	return src[i:j], nil
}

// fp32ConvSource is net.cu's conv3x3_forward with its tiling's #defines,
// verbatim: from "// The tiling of conv3x3_forward" to the next kernel's
// comment.
func fp32ConvSource() ([]byte, error) {
	return netSource("// The tiling of conv3x3_forward", "// The value of lane+delta", "conv3x3_forward")
}

// reduceSource is net.cu's params_reduce, verbatim: from its comment to
// relu_backward's.
func reduceSource() ([]byte, error) {
	return netSource("// grad[j] = sum over c < chunks", "// g[j] = 0 where y[j] <= 0", "params_reduce")
}

// fp32Params is case c's parameter gradient summed in float32 as net.cu's
// fp32 kernels sum it: each chunk's products added in position order, then
// the chunks' sums in chunk order.
func fp32Params(c tf32ParamsCase, goutBytes, inBytes []byte) []float32 {
	f32 := func(b []byte) []float32 {
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v
	}
	gout, in := f32(goutBytes), f32(inBytes)
	side, area, taps := c.side, c.side*c.side, c.cin*9
	plen := c.conv().ParamLen()
	grad := make([]float32, plen)
	partial := make([]float32, plen)
	for start := 0; start < c.positions(); start += c.chunk {
		clear(partial)
		for q := start; q < min(start+c.chunk, c.positions()); q++ {
			s, y, x := q/area, q%area/side, q%side
			for o := range c.cout {
				d := gout[(s*c.cout+o)*area+y*side+x]
				partial[c.cout*taps+o] += d
				for k := range taps {
					i, ky, kx := k/9, k%9/3, k%3
					if yy, xx := y+ky-1, x+kx-1; yy >= 0 && yy < side && xx >= 0 && xx < side {
						partial[o*taps+k] += d * in[(s*c.cin+i)*area+yy*side+xx]
					}
				}
			}
		}
		for j := range grad {
			grad[j] += partial[j]
		}
	}
	return grad
}

// runParamsEmulator runs conv3x3_backward_params_tf32 at launches' grids
// and blocks (the partial sums, then params_reduce) and returns the
// gradient.
func runParamsEmulator(t *testing.T, bin string, launches []Launch, gout, in []byte, plen int) []float32 {
	t.Helper()
	if len(launches) != 2 || launches[1].Kernel != "params_reduce" {
		t.Fatalf("launches %v: want the partial sums and params_reduce", launches)
	}
	l, r := launches[0], launches[1]
	a := func(k int) int64 { return int64(l.Args[k].(int32)) }
	return emulate(t, bin, l, []int64{3, a(3), a(4), a(5), a(6), 0, 0,
		int64(l.Grid[0]), int64(l.Grid[1]), int64(l.Block[0]), int64(l.SharedBytes), int64(plen),
		a(7), int64(r.Args[3].(int32)), int64(r.Grid[0]), int64(r.Block[0])}, plen, gout, in)
}

// runConvEmulator runs kernel (0 fp32, 1 tf32) at launch l's grid, block
// and arguments on the emulator and returns its outputs.
func runConvEmulator(t *testing.T, bin string, kernel int64, l Launch, in, params []byte, outs int) []float32 {
	t.Helper()
	a := func(k int) int64 { return int64(l.Args[k].(int32)) }
	return emulate(t, bin, l, []int64{kernel, a(3), a(4), a(5), a(6), a(7), a(8),
		int64(l.Grid[0]), int64(l.Grid[1]), int64(l.Block[0]), int64(l.SharedBytes), int64(len(params) / 4), 0, 0, 0, 0},
		outs, in, params)
}

// emulate runs the emulator with header and inputs on stdin (see
// emulate_conv.cc) and returns the outs floats it writes.
func emulate(t *testing.T, bin string, l Launch, header []int64, outs int, inputs ...[]byte) []float32 {
	t.Helper()
	var buf bytes.Buffer
	for _, v := range header {
		binary.Write(&buf, binary.LittleEndian, v)
	}
	if l.Grid[2] != 1 || l.Block[1] != 1 || l.Block[2] != 1 {
		t.Fatalf("%s: grid %v block %v: the emulator runs x×y grids of x blocks", l.Kernel, l.Grid, l.Block)
	}
	for _, in := range inputs {
		buf.Write(in)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &buf
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("emulate_conv %s: %v\n%s", l.Kernel, err, stderr.Bytes())
	}
	if len(got) != 4*outs {
		t.Fatalf("emulate_conv %s wrote %d bytes, want %d floats", l.Kernel, len(got), outs)
	}
	v := make([]float32, outs)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))
	}
	return v
}

func maxAbs(v []float32) float64 {
	var m float64
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	return m
}

func maxDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}
