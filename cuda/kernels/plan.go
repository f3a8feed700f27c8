package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/headspace-bench/headspace/cuda/netref"
	"github.com/headspace-bench/headspace/datasets/transforms"
)

// ChunkPositions is how many of a layer's batch×height×width positions one
// block of conv3x3_backward_params_partial sums: 64 per thread. The
// document's first layers have 256×256×256 = 16.7M, so 1024 blocks share
// each weight's sum.
const ChunkPositions = 64 * Threads

// maxGridY is CUDA's limit on a grid's y dimension.
const maxGridY = 65535

// NetPlan is the document's Net (netref.Document's channels and classes) at
// batch samples of 3×side×side, trained with the document's SGD: side must
// be a power of two, 2^k, and the Net then has k conv+ReLU+MaxPool stages
// so that its last convolution sees 1×1, as the document's 256 = 2^8 with
// eight. Its parameters are netref's Init(seed) in float32. Every tensor
// must hold fewer than 2^31 values (batch ≤ 1092 at side 256).
func NetPlan(batch, side int, seed uint64) (Plan, error) {
	if side < 1 || side&(side-1) != 0 {
		return Plan{}, fmt.Errorf("kernels: side %d must be a power of two (the Net pools down to 1x1)", side)
	}
	c := netref.Document()
	c.Batch, c.Side, c.Depth = batch, side, bits.TrailingZeros(uint(side))
	return netPlan(c, seed, netref.DocumentSGD, ChunkPositions)
}

// Buffer names of a plan.
const (
	bufInput   = "input"
	bufInputU8 = "input.u8"
	bufLabels  = "labels"
	bufLoss    = "loss"
	bufGradA   = "grad.a" // the backward pass's gradients, ping-ponged
	bufGradB   = "grad.b"
	bufPartial = "params.partial" // the parameter gradients' partial sums
)

func paramBuf(l int) string { return fmt.Sprintf("conv%d.param", l) } // weights then biases
func gradBuf(l int) string  { return fmt.Sprintf("conv%d.grad", l) }  // their gradient
func momBuf(l int) string   { return fmt.Sprintf("conv%d.mom", l) }   // SGD's momentum
func outBuf(l int) string   { return fmt.Sprintf("conv%d.out", l) }   // the output, after the ReLU
func poolBuf(l int) string  { return fmt.Sprintf("conv%d.pool", l) }  // the pooled output

// inputOf is the buffer convolution l reads.
func inputOf(convs []netref.Conv, l int) string {
	switch {
	case l == 0:
		return bufInput
	case convs[l-1].Pool:
		return poolBuf(l - 1)
	}
	return outBuf(l - 1)
}

// chunks is how many blocks share each parameter's sum over positions.
func chunks(positions, chunk int64) int64 { return (positions + chunk - 1) / chunk }

// netPlan builds the plan of c, with chunk positions per partial-sum block.
func netPlan(c netref.Config, seed uint64, opt netref.SGD, chunk int) (Plan, error) {
	if err := c.Validate(); err != nil {
		return Plan{}, fmt.Errorf("kernels: %w", err)
	}
	largest, partial, err := planSizes(c, chunk)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Modules: Modules, Input: bufInput, InputU8: bufInputU8, Labels: bufLabels, Loss: bufLoss}
	p.Buffers = netBuffers(c, seed, largest, partial)
	p.Convert = []Launch{convertScale(bufInputU8, bufInput, c.Batch, c.Side*c.Side)}
	p.Step = netStep(c, opt, chunk)
	return p, nil
}

// planSizes is the largest activation (values) and the largest partial
// sums of a parameter gradient that a step of the Net at c needs, or why
// the kernels cannot take it.
func planSizes(c netref.Config, chunk int) (largest, partial int64, err error) {
	convs := c.Convs()
	n := int64(c.Batch)
	largest, partial = n*3*int64(c.Side)*int64(c.Side), int64(0)
	for _, cv := range convs {
		area := int64(cv.Side) * int64(cv.Side)
		largest = max(largest, n*int64(max(cv.In, cv.Out))*area)
		k := chunks(n*area, int64(chunk))
		if k > maxGridY {
			return 0, 0, fmt.Errorf("kernels: %d positions at %dx%d need %d blocks of %d, over CUDA's %d", n*area, cv.Side, cv.Side, k, chunk, maxGridY)
		}
		partial = max(partial, k*int64(cv.ParamLen()))
	}
	if largest >= math.MaxInt32 {
		return 0, 0, fmt.Errorf("kernels: batch %d at %dx%d makes a tensor of %d values; the kernels index with int32, keep it under 2^31", c.Batch, c.Side, c.Side, largest)
	}
	return largest, partial, nil
}

