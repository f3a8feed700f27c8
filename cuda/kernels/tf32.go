package kernels

import (
	_ "embed"
	"fmt"
	"math"
	"slices"

	"github.com/headspace-bench/headspace/cuda/netref"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// The Net's precisions: fp32 (net.cu's kernels, float32 throughout) and
// tf32 (the convolutions on TF32 tensor cores, net_tf32.cu: the forward
// pass, the data gradient and the parameter gradient's partial sums;
// everything else, their reduction included, as fp32).
const (
	PrecisionFP32 = "fp32"
	PrecisionTF32 = "tf32"
)

// Precisions lists the precisions, the default first: fp32 stays the
// default because it is the path that cuda/netref checks to 1e-5 and the
// one earlier results measured; tf32 trades that for tensor cores.
var Precisions = []string{PrecisionFP32, PrecisionTF32}

//go:embed net_tf32.ptx
var netTF32PTX []byte

// TF32Module is the name of the module that holds net_tf32.cu's kernels.
const TF32Module = "net_tf32"

func init() { Modules[TF32Module] = netTF32PTX }

// tf32Signatures is each net_tf32.cu kernel's parameter list (as
// signatures).
var tf32Signatures = map[string]string{
	"conv3x3_forward_tf32":         "pppiiiiii",
	"conv3x3_backward_params_tf32": "pppiiiii",
}

// The tiling of conv3x3_forward_tf32, as net_tf32.cu defines it: positions
// and output channels a block, and its threads (four warps).
// conv3x3_backward_params_tf32 has the same tiles with taps (and the bias)
// in place of positions.
const (
	tf32TM      = 64
	tf32TN      = 32
	tf32Threads = 128
)

// WithPrecision returns plan p at the given precision: for tf32, every
// conv3x3_forward launch (the forward convolutions and the data
// gradients) becomes conv3x3_forward_tf32, and every
// conv3x3_backward_params_partial launch conv3x3_backward_params_tf32,
// each with the same arguments (the partial sums land where the fp32
// kernel's do, and params_reduce sums them as before); fp32 returns p
// unchanged. p's launch lists are copied, not modified.
func WithPrecision(p Plan, precision string) (Plan, error) {
	switch precision {
	case PrecisionFP32:
		return p, nil
	case PrecisionTF32:
		p.Convert, p.Step = toTF32(p.Convert), toTF32(p.Step)
		return p, nil
	}
	return Plan{}, fmt.Errorf("kernels: precision %q: want fp32 or tf32", precision)
}

func toTF32(ls []Launch) []Launch {
	out := slices.Clone(ls)
	for i, l := range out {
		switch {
		case l.Module == Module && l.Kernel == "conv3x3_forward":
			out[i] = convLaunchTF32(l.Args)
		case l.Module == Module && l.Kernel == "conv3x3_backward_params_partial":
			out[i] = paramsLaunchTF32(l.Args)
		}
	}
	return out
}

// convLaunchTF32 is conv3x3_forward_tf32 with conv3x3_forward's arguments
// (in, params, out, n, cin, cout, side, relu, transposed):
// (ceil(n·side² / tf32TM), ceil(cout / tf32TN)) blocks of tf32Threads, its
// shared memory static.
func convLaunchTF32(args []Arg) Launch {
	n, cout, side := int64(args[3].(int32)), int64(args[5].(int32)), int64(args[6].(int32))
	positions := n * side * side
	return Launch{Module: TF32Module, Kernel: "conv3x3_forward_tf32",
		Grid:  [3]uint32{uint32((positions + tf32TM - 1) / tf32TM), uint32((cout + tf32TN - 1) / tf32TN), 1},
		Block: [3]uint32{tf32Threads, 1, 1},
		Args:  slices.Clone(args)}
}

// paramsLaunchTF32 is conv3x3_backward_params_tf32 with
// conv3x3_backward_params_partial's arguments (gout, in, partial, n, cin,
// cout, side, chunk): (chunks · ceil((cin·9+1) / tf32TM), ceil(cout /
// tf32TN)) blocks of tf32Threads, the chunks on x (see net_tf32.cu).
func paramsLaunchTF32(args []Arg) Launch {
	n, cin, cout, side, chunk := int64(args[3].(int32)), int64(args[4].(int32)), int64(args[5].(int32)), int64(args[6].(int32)), int64(args[7].(int32))
	tblocks := (cin*9 + 1 + tf32TM - 1) / tf32TM
	return Launch{Module: TF32Module, Kernel: "conv3x3_backward_params_tf32",
		Grid:  [3]uint32{uint32(chunks(n*side*side, chunk) * tblocks), uint32((cout + tf32TN - 1) / tf32TN), 1},
		Block: [3]uint32{tf32Threads, 1, 1},
		Args:  slices.Clone(args)}
}

// TF32Tolerance is the largest error of a TF32 tensor-core sum
// sum over k < taps of a_k·b_k, plus a bias c, against the exact value,
// given absSum = sum of |a_k|·|b_k| + |c| (computed in float64 from the
// same float32 inputs). Its derivation:
//
//   - Each operand is rounded to TF32 (10 explicit mantissa bits, to
//     nearest): ã = a(1+δ), |δ| ≤ u = 2^-11, so a product's error is at most
//     (2u + u²)·|a||b|.
//   - The products of TF32 values are exact in float32 (11×11 ≤ 24
//     significant bits). The tensor core's accumulation order and rounding
//     are not specified; in the worst order, taps+1 float32 additions of
//     relative error 2^-24 each make at most (taps+1)·2^-24·absSum (the
//     first-order bound γ_n of a recursive sum, n = taps+1, with the
//     operands' error already counted).
//   - The final ReLU does not increase an error, and the float32 rounding
//     of the stored result adds 2^-24 of it.
//
// So |error| ≤ (2^-10 + 2^-22 + (taps+2)·2^-24)·absSum. For the Net's
// layers (taps = 30·9 = 270) that is 1.00e-3 of absSum, against fp32's
// (taps+2)·2^-24 = 1.6e-5. The bound is a worst case over every rounding:
// typical errors are near sqrt(taps)·2^-11 of absSum.
func TF32Tolerance(absSum float64, taps int) float64 {
	return (math.Ldexp(1, -10) + math.Ldexp(1, -22) + float64(taps+2)*math.Ldexp(1, -24)) * absSum
}

// TF32ParamsTolerance is the largest error of a parameter gradient's
// element computed by conv3x3_backward_params_tf32 then params_reduce (a
// sum over positions of gout·in, or of gout·1 for a bias), against the
// exact value, given absSum = the same sum of |gout|·|in| (in float64 from
// the same float32 inputs), the positions summed and the chunk of
// positions a block takes. Its derivation, as TF32Tolerance's:
//
//   - Each operand is rounded to TF32 once (the bias's 1 is exact): a
//     product is off by at most e = 2u + u², u = 2^-11, relative.
//   - The products are exact in float32. A block's accumulator starts at 0
//     and takes each of its L = min(chunk, positions) products with at most
//     one float32 rounding (2^-24 relative) each, in whatever order the
//     tensor core adds; params_reduce then adds the K = ceil(positions /
//     chunk) partial sums to 0 in float32, one rounding each. Every product
//     thus passes through at most L + K roundings, and a recursive sum's
//     error is at most ((1+2^-24)^(L+K) - 1) of the sum of its terms'
//     magnitudes.
//   - Storing adds nothing: the partials and the result are the float32
//     accumulators themselves.
//
// So |error| ≤ ((1+e)·(1+2^-24)^(L+K) - 1)·absSum. Unlike the forward pass,
// the sum's length is the batch's positions, not 270 taps: for the
// document's first layer (256·256·256 positions in chunks of
// ChunkPositions = 16384, K = 1024) the rounding of the sums adds 1.04e-3
// to the operands' 9.8e-4 of absSum; fp32's bound alone is that 1.04e-3.
func TF32ParamsTolerance(absSum float64, positions, chunk int) float64 {
	l := min(chunk, positions)
	k := (positions + chunk - 1) / chunk
	e := math.Ldexp(1, -10) + math.Ldexp(1, -22)
	return ((1+e)*math.Pow(1+math.Ldexp(1, -24), float64(l+k)) - 1) * absSum
}

// tf32Output is want rounded to float32 with the largest TF32Tolerance of
// its elements: absSums are the per-element sums of |a|·|b| (+|bias|).
func tf32Output(buf string, want, absSums []float64, taps int) Output {
	o := output(buf, want, 0)
	o.Tol = TF32Tolerance(slices.Max(absSums), taps)
	return o
}

// absValues is |v| element by element.
func absValues(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Abs(x)
	}
	return out
}

