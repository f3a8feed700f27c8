package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/headspace-bench/headspace/cuda/netref"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
)

// Checks returns one check per kernel on small random inputs drawn from
// seed (sizes chosen so that partial blocks, several partial-sum chunks and
// the loss kernel's loop over samples all occur), then two whole training
// steps of a small Net (batch 2, 8×8, 4 channels, 3 pools) from float32 and
// from uint8 input. The expected outputs are cuda/netref's float64 results
// on the same float32 inputs, rounded to float32; a tolerance is absolute,
// a small fraction of the largest expected value.
func Checks(seed uint64) []Check {
	rng := prng.New(seed, 0)
	// Each part draws its inputs from rng in turn: the order is the
	// inputs'.
	var checks []Check
	checks = append(checks, convChecks(&rng)...)
	checks = append(checks, paramGradChecks(&rng)...)
	checks = append(checks, elementwiseChecks(&rng)...)
	checks = append(checks, lossUpdateChecks(&rng)...)
	checks = append(checks, convertScaleChecks(&rng)...)
	checks = append(checks, transformChecks(&rng)...)
	return append(checks, stepChecks(&rng, seed)...)
}

// convChecks are the convolution forward (with and without ReLU) and its data gradient, at a small size and at one that tiles partly.
func convChecks(rng *prng.Source) []Check {
	var checks []Check
	// The convolution: forward with and without ReLU, data gradient.
	const n, cin, cout, side = 2, 3, 4, 5
	in := uniform(rng, n*cin*side*side, 1)
	params := uniform(rng, cout*cin*9+cout, 0.5)
	gout := uniform(rng, n*cout*side*side, 1)
	cv := netref.Conv{In: cin, Out: cout, Side: side}
	for _, relu := range []bool{false, true} {
		cv.ReLU = relu
		checks = append(checks, Check{
			Name:     fmt.Sprintf("conv3x3_forward relu=%v", relu),
			Buffers:  []Buffer{f32Buffer("in", in), f32Buffer("params", params), zeroed("out", n*cout*side*side)},
			Launches: []Launch{convForward("in", "params", "out", n, cv)},
			Outputs:  []Output{output("out", netref.ConvForward(in, params, n, cin, cout, side, relu), 1e-5)},
		})
	}
	checks = append(checks, Check{
		Name:     "conv3x3_backward_data",
		Buffers:  []Buffer{f32Buffer("gout", gout), f32Buffer("params", params), zeroed("gin", n*cin*side*side)},
		Launches: []Launch{convBackwardData("gout", "params", "gin", n, cv)},
		Outputs:  []Output{output("gin", netref.ConvBackwardData(gout, params, n, cin, cout, side), 1e-5)},
	})

	// The tiling: more output channels than one block takes (a partial
	// group), rows that are no whole number of a thread's pixels.
	{
		const n, cin, cout, side = 2, 7, 12, 9
		in := uniform(rng, n*cin*side*side, 1)
		params := uniform(rng, cout*cin*9+cout, 0.5)
		gout := uniform(rng, n*cout*side*side, 1)
		cv := netref.Conv{In: cin, Out: cout, Side: side, ReLU: true}
		checks = append(checks, Check{
			Name:     "conv3x3_forward 7→12 side 9",
			Buffers:  []Buffer{f32Buffer("in", in), f32Buffer("params", params), zeroed("out", n*cout*side*side)},
			Launches: []Launch{convForward("in", "params", "out", n, cv)},
			Outputs:  []Output{output("out", netref.ConvForward(in, params, n, cin, cout, side, true), 1e-5)},
		}, Check{
			Name:     "conv3x3_backward_data 7→12 side 9",
			Buffers:  []Buffer{f32Buffer("gout", gout), f32Buffer("params", params), zeroed("gin", n*cin*side*side)},
			Launches: []Launch{convBackwardData("gout", "params", "gin", n, cv)},
			Outputs:  []Output{output("gin", netref.ConvBackwardData(gout, params, n, cin, cout, side), 1e-5)},
		})
	}
	return checks
}

