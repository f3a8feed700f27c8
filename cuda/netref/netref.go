// Package netref is a float64 reference of document 003's Net: the layers'
// forward and backward passes, the cross-entropy loss and PyTorch's SGD with
// momentum, written plainly in Go so that the CUDA kernels of cuda/kernels
// can be checked against it.
//
// The Net, as the document's training script defines it:
//
//	conv_in  = Conv2d(3, 30, 3, padding='same'), then ReLU
//	8 times:   Conv2d(30, 30, 3, padding='same'), ReLU, MaxPool2d(2)
//	conv_out = Conv2d(30, 10, 3, padding='same')
//	flatten → 10 logits (256/2^8 = 1×1), CrossEntropyLoss (mean over the batch),
//	SGD(lr=0.001, momentum=0.9): v = μ·v + g; w -= lr·v
//
// Config sizes it: Batch samples of 3×Side×Side, Channels hidden channels,
// Classes outputs and Depth pooling stages, with Side = 2^Depth so that the
// last convolution sees 1×1 and the logits are exactly Classes values, as in
// the document (Side 256, Depth 8). Tests run it tiny.
//
// Tensors are flat []float64 in NCHW order. A convolution's parameters are
// one slice: its weights [Cout, Cin, 3, 3] followed by its Cout biases, the
// layout cuda/kernels keeps on the device.
package netref

import (
	"fmt"
	"iter"
	"math"

	"github.com/headspace-bench/headspace/datasets/prng"
)

// Config sizes the Net.
type Config struct {
	Batch    int // samples per step; the document's 256
	Side     int // input side, 2^Depth; the document's 256
	Channels int // hidden channels; the document's 30
	Classes  int // logits; the document's 10
	Depth    int // conv+ReLU+MaxPool stages; the document's 8
}

// Document is the document's Net at its batch size.
func Document() Config { return Config{Batch: 256, Side: 256, Channels: 30, Classes: 10, Depth: 8} }

// Validate reports a configuration the Net cannot run.
func (c Config) Validate() error {
	switch {
	case c.Batch <= 0:
		return fmt.Errorf("netref: batch %d must be positive", c.Batch)
	case c.Channels <= 0 || c.Classes <= 0:
		return fmt.Errorf("netref: channels %d and classes %d must be positive", c.Channels, c.Classes)
	case c.Depth < 0 || c.Depth > 16:
		return fmt.Errorf("netref: depth %d must be in [0, 16]", c.Depth)
	case c.Side != 1<<c.Depth:
		return fmt.Errorf("netref: side %d must be 2^depth = %d (the last convolution sees 1x1)", c.Side, 1<<c.Depth)
	}
	return nil
}

// Conv is the shape of one 3×3 'same' convolution.
type Conv struct {
	In, Out int  // channels
	Side    int  // height and width of its input and output
	ReLU    bool // followed by a ReLU
	Pool    bool // followed (after the ReLU) by MaxPool2d(2)
}

// WeightLen is the number of weights, Out×In×9.
func (c Conv) WeightLen() int { return c.Out * c.In * 9 }

// ParamLen is the number of parameters, weights then biases.
func (c Conv) ParamLen() int { return c.WeightLen() + c.Out }

// Convs lists the Net's convolutions in order: conv_in, the Depth hidden
// ones, conv_out.
func (c Config) Convs() []Conv {
	convs := []Conv{{In: 3, Out: c.Channels, Side: c.Side, ReLU: true}}
	s := c.Side
	for range c.Depth {
		convs = append(convs, Conv{In: c.Channels, Out: c.Channels, Side: s, ReLU: true, Pool: true})
		s /= 2
	}
	return append(convs, Conv{In: c.Channels, Out: c.Classes, Side: s})
}

// InputLen is the values of one input batch, Batch×3×Side×Side.
func (c Config) InputLen() int { return c.Batch * 3 * c.Side * c.Side }