// tf32Case is one convolution that TF32Checks and the host emulation run.
type tf32Case struct {
	n, cin, cout, side int
	relu, transposed   bool
}

// tf32Cases: tiny, partial channel groups and rows, more than one k chunk
// (cin·9 > 32) and more than one block of channels (cout > 32), the Net's
// 30 channels (270 taps), and the Net's first layer (3 → 30, 27 taps).
var tf32Cases = []tf32Case{
	{2, 3, 4, 5, false, false}, {2, 3, 4, 5, true, false}, {2, 3, 4, 5, false, true},
	{2, 7, 12, 9, true, false}, {2, 7, 12, 9, false, true},
	{3, 5, 40, 6, true, false}, {3, 5, 40, 6, false, true},
	{2, 30, 30, 8, true, false}, {2, 30, 30, 8, false, true},
	{1, 3, 30, 16, true, false},
}

func (c tf32Case) name() string {
	kind := fmt.Sprintf("conv3x3_forward_tf32 relu=%v", c.relu)
	if c.transposed {
		kind = "conv3x3_backward_data_tf32"
	}
	return fmt.Sprintf("%s %d→%d side %d", kind, c.cin, c.cout, c.side)
}

// taps is the reduction length of one output: the kernel's input channels
// (the convolution's outputs when transposed) times 9.
func (c tf32Case) taps() int {
	if c.transposed {
		return c.cout * 9
	}
	return c.cin * 9
}