// paramGradChecks are the convolution's parameter gradient at chunk sizes that exercise the partial sums.
func paramGradChecks(rng *prng.Source) []Check {
	var checks []Check
	// The parameter gradient: chunks shorter than a block, chunks that
	// each thread walks more than once with a short last one, a partial
	// group of output channels, and rows longer than a block.
	for _, tc := range []struct{ n, cin, cout, side, chunk int }{{3, 2, 3, 9, 64}, {2, 3, 2, 24, 512}, {1, 2, 7, 260, 4096}} {
		cv := netref.Conv{In: tc.cin, Out: tc.cout, Side: tc.side}
		in := uniform(rng, tc.n*tc.cin*tc.side*tc.side, 1)
		gout := uniform(rng, tc.n*tc.cout*tc.side*tc.side, 1)
		k := chunks(int64(tc.n*tc.side*tc.side), int64(tc.chunk))
		checks = append(checks, Check{
			Name: fmt.Sprintf("conv3x3_backward_params chunk=%d", tc.chunk),
			Buffers: []Buffer{f32Buffer("gout", gout), f32Buffer("in", in),
				zeroed("partial", int(k)*cv.ParamLen()), zeroed("grad", cv.ParamLen())},
			Launches: convBackwardParams("gout", "in", "partial", "grad", tc.n, cv, tc.chunk),
			Outputs:  []Output{output("grad", netref.ConvBackwardParams(gout, in, tc.n, tc.cin, tc.cout, tc.side), 1e-5)},
		})
	}
	return checks
}

// elementwiseChecks are ReLU's gradient and the pool, forward and backward.
func elementwiseChecks(rng *prng.Source) []Check {
	var checks []Check
	// ReLU's gradient, in place.
	y, g := uniform(rng, 1000, 1), uniform(rng, 1000, 1)
	checks = append(checks, Check{
		Name:     "relu_backward",
		Buffers:  []Buffer{f32Buffer("g", g), f32Buffer("y", y)},
		Launches: []Launch{launch1D("relu_backward", 1000, Buf{Name: "g"}, Buf{Name: "y"}, int32(1000))},
		Outputs:  []Output{output("g", netref.ReLUBackward(g, y), 0)},
	})

	// The pool, forward and backward.
	const planes, pside = 5, 6
	pin, pgout := uniform(rng, planes*pside*pside, 1), uniform(rng, planes*pside*pside/4, 1)
	checks = append(checks,
		Check{
			Name:     "maxpool2_forward",
			Buffers:  []Buffer{f32Buffer("in", pin), zeroed("out", len(pgout))},
			Launches: []Launch{launch1D("maxpool2_forward", int64(len(pgout)), Buf{Name: "in"}, Buf{Name: "out"}, int32(planes), int32(pside))},
			Outputs:  []Output{output("out", netref.MaxPool2(pin, planes, pside), 0)},
		},
		Check{
			Name:     "maxpool2_backward",
			Buffers:  []Buffer{f32Buffer("in", pin), f32Buffer("gout", pgout), zeroed("gin", len(pin))},
			Launches: []Launch{launch1D("maxpool2_backward", int64(len(pin)), Buf{Name: "in"}, Buf{Name: "gout"}, Buf{Name: "gin"}, int32(planes), int32(pside))},
			Outputs:  []Output{output("gin", netref.MaxPool2Backward(pgout, pin, planes, pside), 0)},
		})
	return checks
}

// lossUpdateChecks are the loss (softmax cross-entropy) and the SGD update with momentum.
func lossUpdateChecks(rng *prng.Source) []Check {
	var checks []Check
	// The loss over more samples than the block has threads.
	const samples, classes = 300, 10
	logits := uniform(rng, samples*classes, 4)
	labels := make([]int32, samples)
	for i := range labels {
		labels[i] = int32(rng.IntN(classes))
	}
	loss, glogits, err := netref.CrossEntropy(logits, labels, classes)
	if err != nil {
		panic(err) // labels are drawn in range
	}
	checks = append(checks, Check{
		Name:     "softmax_cross_entropy",
		Buffers:  []Buffer{f32Buffer("logits", logits), {Name: "labels", Bytes: 4 * samples, Init: int32Bytes(labels)}, zeroed("glogits", samples*classes), zeroed("loss", 1)},
		Launches: []Launch{softmaxCrossEntropy("logits", "labels", "glogits", "loss", samples, classes)},
		Outputs:  []Output{output("glogits", glogits, 1e-5), output("loss", []float64{loss}, 1e-5)},
	})

	// The update, with a momentum already there.
	p, v, grad := uniform(rng, 1000, 1), uniform(rng, 1000, 1), uniform(rng, 1000, 1)
	wantP, wantV := append([]float64(nil), p...), append([]float64(nil), v...)
	opt := netref.SGD{LR: 0.01, Momentum: 0.9}
	opt.Step(wantP, wantV, grad)
	checks = append(checks, Check{
		Name:     "sgd_momentum",
		Buffers:  []Buffer{f32Buffer("p", p), f32Buffer("v", v), f32Buffer("g", grad)},
		Launches: []Launch{sgdMomentum("p", "v", "g", 1000, opt)},
		Outputs:  []Output{output("p", wantP, 1e-6), output("v", wantV, 1e-6)},
	})
	return checks
}