// Init returns each convolution's parameters drawn as PyTorch's Conv2d
// default does (kaiming_uniform_ with a = √5, and the bias likewise): weights
// and biases uniform in [-1/√fanIn, 1/√fanIn), fanIn = In×9, from
// prng.New(seed, l) for convolution l, weights first in layout order, then
// biases. The values are rounded to float32, the precision the device holds.
func (c Config) Init(seed uint64) [][]float64 {
	convs := c.Convs()
	params := make([][]float64, len(convs))
	for l, cv := range convs {
		rng := prng.New(seed, uint64(l))
		bound := 1 / math.Sqrt(float64(cv.In*9))
		p := make([]float64, cv.ParamLen())
		for i := range p {
			p[i] = float64(float32((2*rng.Float64() - 1) * bound))
		}
		params[l] = p
	}
	return params
}

// taps yields the taps of a 3×3 kernel at pixel (y, x) of a side×side
// image with padding='same': for each tap k = ky·3+kx whose pixel lies
// inside the image, k and that pixel's offset yy·side+xx in the image. The
// pixel is (y+ky-1, x+kx-1) for dir 1, the convolution, and (y-ky+1,
// x-kx+1) for dir -1, its transpose (the gradient of the input).
func taps(y, x, side, dir int) iter.Seq2[int, int] {
	return func(yield func(k, off int) bool) {
		for ky := range 3 {
			yy := y + dir*(ky-1)
			if yy < 0 || yy >= side {
				continue
			}
			for kx := range 3 {
				xx := x + dir*(kx-1)
				if xx < 0 || xx >= side {
					continue
				}
				if !yield(ky*3+kx, yy*side+xx) {
					return
				}
			}
		}
	}
}

// ConvForward computes out[n,o,y,x] = b[o] + Σ in[n,i,y+ky-1,x+kx-1]·w[o,i,ky,kx]
// over i, ky, kx (zero outside the image), then a ReLU if relu. p is the
// weights followed by the biases.
func ConvForward(in, p []float64, n, cin, cout, side int, relu bool) []float64 {
	out := make([]float64, n*cout*side*side)
	w, b := p[:cout*cin*9], p[cout*cin*9:]
	for s := range n {
		for o := range cout {
			for y := range side {
				for x := range side {
					sum := b[o]
					for i := range cin {
						for k, off := range taps(y, x, side, 1) {
							sum += in[(s*cin+i)*side*side+off] * w[(o*cin+i)*9+k]
						}
					}
					if relu && sum < 0 {
						sum = 0
					}
					out[((s*cout+o)*side+y)*side+x] = sum
				}
			}
		}
	}
	return out
}

// ConvBackwardData returns the gradient of the convolution's input from
// that of its output (before any ReLU): gin[n,i,y,x] = Σ gout[n,o,y-ky+1,x-kx+1]·w[o,i,ky,kx].
func ConvBackwardData(gout, p []float64, n, cin, cout, side int) []float64 {
	gin := make([]float64, n*cin*side*side)
	w := p[:cout*cin*9]
	for s := range n {
		for i := range cin {
			for y := range side {
				for x := range side {
					var sum float64
					for o := range cout {
						for k, off := range taps(y, x, side, -1) {
							sum += gout[(s*cout+o)*side*side+off] * w[(o*cin+i)*9+k]
						}
					}
					gin[((s*cin+i)*side+y)*side+x] = sum
				}
			}
		}
	}
	return gin
}

// ConvBackwardParams returns the gradient of the parameters, in their
// layout: gw[o,i,ky,kx] = Σ gout[n,o,y,x]·in[n,i,y+ky-1,x+kx-1] over n, y, x,
// then gb[o] = Σ gout[n,o,y,x].
func ConvBackwardParams(gout, in []float64, n, cin, cout, side int) []float64 {
	g := make([]float64, cout*cin*9+cout)
	for s := range n {
		for o := range cout {
			for y := range side {
				for x := range side {
					d := gout[((s*cout+o)*side+y)*side+x]
					g[cout*cin*9+o] += d
					for i := range cin {
						for k, off := range taps(y, x, side, 1) {
							g[(o*cin+i)*9+k] += d * in[(s*cin+i)*side*side+off]
						}
					}
				}
			}
		}
	}
	return g
}

