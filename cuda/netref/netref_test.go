package netref

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets/prng"
)

// tiny is a Net small enough for finite differences: every layer type,
// two pooling stages.
func tiny() Config { return Config{Batch: 2, Side: 4, Channels: 3, Classes: 4, Depth: 2} }

func randomInput(c Config, seed uint64) ([]float64, []int32) {
	rng := prng.New(seed, 99)
	in := make([]float64, c.InputLen())
	for i := range in {
		in[i] = 2*rng.Float64() - 1
	}
	labels := make([]int32, c.Batch)
	for i := range labels {
		labels[i] = int32(rng.IntN(c.Classes))
	}
	return in, labels
}

func lossOf(t *testing.T, c Config, params [][]float64, in []float64, labels []int32) float64 {
	t.Helper()
	a, err := c.Forward(params, in)
	if err != nil {
		t.Fatal(err)
	}
	loss, _, err := CrossEntropy(a.Logits, labels, c.Classes)
	if err != nil {
		t.Fatal(err)
	}
	return loss
}

// TestGradientsMatchFiniteDifferences checks every analytic gradient (each
// convolution's weights and biases, and the input) against central
// differences of the loss, element by element.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for _, c := range []Config{tiny(), {Batch: 3, Side: 1, Channels: 2, Classes: 3, Depth: 0}, {Batch: 1, Side: 8, Channels: 2, Classes: 2, Depth: 3}} {
		t.Run(fmt.Sprintf("batch=%d/side=%d/depth=%d", c.Batch, c.Side, c.Depth), func(t *testing.T) {
			params := c.Init(7)
			in, labels := randomInput(c, 3)
			a, err := c.Forward(params, in)
			if err != nil {
				t.Fatal(err)
			}
			_, g, err := c.Backward(params, a, labels)
			if err != nil {
				t.Fatal(err)
			}
			const eps = 1e-6
			check := func(name string, x []float64, grad []float64) {
				t.Helper()
				if len(grad) != len(x) {
					t.Fatalf("%s: gradient of %d values for %d", name, len(grad), len(x))
				}
				for i := range x {
					old := x[i]
					x[i] = old + eps
					up := lossOf(t, c, params, in, labels)
					x[i] = old - eps
					down := lossOf(t, c, params, in, labels)
					x[i] = old
					fd := (up - down) / (2 * eps)
					if math.Abs(fd-grad[i]) > 1e-6+1e-4*math.Abs(fd) {
						t.Errorf("%s[%d]: analytic %.9g, finite difference %.9g", name, i, grad[i], fd)
					}
				}
			}
			for l, cv := range c.Convs() {
				w := cv.WeightLen()
				check(fmt.Sprintf("conv%d.weight", l), params[l][:w], g.Params[l][:w])
				check(fmt.Sprintf("conv%d.bias", l), params[l][w:], g.Params[l][w:])
			}
			check("input", in, g.Input)
		})
	}
}

func TestGradientsAreNotTrivial(t *testing.T) {
	// A gradient of zeros would pass finite differences on a dead network:
	// the tiny Net's every tensor has some non-zero gradient.
	c := tiny()
	params := c.Init(7)
	in, labels := randomInput(c, 3)
	a, err := c.Forward(params, in)
	if err != nil {
		t.Fatal(err)
	}
	_, g, err := c.Backward(params, a, labels)
	if err != nil {
		t.Fatal(err)
	}
	for l, p := range g.Params {
		w := c.Convs()[l].WeightLen()
		for name, part := range map[string][]float64{"weight": p[:w], "bias": p[w:]} {
			nz := 0
			for _, v := range part {
				if v != 0 {
					nz++
				}
			}
			if nz == 0 {
				t.Errorf("conv%d.%s: every gradient is 0", l, name)
			}
		}
	}
}

func TestLayers(t *testing.T) {
	// Hand-computed cases for each layer.
	t.Run("conv", func(t *testing.T) {
		// One 3×3 input, all-ones kernel, bias 0.5: each output is the sum
		// of its 'same' neighbourhood plus 0.5.
		in := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
		p := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 0.5}
		got := ConvForward(in, p, 1, 1, 1, 3, false)
		want := []float64{12.5, 21.5, 16.5, 27.5, 45.5, 33.5, 24.5, 39.5, 28.5}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ConvForward = %v, want %v", got, want)
		}
		p[9] = -30
		got = ConvForward(in, p, 1, 1, 1, 3, true)
		want = []float64{0, 0, 0, 0, 15, 3, 0, 9, 0}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ConvForward with ReLU = %v, want %v", got, want)
		}
	})
	t.Run("pool", func(t *testing.T) {
		in := []float64{1, 5, 2, 2, 3, 4, 2, 1, 0, 0, -1, -2, 0, 0, -3, -4}
		got := MaxPool2(in, 1, 4)
		if want := []float64{5, 2, 0, -1}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("MaxPool2 = %v, want %v", got, want)
		}
		// Ties go to the first in row-major order; each window's gradient
		// goes to one place only.
		g := MaxPool2Backward([]float64{10, 20, 30, 40}, in, 1, 4)
		want := []float64{0, 10, 20, 0, 0, 0, 0, 0, 30, 0, 40, 0, 0, 0, 0, 0}
		if fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("MaxPool2Backward = %v, want %v", g, want)
		}
	})
	t.Run("cross entropy", func(t *testing.T) {
		// Equal logits: loss log(classes), gradient (1/k - onehot)/n.
		loss, g, err := CrossEntropy([]float64{3, 3, 3, 3, 0, 0, 0, 0}, []int32{1, 3}, 4)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(loss-math.Log(4)) > 1e-15 {
			t.Errorf("loss %v, want log 4", loss)
		}
		want := []float64{0.125, -0.375, 0.125, 0.125, 0.125, 0.125, 0.125, -0.375}
		for i := range want {
			if math.Abs(g[i]-want[i]) > 1e-15 {
				t.Errorf("grad = %v, want %v", g, want)
				break
			}
		}
	})
	t.Run("sgd", func(t *testing.T) {
		p, v := []float64{1, 2}, []float64{0, 0}
		o := SGD{LR: 0.5, Momentum: 0.9}
		o.Step(p, v, []float64{1, -2})
		o.Step(p, v, []float64{1, -2})
		// v1 = g, p1 = p - 0.5 g; v2 = 0.9 g + g = 1.9 g; p2 = p1 - 0.95 g
		if want := []float64{1 - 0.5 - 0.95, 2 + 1 + 1.9}; math.Abs(p[0]-want[0]) > 1e-15 || math.Abs(p[1]-want[1]) > 1e-15 {
			t.Errorf("params %v, want %v", p, want)
		}
		if want := []float64{1.9, -3.8}; math.Abs(v[0]-want[0]) > 1e-15 || math.Abs(v[1]-want[1]) > 1e-15 {
			t.Errorf("momentum %v, want %v", v, want)
		}
	})
}

