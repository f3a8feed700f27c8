// Package kernels is document 003's Net as CUDA kernels, and the plans that
// run them: pure data (PTX text, buffers, launches, in package cuda's plan
// types), no cgo and no driver, so it builds everywhere. Package cuda
// executes a Plan on a GPU.
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
// before it times them. OnLibraries puts cuDNN (package cuda's library
// ops) in place of the convolution kernels, and LibraryChecks checks it
// the same way.
package kernels

import (
	_ "embed"

	"github.com/headspace-bench/headspace/cuda"
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

// The plan's types are package cuda's, the one definition of a kernel
// plan, named here as the plans below build them.
type (
	Arg    = cuda.Arg
	Buf    = cuda.Buf
	Launch = cuda.Launch
	Buffer = cuda.Buffer
	Plan   = cuda.Plan
	Output = cuda.Output
	Check  = cuda.Check
)

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