// inputs draws the case's input (what the kernel reads: the data, or the
// output gradient when transposed) and the convolution's parameters.
func (c tf32Case) inputs(rng *prng.Source) (in, params []float64) {
	area := c.side * c.side
	params = uniform(rng, c.cout*c.cin*9+c.cout, 0.5)
	if c.transposed {
		return uniform(rng, c.n*c.cout*area, 1), params
	}
	return uniform(rng, c.n*c.cin*area, 1), params
}

// want is the float64 reference (netref) and the per-element sums of
// |a|·|b| (+|bias|) that bound its TF32 error.
func (c tf32Case) want(in, params []float64) (want, absSums []float64) {
	if c.transposed {
		return netref.ConvBackwardData(in, params, c.n, c.cin, c.cout, c.side),
			netref.ConvBackwardData(absValues(in), absValues(params), c.n, c.cin, c.cout, c.side)
	}
	// The bound holds before the ReLU, and ReLU only shrinks an error.
	return netref.ConvForward(in, params, c.n, c.cin, c.cout, c.side, c.relu),
		netref.ConvForward(absValues(in), absValues(params), c.n, c.cin, c.cout, c.side, false)
}

// launch is the case's TF32 launch: the fp32 plan's launch, converted.
func (c tf32Case) launch(in, params, out string) Launch {
	cv := netref.Conv{In: c.cin, Out: c.cout, Side: c.side, ReLU: c.relu}
	if c.transposed {
		return toTF32([]Launch{convBackwardData(in, params, out, c.n, cv)})[0]
	}
	return toTF32([]Launch{convForward(in, params, out, c.n, cv)})[0]
}

// tf32ParamsCase is one parameter gradient that TF32Checks and the host
// emulation run: conv3x3_backward_params_tf32 with chunk positions a
// block, then params_reduce.
type tf32ParamsCase struct{ n, cin, cout, side, chunk int }