// ReLUBackward returns g where y > 0 and 0 elsewhere: the gradient before a
// ReLU whose output is y and whose output gradient is g.
func ReLUBackward(g, y []float64) []float64 {
	out := make([]float64, len(g))
	for i := range g {
		if y[i] > 0 {
			out[i] = g[i]
		}
	}
	return out
}

// poolArg returns the index in in of the maximum of the 2×2 window at
// output (y, x) of plane base, the first in row-major order on ties (as
// PyTorch's kernels scan it).
func poolArg(in []float64, base, side, y, x int) int {
	best := base + 2*y*side + 2*x
	for _, off := range [3]int{1, side, side + 1} {
		if j := base + 2*y*side + 2*x + off; in[j] > in[best] {
			best = j
		}
	}
	return best
}

// MaxPool2 is MaxPool2d(2) over planes (batch×channels) of side×side.
func MaxPool2(in []float64, planes, side int) []float64 {
	h := side / 2
	out := make([]float64, planes*h*h)
	for p := range planes {
		for y := range h {
			for x := range h {
				out[(p*h+y)*h+x] = in[poolArg(in, p*side*side, side, y, x)]
			}
		}
	}
	return out
}

// MaxPool2Backward routes each output gradient to its window's maximum.
func MaxPool2Backward(gout, in []float64, planes, side int) []float64 {
	h := side / 2
	gin := make([]float64, len(in))
	for p := range planes {
		for y := range h {
			for x := range h {
				gin[poolArg(in, p*side*side, side, y, x)] += gout[(p*h+y)*h+x]
			}
		}
	}
	return gin
}

// CrossEntropy returns the mean over the batch of -log softmax(logits)[label]
// and its gradient with respect to the logits, (softmax - onehot)/n. logits
// is n×classes. A label outside [0, classes) is an error.
func CrossEntropy(logits []float64, labels []int32, classes int) (float64, []float64, error) {
	n := len(labels)
	if len(logits) != n*classes {
		return 0, nil, fmt.Errorf("netref: %d logits for %d labels of %d classes", len(logits), n, classes)
	}
	grad := make([]float64, len(logits))
	var loss float64
	for s, lab := range labels {
		if lab < 0 || int(lab) >= classes {
			return 0, nil, fmt.Errorf("netref: sample %d: label %d outside [0, %d)", s, lab, classes)
		}
		z := logits[s*classes : (s+1)*classes]
		m := math.Inf(-1)
		for _, v := range z {
			m = max(m, v)
		}
		var sum float64
		for _, v := range z {
			sum += math.Exp(v - m)
		}
		lse := m + math.Log(sum)
		loss += lse - z[lab]
		for k, v := range z {
			grad[s*classes+k] = math.Exp(v-lse) / float64(n)
		}
		grad[s*classes+int(lab)] -= 1 / float64(n)
	}
	return loss / float64(n), grad, nil
}

// SGD is torch.optim.SGD with momentum and no dampening, weight decay or
// Nesterov: v = Momentum·v + g; p -= LR·v (the first step's v is g, which
// is the same as starting from v = 0).
type SGD struct{ LR, Momentum float64 }

// Document's optimizer: SGD(lr=0.001, momentum=0.9).
var DocumentSGD = SGD{LR: 0.001, Momentum: 0.9}

// Step updates p and v in place with the gradient g.
func (o SGD) Step(p, v, g []float64) {
	for i := range p {
		v[i] = o.Momentum*v[i] + g[i]
		p[i] -= o.LR * v[i]
	}
}