// netBuffers are the step's buffers: input, labels, loss, two gradient
// buffers of largest values, the partial sums, and each convolution's
// parameters (initialised from seed), gradient, momentum and outputs.
func netBuffers(c netref.Config, seed uint64, largest, partial int64) []Buffer {
	convs := c.Convs()
	n := int64(c.Batch)
	var bufs []Buffer
	add := func(name string, bytes int64, init []byte) {
		bufs = append(bufs, Buffer{Name: name, Bytes: bytes, Init: init})
	}
	add(bufInput, 4*int64(c.InputLen()), nil)
	add(bufInputU8, int64(c.InputLen()), nil)
	add(bufLabels, 4*n, nil)
	add(bufLoss, 4, nil)
	add(bufGradA, 4*largest, nil)
	add(bufGradB, 4*largest, nil)
	add(bufPartial, 4*partial, nil)
	for l, params := range c.Init(seed) {
		cv := convs[l]
		add(paramBuf(l), 4*int64(cv.ParamLen()), float32Bytes(params))
		add(gradBuf(l), 4*int64(cv.ParamLen()), nil)
		add(momBuf(l), 4*int64(cv.ParamLen()), nil)
		area := int64(cv.Side) * int64(cv.Side)
		add(outBuf(l), 4*n*int64(cv.Out)*area, nil)
		if cv.Pool {
			add(poolBuf(l), 4*n*int64(cv.Out)*area/4, nil)
		}
	}
	return bufs
}

// netStep is the step's launches: forward, loss, backward, and the update
// after every gradient.
func netStep(c netref.Config, opt netref.SGD, chunk int) []Launch {
	convs := c.Convs()
	n := int64(c.Batch)
	var step []Launch
	// Forward.
	for l, cv := range convs {
		step = append(step, convForward(inputOf(convs, l), paramBuf(l), outBuf(l), c.Batch, cv))
		if cv.Pool {
			step = append(step, launch1D("maxpool2_forward", n*int64(cv.Out*cv.Side*cv.Side/4),
				Buf{Name: outBuf(l)}, Buf{Name: poolBuf(l)}, int32(c.Batch*cv.Out), int32(cv.Side)))
		}
	}
	// Loss: the logits' gradient goes to grad.a.
	last := len(convs) - 1
	step = append(step, softmaxCrossEntropy(outBuf(last), bufLabels, bufGradA, bufLoss, c.Batch, c.Classes))
	// Backward: cur holds the gradient of convolution l's final output.
	cur, other := bufGradA, bufGradB
	for l := last; l >= 0; l-- {
		cv := convs[l]
		count := n * int64(cv.Out*cv.Side*cv.Side)
		if cv.Pool {
			step = append(step, launch1D("maxpool2_backward", count,
				Buf{Name: outBuf(l)}, Buf{Name: cur}, Buf{Name: other}, int32(c.Batch*cv.Out), int32(cv.Side)))
			cur, other = other, cur
		}
		if cv.ReLU {
			step = append(step, launch1D("relu_backward", count, Buf{Name: cur}, Buf{Name: outBuf(l)}, int32(count)))
		}
		step = append(step, convBackwardParams(cur, inputOf(convs, l), bufPartial, gradBuf(l), c.Batch, cv, chunk)...)
		if l > 0 {
			step = append(step, convBackwardData(cur, paramBuf(l), other, c.Batch, cv))
			cur, other = other, cur
		}
	}
	// The update, after every gradient (the backward pass reads the
	// parameters of the step's forward pass).
	for l, cv := range convs {
		step = append(step, sgdMomentum(paramBuf(l), momBuf(l), gradBuf(l), cv.ParamLen(), opt))
	}
	return step
}

// The tiling of conv3x3_forward and conv3x3_backward_params_partial, as
// net.cu defines it: output channels and pixels per thread, the forward
// kernel's block, and output channels per partial-sum block.
const (
	convOB      = 10
	convPX      = 4
	convThreads = 128
	convPO      = 5
)

