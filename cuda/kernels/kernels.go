// Package kernels is document 003's Net as CUDA kernels, and the plans that
// run them: pure data (PTX text, buffers, launches), no cgo and no driver,
// so it builds everywhere. Package cuda executes a Plan on a GPU.
//
// The kernels are CUDA C in net.cu, compiled to net.ptx by `make ptx` with
// Debian's clang (no CUDA toolkit), and embedded: Modules["net"]. net.ptx
// starts with the sha256 of the net.cu it was made from, and a test fails
// when they differ, so stale PTX cannot be committed unnoticed.
//
// A Plan is a training step as launches on one stream: forward, loss,
// backward and the SGD-momentum update, over named device buffers. Checks
// runs each kernel on small random inputs whose expected outputs come from
// cuda/netref, the float64 reference, so a GPU can prove the kernels right
// before it times them.
package kernels

import (
	_ "embed"
	"fmt"
)

//go:embed net.ptx
var netPTX []byte

//go:embed transforms.ptx
var transformsPTX []byte

// Module is the name of the module that holds the Net's kernels.
const Module = "net"

// TransformsModule is the name of the module that holds the device
// transform's kernels (transforms.cu).
const TransformsModule = "transforms"

// Modules maps a module name to its PTX text: one module per .cu file.
var Modules = map[string][]byte{Module: netPTX, TransformsModule: transformsPTX}

// Arg is one kernel argument: a Buf, or an int32, uint32, float32 or uint64
// value.
type Arg any

// Buf is an argument that the executor resolves to the device pointer of
// the named buffer.
type Buf struct{ Name string }

// Launch is one kernel launch.
type Launch struct {
	Module, Kernel string // a key of Modules and an entry point in it
	Grid, Block    [3]uint32
	SharedBytes    uint32 // dynamic shared memory; the kernels use static only
	Args           []Arg
}

// Buffer is a device buffer. Init, if not nil, is uploaded once at setup
// (len Bytes); nil means zeroed.
type Buffer struct {
	Name  string
	Bytes int64
	Init  []byte
}

// Plan is a training step of a model as buffers and launches.
type Plan struct {
	Modules map[string][]byte // PTX by module name (Modules)
	Buffers []Buffer
	// Input, InputU8 and Labels name the per-step buffers the executor
	// fills (they are in Buffers too): the float32 [batch, 3, side, side]
	// batch, the uint8 batch of the same shape (a batching.Batch's Pix:
	// per sample, R, G and B planes) and the int32 labels.
	Input, InputU8, Labels string
	// Convert writes Input from InputU8 (ConvertColor and Scale, as
	// transforms.ConvertScale), for batches that arrive as uint8.
	Convert []Launch
	// Step is one training step, in order, on one stream.
	Step []Launch
	// Loss names the buffer that holds the step's mean loss (one float32).
	Loss string
}

// Buffer returns the buffer named name.
func (p *Plan) Buffer(name string) (Buffer, bool) {
	for _, b := range p.Buffers {
		if b.Name == name {
			return b, true
		}
	}
	return Buffer{}, false
}

// Output is a buffer to read back after a Check and compare with Want.
type Output struct {
	Buf  string
	Want []float32
	Tol  float64 // the largest absolute error accepted, element by element
}

// Check runs Launches on Buffers (uploaded first) and compares Outputs.
type Check struct {
	Name     string
	Buffers  []Buffer
	Launches []Launch
	Outputs  []Output
}

// Compare returns an error naming the first element of got that differs
// from o.Want by more than o.Tol (NaN always differs), or a length mismatch.
func (o Output) Compare(got []float32) error {
	if len(got) != len(o.Want) {
		return fmt.Errorf("%s: %d values, want %d", o.Buf, len(got), len(o.Want))
	}
	for i, g := range got {
		d := float64(g) - float64(o.Want[i])
		if !(d <= o.Tol && -d <= o.Tol) {
			return fmt.Errorf("%s[%d] = %v, want %v (tolerance %g)", o.Buf, i, g, o.Want[i], o.Tol)
		}
	}
	return nil
}

// Threads is the block size of every launch.
const Threads = 256

// signatures is each kernel's parameter list, as net.cu declares it: p a
// pointer (a Buf), i an int (int32), f a float (float32).
var signatures = map[string]string{
	"conv3x3_forward":                 "pppiiiiii",
	"conv3x3_backward_params_partial": "pppiiiii",
	"params_reduce":                   "ppii",
	"relu_backward":                   "ppi",
	"maxpool2_forward":                "ppii",
	"maxpool2_backward":               "pppii",
	"softmax_cross_entropy":           "ppppii",
	"sgd_momentum":                    "pppiff",
	"convert_scale":                   "ppiiffffffffffff",
}

// launch1D is a launch of one thread per element of total.
func launch1D(kernel string, total int64, args ...Arg) Launch {
	return Launch{Module: Module, Kernel: kernel,
		Grid: [3]uint32{uint32((total + Threads - 1) / Threads), 1, 1}, Block: [3]uint32{Threads, 1, 1}, Args: args}
}