// convertScaleChecks is convert_scale against transforms.ConvertScale sample by sample.
func convertScaleChecks(rng *prng.Source) []Check {
	var checks []Check
	// ConvertColor+Scale: transforms.ConvertScale sample by sample.
	const cn, crop = 2, 7
	pix := make([]byte, cn*3*crop*crop)
	rng.Fill(pix)
	want := make([]float32, len(pix))
	for s := range cn {
		if err := transforms.ConvertScale(want[s*3*crop*crop:(s+1)*3*crop*crop], pix[s*3*crop*crop:(s+1)*3*crop*crop], crop); err != nil {
			panic(err) // the sizes are right by construction
		}
	}
	checks = append(checks, Check{
		Name:     "convert_scale",
		Buffers:  []Buffer{{Name: "pix", Bytes: int64(len(pix)), Init: pix}, zeroed("out", len(pix))},
		Launches: []Launch{convertScale("pix", "out", cn, crop*crop)},
		Outputs:  []Output{{Buf: "out", Want: want, Tol: 1e-6}},
	})
	return checks
}

// transformChecks are the device transform (transform_mask, transform_crop)
// then convert_scale, on a few samples of random raw images, host-cropped
// and device-cropped, at a crop under and one over 64 (the fast transform's
// bit rows), each compared with the Go fast transform on the same random
// streams: bit for bit with ConvertScale of fast's ApplyUint8 (the same
// arithmetic), and within DeviceTransformTolerance of fast's Apply (whose
// colour table rounds differently; see there).
func transformChecks(rng *prng.Source) []Check {
	var checks []Check
	for _, tc := range []struct{ w, h, crop int }{{23, 17, 10}, {96, 80, 70}} {
		img := &datasets.Image{Width: tc.w, Height: tc.h, Pix: make([]uint8, 3*tc.w*tc.h)}
		rng.Fill(img.Pix)
		cfg := transforms.Config{Crop: tc.crop, MaskRatio: 0.25}
		seed := rng.Uint64()
		for _, devCrop := range []bool{false, true} {
			t := DeviceTransform{Config: cfg, Width: tc.w, Height: tc.h, DeviceCrop: devCrop}
			raw, exact, applied, err := deviceTransformCase(t, img, 3, seed)
			if err != nil {
				panic(err) // the sizes are right by construction
			}
			const n = 3
			plane := tc.crop * tc.crop
			checks = append(checks, Check{
				Name: fmt.Sprintf("device transform %dx%d crop %d device-crop=%v", tc.w, tc.h, tc.crop, devCrop),
				Buffers: []Buffer{{Name: "raw", Bytes: int64(len(raw)), Init: raw}, {Name: "mask", Bytes: int64(n * plane), Init: nil},
					{Name: "u8", Bytes: int64(3 * n * plane), Init: nil}, zeroed("out", 3*n*plane)},
				Launches: append(t.Launches("raw", "mask", "u8", n), convertScale("u8", "out", n, plane)),
				Outputs:  []Output{{Buf: "out", Want: exact}, {Buf: "out", Want: applied, Tol: DeviceTransformTolerance}},
			})
		}
	}
	return checks
}

// deviceTransformCase is the uploaded batch of n device samples of img
// (sample s on the random stream (seed, s)) and what the device must make
// of it: ConvertScale of fast's ApplyUint8 (exact) and fast's Apply.
func deviceTransformCase(t DeviceTransform, img *datasets.Image, n int, seed uint64) (raw []byte, exact, applied []float32, err error) {
	d, err := transforms.NewDeviceApplier(t.Config, t.DeviceCrop)
	if err != nil {
		return nil, nil, nil, err
	}
	f, err := transforms.New("fast", t.Config)
	if err != nil {
		return nil, nil, nil, err
	}
	sb, out := t.SampleBytes(), t.Config.OutLen()
	raw, exact, applied = make([]byte, n*sb), make([]float32, n*out), make([]float32, n*out)
	u8 := make([]uint8, out)
	for s := range n {
		r1, r2, r3 := prng.New(seed, uint64(s)), prng.New(seed, uint64(s)), prng.New(seed, uint64(s))
		if err := d.ApplyDevice(raw[s*sb:(s+1)*sb], img, &r1); err != nil {
			return nil, nil, nil, err
		}
		if err := f.(transforms.Uint8Applier).ApplyUint8(u8, img, &r2); err != nil {
			return nil, nil, nil, err
		}
		if err := transforms.ConvertScale(exact[s*out:(s+1)*out], u8, t.Config.Crop); err != nil {
			return nil, nil, nil, err
		}
		if err := f.Apply(applied[s*out:(s+1)*out], img, &r3); err != nil {
			return nil, nil, nil, err
		}
	}
	return raw, exact, applied, nil
}