// convLaunch is conv3x3_forward from cin to cout channels at side, on
// n samples: (ceil(n·side·ceil(side/convPX) / convThreads),
// ceil(cout/convOB)) blocks of convThreads, each with its channels'
// weights in cin·9·convOB floats of shared memory.
func convLaunch(in, params, out string, n, cin, cout, side int, relu, transposed bool) Launch {
	quads := (int64(side) + convPX - 1) / convPX
	threads := int64(n) * int64(side) * quads
	return Launch{Module: Module, Kernel: "conv3x3_forward",
		Grid:        [3]uint32{uint32((threads + convThreads - 1) / convThreads), uint32((cout + convOB - 1) / convOB), 1},
		Block:       [3]uint32{convThreads, 1, 1},
		SharedBytes: uint32(4 * cin * 9 * convOB),
		Args: []Arg{Buf{Name: in}, Buf{Name: params}, Buf{Name: out}, int32(n), int32(cin), int32(cout), int32(side),
			boolArg(relu), boolArg(transposed)}}
}

func boolArg(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func convForward(in, params, out string, n int, cv netref.Conv) Launch {
	return convLaunch(in, params, out, n, cv.In, cv.Out, cv.Side, cv.ReLU, false)
}

// convBackwardData is the data gradient: conv3x3_forward from the Out
// channels of gout to the In channels of gin, with the kernel transposed
// and flipped.
func convBackwardData(gout, params, gin string, n int, cv netref.Conv) Launch {
	return convLaunch(gout, params, gin, n, cv.Out, cv.In, cv.Side, false, true)
}

// convBackwardParams is the two launches of a parameter gradient: the
// partial sums, block (o/convPO·In + i, chunk), then their reduction into
// grad.
func convBackwardParams(gout, in, partial, grad string, n int, cv netref.Conv, chunk int) []Launch {
	k := chunks(int64(n)*int64(cv.Side*cv.Side), int64(chunk))
	groups := (cv.Out + convPO - 1) / convPO
	return []Launch{
		{Module: Module, Kernel: "conv3x3_backward_params_partial",
			Grid: [3]uint32{uint32(groups * cv.In), uint32(k), 1}, Block: [3]uint32{Threads, 1, 1},
			Args: []Arg{Buf{Name: gout}, Buf{Name: in}, Buf{Name: partial}, int32(n), int32(cv.In), int32(cv.Out), int32(cv.Side), int32(chunk)}},
		launch1D("params_reduce", int64(cv.ParamLen()), Buf{Name: partial}, Buf{Name: grad}, int32(cv.ParamLen()), int32(k)),
	}
}

func softmaxCrossEntropy(logits, labels, grad, loss string, n, classes int) Launch {
	return Launch{Module: Module, Kernel: "softmax_cross_entropy", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{Threads, 1, 1},
		Args: []Arg{Buf{Name: logits}, Buf{Name: labels}, Buf{Name: grad}, Buf{Name: loss}, int32(n), int32(classes)}}
}

func sgdMomentum(params, mom, grad string, count int, opt netref.SGD) Launch {
	return launch1D("sgd_momentum", int64(count), Buf{Name: params}, Buf{Name: mom}, Buf{Name: grad}, int32(count), float32(opt.LR), float32(opt.Momentum))
}

// convertCoefficients is transforms.ColorMatrix/ScaleDivisor and
// ColorOffset/ScaleDivisor in float32, as transforms.ConvertScale uses them.
func convertCoefficients() (a [3][3]float32, b [3]float32) {
	for i := range transforms.ColorMatrix {
		for k := range transforms.ColorMatrix[i] {
			a[i][k] = float32(transforms.ColorMatrix[i][k] / transforms.ScaleDivisor)
		}
		b[i] = float32(transforms.ColorOffset[i] / transforms.ScaleDivisor)
	}
	return a, b
}

func convertScale(src, dst string, n, plane int) Launch {
	a, b := convertCoefficients()
	return launch1D("convert_scale", int64(n)*int64(plane), Buf{Name: src}, Buf{Name: dst}, int32(n), int32(plane),
		a[0][0], a[0][1], a[0][2], a[1][0], a[1][1], a[1][2], a[2][0], a[2][1], a[2][2], b[0], b[1], b[2])
}

// float32Bytes is v rounded to float32, little-endian, as the device holds it.
func float32Bytes(v []float64) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(x)))
	}
	return out
}