// tf32ParamsCases: several chunks with a short last one, chunks that are
// no multiple of the 32 positions staged at a time, one chunk, the bias
// row alone in a block of taps (7·9 = 63 taps) and more than one block of
// taps (8·9+1 = 73) and of channels (40), the Net's 30→30 (271 rows, five
// blocks of taps) and 3→30.
var tf32ParamsCases = []tf32ParamsCase{
	{3, 2, 3, 9, 64}, {2, 3, 2, 24, 512}, {1, 2, 5, 12, 256},
	{2, 7, 40, 6, 50}, {2, 8, 12, 6, 32},
	{2, 30, 30, 8, 64}, {1, 3, 30, 16, 128},
}

func (c tf32ParamsCase) name() string {
	return fmt.Sprintf("conv3x3_backward_params_tf32 %d→%d side %d chunk=%d", c.cin, c.cout, c.side, c.chunk)
}

func (c tf32ParamsCase) conv() netref.Conv { return netref.Conv{In: c.cin, Out: c.cout, Side: c.side} }

func (c tf32ParamsCase) positions() int { return c.n * c.side * c.side }

// chunks is how many partial sums params_reduce adds.
func (c tf32ParamsCase) chunks() int { return int(chunks(int64(c.positions()), int64(c.chunk))) }

// inputs draws the case's output gradient and the layer's input.
func (c tf32ParamsCase) inputs(rng *prng.Source) (gout, in []float64) {
	area := c.side * c.side
	return uniform(rng, c.n*c.cout*area, 1), uniform(rng, c.n*c.cin*area, 1)
}

// want is netref's float64 gradient and the per-element sums of |a|·|b|
// that bound its TF32 error.
func (c tf32ParamsCase) want(gout, in []float64) (want, absSums []float64) {
	return netref.ConvBackwardParams(gout, in, c.n, c.cin, c.cout, c.side),
		netref.ConvBackwardParams(absValues(gout), absValues(in), c.n, c.cin, c.cout, c.side)
}

// launches are the case's two TF32 launches: the fp32 plan's, converted.
func (c tf32ParamsCase) launches(gout, in, partial, grad string) []Launch {
	return toTF32(convBackwardParams(gout, in, partial, grad, c.n, c.conv(), c.chunk))
}

// TF32Checks returns one check per tf32Case of conv3x3_forward_tf32 (the
// forward pass with and without ReLU, and the data gradient) and one per
// tf32ParamsCase of conv3x3_backward_params_tf32 with params_reduce, on
// random inputs drawn from seed, against cuda/netref's float64 result
// within TF32Tolerance (TF32ParamsTolerance) of the case's largest sum of
// |a|·|b|: a bound on the error, derived, not fitted. cuda check runs them
// beside Checks.
func TF32Checks(seed uint64) []Check {
	rng := prng.New(seed, 32)
	var checks []Check
	for _, c := range tf32Cases {
		in, params := c.inputs(&rng)
		want, absSums := c.want(in, params)
		checks = append(checks, Check{
			Name:     c.name(),
			Buffers:  []Buffer{f32Buffer("in", in), f32Buffer("params", params), zeroed("out", len(want))},
			Launches: []Launch{c.launch("in", "params", "out")},
			Outputs:  []Output{tf32Output("out", want, absSums, c.taps())},
		})
	}
	for _, c := range tf32ParamsCases {
		gout, in := c.inputs(&rng)
		want, absSums := c.want(gout, in)
		o := output("grad", want, 0)
		o.Tol = TF32ParamsTolerance(slices.Max(absSums), c.positions(), c.chunk)
		checks = append(checks, Check{
			Name: c.name(),
			Buffers: []Buffer{f32Buffer("gout", gout), f32Buffer("in", in),
				zeroed("partial", c.chunks()*c.conv().ParamLen()), zeroed("grad", len(want))},
			Launches: c.launches("gout", "in", "partial", "grad"),
			Outputs:  []Output{o},
		})
	}
	return checks
}