// Activations is what a forward pass keeps for the backward pass.
type Activations struct {
	Input  []float64   // the batch
	Conv   [][]float64 // each convolution's output, after its ReLU, before its pool
	Pool   [][]float64 // each convolution's pooled output (nil where it has no pool)
	Logits []float64   // the last convolution's output, Batch×Classes
}

// layerInput returns the input of convolution l.
func (a *Activations) layerInput(l int) []float64 {
	if l == 0 {
		return a.Input
	}
	if a.Pool[l-1] != nil {
		return a.Pool[l-1]
	}
	return a.Conv[l-1]
}

// Forward runs the Net on input (Batch×3×Side×Side) with params (one slice
// per convolution, as Init returns).
func (c Config) Forward(params [][]float64, input []float64) (*Activations, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	convs := c.Convs()
	if len(params) != len(convs) {
		return nil, fmt.Errorf("netref: %d parameter tensors, want %d", len(params), len(convs))
	}
	for l, cv := range convs {
		if len(params[l]) != cv.ParamLen() {
			return nil, fmt.Errorf("netref: conv %d: %d parameters, want %d", l, len(params[l]), cv.ParamLen())
		}
	}
	if len(input) != c.InputLen() {
		return nil, fmt.Errorf("netref: input of %d values, want %d", len(input), c.InputLen())
	}
	a := &Activations{Input: input, Conv: make([][]float64, len(convs)), Pool: make([][]float64, len(convs))}
	for l, cv := range convs {
		a.Conv[l] = ConvForward(a.layerInput(l), params[l], c.Batch, cv.In, cv.Out, cv.Side, cv.ReLU)
		if cv.Pool {
			a.Pool[l] = MaxPool2(a.Conv[l], c.Batch*cv.Out, cv.Side)
		}
	}
	a.Logits = a.Conv[len(convs)-1]
	return a, nil
}

// Gradients is the result of a backward pass.
type Gradients struct {
	Logits []float64   // dLoss/dlogits
	Params [][]float64 // per convolution, in the parameters' layout
	Input  []float64   // dLoss/dinput
}

// Backward returns the loss of a forward pass against labels and every
// gradient.
func (c Config) Backward(params [][]float64, a *Activations, labels []int32) (float64, *Gradients, error) {
	if len(labels) != c.Batch {
		return 0, nil, fmt.Errorf("netref: %d labels for a batch of %d", len(labels), c.Batch)
	}
	loss, g, err := CrossEntropy(a.Logits, labels, c.Classes)
	if err != nil {
		return 0, nil, err
	}
	convs := c.Convs()
	grads := &Gradients{Logits: g, Params: make([][]float64, len(convs))}
	for l := len(convs) - 1; l >= 0; l-- {
		cv := convs[l]
		// g is the gradient of this layer's final output (after pool).
		if cv.Pool {
			g = MaxPool2Backward(g, a.Conv[l], c.Batch*cv.Out, cv.Side)
		}
		if cv.ReLU {
			g = ReLUBackward(g, a.Conv[l])
		}
		grads.Params[l] = ConvBackwardParams(g, a.layerInput(l), c.Batch, cv.In, cv.Out, cv.Side)
		g = ConvBackwardData(g, params[l], c.Batch, cv.In, cv.Out, cv.Side)
	}
	grads.Input = g
	return loss, grads, nil
}

// Step runs one training step as the document's train_step does (forward,
// loss, backward, optimizer step), updating params and the momentum buffers
// mom in place, and returns the loss computed before the update.
func (c Config) Step(o SGD, params, mom [][]float64, input []float64, labels []int32) (float64, error) {
	a, err := c.Forward(params, input)
	if err != nil {
		return 0, err
	}
	loss, g, err := c.Backward(params, a, labels)
	if err != nil {
		return 0, err
	}
	for l := range params {
		o.Step(params[l], mom[l], g.Params[l])
	}
	return loss, nil
}