// stepChecks are two training steps of a small Net by its plan, one from a
// float32 batch and one from a uint8 batch through Convert.
func stepChecks(rng *prng.Source, seed uint64) []Check {
	c := netref.Config{Batch: 2, Side: 8, Channels: 4, Classes: 10, Depth: 3}
	plan, err := netPlan(c, seed, netref.DocumentSGD, 32)
	if err != nil {
		panic(err) // a fixed, valid configuration
	}
	pix := make([]byte, c.InputLen())
	rng.Fill(pix)
	input := make([]float32, c.InputLen())
	plane := 3 * c.Side * c.Side
	for s := range c.Batch {
		if err := transforms.ConvertScale(input[s*plane:(s+1)*plane], pix[s*plane:(s+1)*plane], c.Side); err != nil {
			panic(err)
		}
	}
	labels := make([]int32, c.Batch)
	for i := range labels {
		labels[i] = int32(rng.IntN(c.Classes))
	}
	in64 := make([]float64, len(input))
	for i, v := range input {
		in64[i] = float64(v)
	}

	outputs := stepReference(c, seed, in64, labels)

	var checks []Check
	for _, u8 := range []bool{false, true} {
		bufs := append([]Buffer(nil), plan.Buffers...)
		for i, b := range bufs {
			switch {
			case b.Name == plan.Labels:
				bufs[i].Init = int32Bytes(labels)
			case b.Name == plan.Input && !u8:
				bufs[i].Init = float32Bytes(in64)
			case b.Name == plan.InputU8 && u8:
				bufs[i].Init = pix
			}
		}
		name, launches := "step float32 x2", append(append([]Launch(nil), plan.Step...), plan.Step...)
		if u8 {
			name = "step uint8 x2"
			launches = append(append(append([]Launch(nil), plan.Convert...), plan.Step...), plan.Step...)
		}
		checks = append(checks, Check{Name: name, Buffers: bufs, Launches: launches, Outputs: outputs})
	}
	return checks
}

// stepReference is the float64 reference of two steps of the Net at c
// from seed's weights on input and labels: the second step's logits and
// loss, and the parameters and momenta after it, as the outputs the
// device's two steps must match.
func stepReference(c netref.Config, seed uint64, in64 []float64, labels []int32) []Output {
	params := c.Init(seed)
	mom := make([][]float64, len(params))
	for l := range params {
		mom[l] = make([]float64, len(params[l]))
	}
	if _, err := c.Step(netref.DocumentSGD, params, mom, in64, labels); err != nil {
		panic(err)
	}
	a, err := c.Forward(params, in64)
	if err != nil {
		panic(err)
	}
	loss, g, err := c.Backward(params, a, labels)
	if err != nil {
		panic(err)
	}
	for l := range params {
		netref.DocumentSGD.Step(params[l], mom[l], g.Params[l])
	}
	last := len(params) - 1
	outputs := []Output{output(bufLoss, []float64{loss}, 1e-4), output(outBuf(last), a.Logits, 1e-4)}
	for l := range params {
		outputs = append(outputs, output(momBuf(l), mom[l], 1e-3), output(paramBuf(l), params[l], 1e-5))
	}
	return outputs
}

// uniform returns count values uniform in [-scale, scale), exact in float32.
func uniform(rng *prng.Source, count int, scale float64) []float64 {
	v := make([]float64, count)
	for i := range v {
		v[i] = float64(float32((2*rng.Float64() - 1) * scale))
	}
	return v
}

func f32Buffer(name string, v []float64) Buffer {
	return Buffer{Name: name, Bytes: 4 * int64(len(v)), Init: float32Bytes(v)}
}

func zeroed(name string, floats int) Buffer { return Buffer{Name: name, Bytes: 4 * int64(floats)} }

// output is want rounded to float32, with a tolerance of rel times its
// largest magnitude (at least 1e-7 when rel > 0; 0 means exact).
func output(buf string, want []float64, rel float64) Output {
	o := Output{Buf: buf, Want: make([]float32, len(want))}
	var m float64
	for i, v := range want {
		o.Want[i] = float32(v)
		m = max(m, math.Abs(v))
	}
	if rel > 0 {
		o.Tol = max(rel*m, 1e-7)
	}
	return o
}

func int32Bytes(v []int32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(x))
	}
	return out
}