func TestStepLowersTheLoss(t *testing.T) {
	// Ten steps on one batch at a large learning rate fit it: the loss falls.
	c := tiny()
	params := c.Init(1)
	mom := make([][]float64, len(params))
	for l := range params {
		mom[l] = make([]float64, len(params[l]))
	}
	in, labels := randomInput(c, 5)
	first, err := c.Step(SGD{LR: 0.1, Momentum: 0.9}, params, mom, in, labels)
	if err != nil {
		t.Fatal(err)
	}
	var last float64
	for range 30 {
		if last, err = c.Step(SGD{LR: 0.1, Momentum: 0.9}, params, mom, in, labels); err != nil {
			t.Fatal(err)
		}
	}
	if !(last < first) {
		t.Errorf("loss after 30 steps %v, first %v: want lower", last, first)
	}
}

func TestInit(t *testing.T) {
	c := Document()
	a, b := c.Init(3), c.Init(3)
	other := c.Init(4)
	for l, cv := range c.Convs() {
		bound := 1 / math.Sqrt(float64(cv.In*9))
		if len(a[l]) != cv.ParamLen() {
			t.Fatalf("conv%d: %d parameters, want %d", l, len(a[l]), cv.ParamLen())
		}
		same := 0
		for i, v := range a[l] {
			if v != b[l][i] {
				t.Fatalf("conv%d[%d]: %v then %v from the same seed", l, i, v, b[l][i])
			}
			if !(math.Abs(v) <= bound) || float64(float32(v)) != v {
				t.Fatalf("conv%d[%d] = %v: want a float32 within ±%v", l, i, v, bound)
			}
			if v == other[l][i] {
				same++
			}
		}
		if same == len(a[l]) {
			t.Errorf("conv%d: seeds 3 and 4 give the same parameters", l)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Document(), ""},
		{tiny(), ""},
		{Config{Batch: 0, Side: 4, Channels: 3, Classes: 4, Depth: 2}, "batch 0"},
		{Config{Batch: 1, Side: 6, Channels: 3, Classes: 4, Depth: 2}, "side 6 must be 2^depth = 4"},
		{Config{Batch: 1, Side: 4, Channels: 0, Classes: 4, Depth: 2}, "channels 0"},
		{Config{Batch: 1, Side: 4, Channels: 1, Classes: 4, Depth: -1}, "depth -1"},
	} {
		err := tc.c.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: Validate = %v, want %q", tc.c, err, tc.want)
		}
	}
	if _, _, err := CrossEntropy([]float64{0, 0}, []int32{2}, 2); err == nil || !strings.Contains(err.Error(), "label 2 outside [0, 2)") {
		t.Errorf("CrossEntropy with a bad label: %v", err)
	}
	c := tiny()
	if _, err := c.Forward(c.Init(1), make([]float64, 3)); err == nil || !strings.Contains(err.Error(), "input of 3 values") {
		t.Errorf("Forward with a short input: %v", err)
	}
}

func ExampleConfig_Convs() {
	for _, cv := range Document().Convs() {
		fmt.Printf("%d->%d at %dx%d relu=%v pool=%v\n", cv.In, cv.Out, cv.Side, cv.Side, cv.ReLU, cv.Pool)
	}
	// Output:
	// 3->30 at 256x256 relu=true pool=false
	// 30->30 at 256x256 relu=true pool=true
	// 30->30 at 128x128 relu=true pool=true
	// 30->30 at 64x64 relu=true pool=true
	// 30->30 at 32x32 relu=true pool=true
	// 30->30 at 16x16 relu=true pool=true
	// 30->30 at 8x8 relu=true pool=true
	// 30->30 at 4x4 relu=true pool=true
	// 30->30 at 2x2 relu=true pool=true
	// 30->10 at 1x1 relu=false pool=false
}
