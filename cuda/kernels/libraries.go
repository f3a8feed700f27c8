package kernels

import (
	"fmt"
	"slices"

	"github.com/headspace-bench/headspace/cuda"
)

// The Net on cuDNN (issue 57): OnLibraries puts cuDNN's calls (package
// cuda's library ops) in place of the Net's convolution kernels, so the
// same plan, buffers and checks run on the libraries PyTorch's
// Conv2d and ReLU use. The pooling, the loss, the update and the
// conversions stay the kernels' (PyTorch's MaxPool2d, cross-entropy
// and SGD are its own CUDA kernels too, not cuDNN's). The Net has no
// layer cuBLAS would run: its logits come from a 3×3 convolution at
// 1×1 (conv_out), which PyTorch runs on cuDNN as well.

// LibraryTolerance is how much wider than the kernels' a check's
// tolerance is on cuDNN: the kernels' bounds assume a direct sum (one
// product a tap, in some order), and cuDNN's search may pick an
// algorithm that transforms its inputs (Winograd, FFT), whose fp32
// rounding error is larger by the transform's growth. The factor is an
// allowance, not a derivation; an exact output (tolerance 0) stays exact.
const LibraryTolerance = 10

// OnLibraries returns plan p with every convolution kernel replaced by
// cuDNN at precision (fp32: FMA math; tf32: tensor-op math), as
// OnLibrariesLaunches does to each launch list, and the partial sums'
// buffer dropped where nothing reads it any more. p may be the fp32
// plan or the tf32 one (WithPrecision); its lists are copied, not
// modified.
func OnLibraries(p Plan, precision string) (Plan, error) {
	conv, err := OnLibrariesLaunches(p.Convert, precision)
	if err != nil {
		return Plan{}, err
	}
	step, err := OnLibrariesLaunches(p.Step, precision)
	if err != nil {
		return Plan{}, err
	}
	p.Convert, p.Step = conv, step
	named := map[string]bool{}
	for _, ls := range [][]Launch{conv, step} {
		for _, l := range ls {
			for _, a := range l.Args {
				if b, ok := a.(Buf); ok {
					named[b.Name] = true
				}
			}
		}
	}
	p.Buffers = slices.DeleteFunc(slices.Clone(p.Buffers), func(b Buffer) bool { return b.Name == bufPartial && !named[b.Name] })
	return p, nil
}

// OnLibrariesLaunches returns ls with each convolution kernel as the
// library op that computes the same, at precision:
//
//   - conv3x3_forward (or its tf32 kernel) is cuda.OpConvForward
//     (convolution, bias, ReLU where the launch has one), or, with the
//     weights transposed, cuda.OpConvBackwardData;
//   - conv3x3_backward_params_partial (or its tf32 kernel) and the
//     params_reduce that sums its partial sums are one
//     cuda.OpConvBackwardParams (weights and biases);
//   - relu_backward is cuda.OpReLUBackward.
//
// Every other launch is kept. A partial-sums launch not followed by the
// reduction of its buffer is an error.
func OnLibrariesLaunches(ls []Launch, precision string) ([]Launch, error) {
	var tf32 int32
	switch precision {
	case PrecisionFP32:
	case PrecisionTF32:
		tf32 = 1
	default:
		return nil, fmt.Errorf("kernels: precision %q: want fp32 or tf32", precision)
	}
	lib := func(op string, args ...Arg) Launch {
		return Launch{Module: cuda.LibraryModule, Kernel: op, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Args: args}
	}
	var out []Launch
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		if l.Module != Module && l.Module != TF32Module {
			out = append(out, l)
			continue
		}
		a := l.Args
		switch l.Kernel {
		case "conv3x3_forward", "conv3x3_forward_tf32":
			// in, params, out, n, cin, cout, side, relu, transposed
			if a[8].(int32) != 0 {
				// The data gradient: from the layer's outputs (cin here)
				// to its inputs (cout here).
				out = append(out, lib(cuda.OpConvBackwardData, a[0], a[1], a[2], a[3], a[5], a[4], a[6], tf32))
				continue
			}
			out = append(out, lib(cuda.OpConvForward, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], tf32))
		case "conv3x3_backward_params_partial", "conv3x3_backward_params_tf32":
			// gout, in, partial, n, cin, cout, side, chunk; then
			// params_reduce(partial, grad, count, chunks).
			if i+1 >= len(ls) || ls[i+1].Kernel != "params_reduce" || ls[i+1].Args[0] != a[2] {
				return nil, fmt.Errorf("kernels: launch %d (%s) is not followed by the params_reduce of %v", i, l.Kernel, a[2])
			}
			out = append(out, lib(cuda.OpConvBackwardParams, a[0], a[1], ls[i+1].Args[1], a[3], a[4], a[5], a[6], tf32))
			i++
		case "relu_backward":
			out = append(out, lib(cuda.OpReLUBackward, a[0], a[1], a[2]))
		default:
			out = append(out, l)
		}
	}
	return out, nil
}

// LibraryChecks are the checks of Checks and TF32Checks (seed) whose
// launches OnLibrariesLaunches changes, on cuDNN: Checks at fp32 and
// TF32Checks at tf32, each named with " on cuDNN" and its tolerance
// LibraryTolerance times the kernels'. The others (the pooling, the
// loss, the update, the conversions) launch the same kernels on either
// backend, and Checks has them.
func LibraryChecks(seed uint64) []Check {
	var out []Check
	for _, set := range []struct {
		checks    []Check
		precision string
	}{{Checks(seed), PrecisionFP32}, {TF32Checks(seed), PrecisionTF32}} {
		for _, ch := range set.checks {
			ls, err := OnLibrariesLaunches(ch.Launches, set.precision)
			if err != nil {
				panic(err) // the checks' launches are the plans' own
			}
			if slices.EqualFunc(ls, ch.Launches, func(a, b Launch) bool { return a.Module == b.Module && a.Kernel == b.Kernel }) {
				continue
			}
			ch.Name += " on cuDNN"
			ch.Launches = ls
			ch.Outputs = slices.Clone(ch.Outputs)
			for i := range ch.Outputs {
				ch.Outputs[i].Tol *= LibraryTolerance
			}
			out = append(out, ch)
		}
	}
	return out
}
