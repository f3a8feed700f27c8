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
	for name, sig := range tf32Signatures {
		if sig != signatures["conv3x3_forward"] {
			t.Errorf("%s takes %q, conv3x3_forward %q: WithPrecision passes the same arguments", name, sig, signatures["conv3x3_forward"])
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
// conv3x3_forward_tf32 with the same arguments, leaves the rest and the
// original plan alone, and its launches fit the buffers and the PTX.
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
		convs := 0
		for i, l := range q.Step {
			fp := p.Step[i]
			if fp.Kernel == "conv3x3_forward" {
				convs++
				if l.Kernel != "conv3x3_forward_tf32" || l.Module != TF32Module || !reflect.DeepEqual(l.Args, fp.Args) {
					t.Errorf("launch %d: %s/%s %v, want the tf32 kernel with %v", i, l.Module, l.Kernel, l.Args, fp.Args)
				}
			} else if !reflect.DeepEqual(l, fp) {
				t.Errorf("launch %d (%s) changed", i, fp.Kernel)
			}
		}
		// Depth+2 forward convolutions, Depth+1 data gradients.
		if depth := int(math.Log2(float64(tc.side))); convs != 2*depth+3 {
			t.Errorf("side %d: %d convolutions converted, want %d", tc.side, convs, 2*depth+3)
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
// that are TF32Tolerance's and far above fp32's.
func TestTF32ChecksLaunches(t *testing.T) {
	checks := TF32Checks(1)
	if len(checks) != len(tf32Cases) {
		t.Fatalf("%d checks for %d cases", len(checks), len(tf32Cases))
	}
	for i, c := range checks {
		checkLaunches(t, c.Name, c.Buffers, c.Launches)
		if c.Name != tf32Cases[i].name() {
			t.Errorf("check %d is %q, case %q", i, c.Name, tf32Cases[i].name())
		}
		if len(c.Outputs) != 1 {
			t.Fatalf("%s: %d outputs", c.Name, len(c.Outputs))
		}
		o := c.Outputs[0]
		if !(o.Tol > 0 && o.Tol < 0.1) {
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
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Fatalf("g++ is needed to run the kernels on the host (make test-deps installs it): %v", err)
	}
	dir := t.TempDir()
	inc, err := fp32ConvSource()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "net_conv_fp32.inc"), inc, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "emulate_conv")
	out, err := exec.Command(gxx, "-std=c++17", "-O2", "-Wall", "-Werror", "-Wno-unknown-pragmas", "-pthread",
		"-I", dir, "-o", bin, filepath.Join("testdata", "emulate_conv.cc")).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ testdata/emulate_conv.cc: %v\n%s", err, out)
	}
	for i, c := range TF32Checks(7) {
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

// fp32ConvSource is net.cu's conv3x3_forward with its tiling's #defines,
// verbatim: from "// The tiling of conv3x3_forward" to the next kernel's
// comment.
func fp32ConvSource() ([]byte, error) {
	src, err := os.ReadFile("net.cu")
	if err != nil {
		return nil, err
	}
	from := bytes.Index(src, []byte("// The tiling of conv3x3_forward"))
	to := bytes.Index(src, []byte("// The value of lane+delta"))
	if from < 0 || to < from || !bytes.Contains(src[from:to], []byte(`extern "C" __global__ void conv3x3_forward(`)) {
		return nil, fmt.Errorf("net.cu: conv3x3_forward is no longer between its tiling comment and shfl_down's: update fp32ConvSource")
	}
	return src[from:to], nil
}

// runConvEmulator runs kernel (0 fp32, 1 tf32) at launch l's grid, block
// and arguments on the emulator and returns its outputs.
func runConvEmulator(t *testing.T, bin string, kernel int64, l Launch, in, params []byte, outs int) []float32 {
	t.Helper()
	a := func(k int) int64 { return int64(l.Args[k].(int32)) }
	var buf bytes.Buffer
	for _, v := range []int64{kernel, a(3), a(4), a(5), a(6), a(7), a(8),
		int64(l.Grid[0]), int64(l.Grid[1]), int64(l.Block[0]), int64(l.SharedBytes), int64(len(params) / 4)} {
		binary.Write(&buf, binary.LittleEndian, v)
	}
	if l.Grid[2] != 1 || l.Block[1] != 1 || l.Block[2] != 1 {
		t.Fatalf("%s: grid %v block %v: the emulator runs x×y grids of x blocks", l.Kernel, l.Grid, l.Block)
	}
	buf.Write(in)
	buf.Write(params)
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
