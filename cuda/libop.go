package cuda

import (
	"fmt"
)

// LibraryModule ops: a Launch whose Module is LibraryModule calls cuDNN on the
// program's DNN instead of launching a kernel. Its Kernel names the op,
// its Args are buffers and int32 values as for a kernel (signature
// below), Grid, Block and SharedBytes are not used. The program resolves
// an op's convolution (descriptors, the algorithm search, the workspace)
// when it is made, not in a step, so a step is the library calls alone
// (and CUDA Graphs can capture them). Buffer arguments are read from the
// program's argument slots at each step, so an op that names the plan's
// Input reads the uploaded batch as a kernel does.
//
// Every convolution is the Net's: 3×3, padding 1, stride 1, square
// side×side, c input and k output channels, on n samples; params holds
// the weights [k, c, 3, 3] then the k biases (cuda/netref's layout); tf32
// is 1 for TF32 tensor-op math, 0 for fp32 (FMA) math.
const (
	// LibraryModule is the Module of a library op.
	LibraryModule = "cudnn"

	// OpConvForward (x, params, y, n, c, k, side, relu, tf32):
	// y = ReLU(conv(x, w) + b), no ReLU when relu is 0.
	OpConvForward = "conv_forward"
	// OpConvBackwardData (dy, params, dx, n, c, k, side, tf32): the
	// input's gradient dx from the output's dy.
	OpConvBackwardData = "conv_backward_data"
	// OpConvBackwardParams (dy, x, grad, n, c, k, side, tf32): the
	// gradient of the weights then the biases, into grad (overwritten).
	OpConvBackwardParams = "conv_backward_params"
	// OpReLUBackward (g, y, count): g where y > 0, else 0, in place.
	OpReLUBackward = "relu_backward"
)

// libraryOps is each op's signature: p a buffer, i an int32.
var libraryOps = map[string]string{
	OpConvForward:        "pppiiiiii",
	OpConvBackwardData:   "pppiiiii",
	OpConvBackwardParams: "pppiiiii",
	OpReLUBackward:       "ppi",
}

// validateOp checks a library op's name and arguments against its
// signature.
func validateOp(i int, l Launch) error {
	sig, ok := libraryOps[l.Kernel]
	if !ok {
		return fmt.Errorf("cuda: plan: launch %d: no library op %q", i, l.Kernel)
	}
	if len(l.Args) != len(sig) {
		return fmt.Errorf("cuda: plan: launch %d (%s %s): %d arguments, want %d", i, LibraryModule, l.Kernel, len(l.Args), len(sig))
	}
	for j, a := range l.Args {
		_, isBuf := a.(Buf)
		v, isInt := a.(int32)
		switch {
		case sig[j] == 'p' && !isBuf:
			return fmt.Errorf("cuda: plan: launch %d (%s %s) argument %d: %T, want a buffer", i, LibraryModule, l.Kernel, j, a)
		case sig[j] == 'i' && !isInt:
			return fmt.Errorf("cuda: plan: launch %d (%s %s) argument %d: %T, want an int32", i, LibraryModule, l.Kernel, j, a)
		case sig[j] == 'i' && v < 0:
			return fmt.Errorf("cuda: plan: launch %d (%s %s) argument %d: %d", i, LibraryModule, l.Kernel, j, v)
		}
	}
	return nil
}

// libCall is a library op made ready in a program: its convolution
// (nil for the ReLU) and its flags.
type libCall struct {
	op    string
	conv  *Conv
	relu  bool
	count int
}

// hasLibraryOps reports whether any of lists calls the libraries.
func hasLibraryOps(lists [][]Launch) bool {
	for _, ls := range lists {
		for _, l := range ls {
			if l.Module == LibraryModule {
				return true
			}
		}
	}
	return false
}

// prepareOp makes launch l, a validated library op, ready on the
// program's DNN: the convolution of its shape and precision (searched
// once per shape on the Context).
func (p *program) prepareOp(l Launch) (*libCall, error) {
	arg := func(j int) int { return int(l.Args[j].(int32)) }
	lc := &libCall{op: l.Kernel}
	if l.Kernel == OpReLUBackward {
		lc.count = arg(2)
		if _, err := p.dnn.elem(lc.count); err != nil {
			return nil, err
		}
		return lc, nil
	}
	tf32 := arg(7)
	if l.Kernel == OpConvForward {
		lc.relu, tf32 = arg(7) != 0, arg(8)
	}
	precision := "fp32"
	if tf32 != 0 {
		precision = "tf32"
	}
	side := arg(6)
	cv, err := p.dnn.conv(ConvShape{N: arg(3), C: arg(4), H: side, W: side, K: arg(5), R: 3, S: 3, Pad: 1}, precision)
	if err != nil {
		return nil, err
	}
	lc.conv = cv
	return lc, nil
}

// call enqueues library op l on the DNN, with its buffers' pointers as
// the program's argument slots hold them now.
func (p *program) call(l *launch, stream uintptr) error {
	if err := p.dnn.setStream(stream); err != nil {
		return err
	}
	ptr := func(j int) uint64 { return p.vals[l.first+j] }
	lc := l.lib
	switch lc.op {
	case OpConvForward:
		return p.dnn.convForward(lc.conv, ptr(0), ptr(1), ptr(2), lc.relu)
	case OpConvBackwardData:
		return p.dnn.run(lc.conv, ConvBackwardData, ptr(0), ptr(1), ptr(2), false)
	case OpConvBackwardParams:
		return p.dnn.convBackwardParams(lc.conv, ptr(0), ptr(1), ptr(2))
	case OpReLUBackward:
		return p.dnn.reluBackward(ptr(0), ptr(1), lc.count)
	}
	return fmt.Errorf("cuda: library op %q", lc.op)
}
