package cuda

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/headspace-bench/headspace/internal/nativelib"
)

// The Net on the libraries PyTorch uses (issue 57): cuDNN's convolutions
// and cuBLAS's GEMMs, loaded at run time through internal/nativelib like
// the driver and nvJPEG, with the hand-written kernels (cuda/kernels) as
// the fallback where the libraries are missing and as the check.
//
// This file holds the loading, the backend rule (ChooseBackend: one
// decision, one place) and a DNN: the two libraries' handles on one
// stream of a Context, the legacy cuDNN convolution API with an
// algorithm search once per shape and precision on a Context (as
// PyTorch's cudnn.benchmark=True), the bias (cudnnAddTensor,
// cudnnConvolutionBackwardBias) and the ReLU (cudnnActivationForward,
// cudnnActivationBackward), and cuBLAS's SGEMM, with TF32 through
// cuDNN's math type and cuBLAS's math mode. A plan calls them through
// its library ops (Launch.Module LibraryModule; libop.go), which
// cuda/kernels.OnLibraries puts in place of the Net's convolution
// kernels.

// CudnnEnv and CublasEnv name a libcudnn and a libcublas to load instead
// of searching for them.
const (
	CudnnEnv  = "HEADSPACE_CUDNN"
	CublasEnv = "HEADSPACE_CUBLAS"
)

// pythonLibGlobs are the globs of the NVIDIA wheels' libraries (pkg is the
// folder under nvidia/: nvjpeg, cudnn, cublas; file the library's glob)
// in the Python environments a GPU image has: $VIRTUAL_ENV's, the
// user's, the system's, conda's.
func pythonLibGlobs(pkg, file string) []string {
	var roots []string
	if v := os.Getenv("VIRTUAL_ENV"); v != "" {
		roots = append(roots, v+"/lib/python3*/site-packages")
	}
	if h, err := os.UserHomeDir(); err == nil {
		roots = append(roots, h+"/.local/lib/python3*/site-packages")
	}
	roots = append(roots, "/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3*/dist-packages", "/usr/lib/python3/dist-packages", "/opt/conda/lib/python3*/site-packages")
	var globs []string
	for _, r := range roots {
		globs = append(globs, r+"/nvidia/"+pkg+"/lib/"+file)
	}
	return globs
}

// CudnnCandidates lists where the DNN looks for libcudnn, in order:
// $HEADSPACE_CUDNN, the sonames (cuDNN 9, then 8), and the wheel's
// (nvidia-cudnn-cu*: nvidia/cudnn/lib/).
func CudnnCandidates() []string {
	return nativelib.Candidates(CudnnEnv, []string{"libcudnn.so.9", "libcudnn.so.8"}, pythonLibGlobs("cudnn", "libcudnn.so.*"))
}

// CublasCandidates lists where the DNN looks for libcublas, in order:
// $HEADSPACE_CUBLAS, the sonames (CUDA 13, 12, 11), and the wheel's
// (nvidia-cublas-cu12: nvidia/cublas/lib/; CUDA 13's nvidia-cublas:
// nvidia/cu13/lib/).
func CublasCandidates() []string {
	return nativelib.Candidates(CublasEnv, []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"},
		append(pythonLibGlobs("cublas", "libcublas.so.*"), pythonLibGlobs("cu13", "libcublas.so.*")...))
}

// dnnLib is an opened libcudnn and libcublas: the entry points the DNN
// calls.
type dnnLib struct {
	cudnnPath, cublasPath string

	cudnnGetVersion, cudnnGetErrorString, cudnnCreate, cudnnDestroy, cudnnSetStream uintptr
	createTensor, destroyTensor, setTensor4d                                        uintptr
	createFilter, destroyFilter, setFilter4d                                        uintptr
	createConv, destroyConv, setConv2d, setConvMath                                 uintptr
	findFwd, findBwdData, findBwdFilter                                             uintptr
	convFwd, convBwdData, convBwdFilter, convBwdBias                                uintptr
	addTensor, createAct, destroyAct, setAct, actFwd, actBwd                        uintptr
	// setActivation is cudnnSetActivationDescriptor, whose coef is a
	// double (nativelib.Bind).
	setActivation func(desc uintptr, mode, nanOpt int32, coef float64) int32

	cublasCreate, cublasDestroy, cublasSetStream, cublasSetMathMode, cublasSgemm uintptr
	cublasGetVersion, cublasGetStatusString                                      uintptr
}

// openDNN opens the first libcudnn of cudnnPaths and the first libcublas
// of cublasPaths (the Candidates when empty) that load and have every
// entry point. Without one the error is one line naming the library and
// what was tried: "no cuDNN library found (libcudnn): …".
func openDNN(cudnnPaths, cublasPaths []string) (*dnnLib, error) {
	if !nativelib.Supported {
		return nil, ErrUnsupported
	}
	if len(cudnnPaths) == 0 {
		cudnnPaths = CudnnCandidates()
	}
	if len(cublasPaths) == 0 {
		cublasPaths = CublasCandidates()
	}
	l := &dnnLib{}
	lib, err := nativelib.OpenFirst(cudnnPaths, l.cudnnSymbols())
	if err != nil {
		return nil, fmt.Errorf("no cuDNN library found (libcudnn; $%s, or pip's nvidia-cudnn-cu13): %w", CudnnEnv, err)
	}
	l.cudnnPath = lib.File()
	nativelib.Bind(&l.setActivation, l.setAct)
	blas, err := nativelib.OpenFirst(cublasPaths, []nativelib.Symbol{
		{Name: "cublasCreate_v2", Addr: &l.cublasCreate},
		{Name: "cublasDestroy_v2", Addr: &l.cublasDestroy},
		{Name: "cublasSetStream_v2", Addr: &l.cublasSetStream},
		{Name: "cublasSetMathMode", Addr: &l.cublasSetMathMode},
		{Name: "cublasSgemm_v2", Addr: &l.cublasSgemm},
		{Name: "cublasGetVersion_v2", Addr: &l.cublasGetVersion},
	})
	if err != nil {
		return nil, fmt.Errorf("no cuBLAS library found (libcublas; $%s, or pip's nvidia-cublas): %w", CublasEnv, err)
	}
	l.cublasPath = blas.File()
	l.cublasGetStatusString = blas.Lookup("cublasGetStatusString") // cuBLAS 11.4 on; a number without it
	return l, nil
}

// cudnnSymbols are the cuDNN functions openDNN binds, each to its field
// of l.
func (l *dnnLib) cudnnSymbols() []nativelib.Symbol {
	return []nativelib.Symbol{
		{Name: "cudnnGetVersion", Addr: &l.cudnnGetVersion},
		{Name: "cudnnGetErrorString", Addr: &l.cudnnGetErrorString},
		{Name: "cudnnCreate", Addr: &l.cudnnCreate},
		{Name: "cudnnDestroy", Addr: &l.cudnnDestroy},
		{Name: "cudnnSetStream", Addr: &l.cudnnSetStream},
		{Name: "cudnnCreateTensorDescriptor", Addr: &l.createTensor},
		{Name: "cudnnDestroyTensorDescriptor", Addr: &l.destroyTensor},
		{Name: "cudnnSetTensor4dDescriptor", Addr: &l.setTensor4d},
		{Name: "cudnnCreateFilterDescriptor", Addr: &l.createFilter},
		{Name: "cudnnDestroyFilterDescriptor", Addr: &l.destroyFilter},
		{Name: "cudnnSetFilter4dDescriptor", Addr: &l.setFilter4d},
		{Name: "cudnnCreateConvolutionDescriptor", Addr: &l.createConv},
		{Name: "cudnnDestroyConvolutionDescriptor", Addr: &l.destroyConv},
		{Name: "cudnnSetConvolution2dDescriptor", Addr: &l.setConv2d},
		{Name: "cudnnSetConvolutionMathType", Addr: &l.setConvMath},
		{Name: "cudnnFindConvolutionForwardAlgorithm", Addr: &l.findFwd},
		{Name: "cudnnFindConvolutionBackwardDataAlgorithm", Addr: &l.findBwdData},
		{Name: "cudnnFindConvolutionBackwardFilterAlgorithm", Addr: &l.findBwdFilter},
		{Name: "cudnnConvolutionForward", Addr: &l.convFwd},
		{Name: "cudnnConvolutionBackwardData", Addr: &l.convBwdData},
		{Name: "cudnnConvolutionBackwardFilter", Addr: &l.convBwdFilter},
		{Name: "cudnnConvolutionBackwardBias", Addr: &l.convBwdBias},
		{Name: "cudnnAddTensor", Addr: &l.addTensor},
		{Name: "cudnnCreateActivationDescriptor", Addr: &l.createAct},
		{Name: "cudnnDestroyActivationDescriptor", Addr: &l.destroyAct},
		{Name: "cudnnSetActivationDescriptor", Addr: &l.setAct},
		{Name: "cudnnActivationForward", Addr: &l.actFwd},
		{Name: "cudnnActivationBackward", Addr: &l.actBwd},
	}
}

// The backends of the Net's step.
const (
	// BackendAuto is the libraries where they load, else the kernels.
	BackendAuto = "auto"
	// BackendLibraries is cuDNN and cuBLAS, or an error.
	BackendLibraries = "cudnn"
	// BackendKernels is the hand-written kernels (cuda/kernels).
	BackendKernels = "kernels"
)

// Backend is the backend the Net's step runs on, and why: the setting a
// result file records.
type Backend struct {
	Name   string // BackendLibraries or BackendKernels
	Reason string // why the kernels, where auto fell back to them
}

// ChooseBackend is the one rule for the Net's backend: want (auto, cudnn
// or kernels) against libErr, the error of loading cuDNN and cuBLAS (nil
// when both loaded). auto takes the libraries where they loaded and the
// kernels, with libErr as the reason, where not; cudnn without them is an
// error that names what is missing; kernels is the kernels, whatever
// loaded.
func ChooseBackend(want string, libErr error) (Backend, error) {
	switch want {
	case BackendKernels:
		return Backend{Name: BackendKernels, Reason: "asked for"}, nil
	case BackendLibraries:
		if libErr != nil {
			return Backend{}, fmt.Errorf("the Net on cuDNN and cuBLAS: %w", libErr)
		}
		return Backend{Name: BackendLibraries}, nil
	case BackendAuto, "":
		if libErr != nil {
			return Backend{Name: BackendKernels, Reason: strings.ReplaceAll(libErr.Error(), "\n", " ")}, nil
		}
		return Backend{Name: BackendLibraries}, nil
	}
	return Backend{}, fmt.Errorf("backend %q: want %s, %s or %s", want, BackendAuto, BackendLibraries, BackendKernels)
}

// DNNError is a cuDNN or cuBLAS status other than success.
type DNNError struct {
	Call   string // the entry point, e.g. "cudnnConvolutionForward"
	Code   int
	Name   string // the library's name for it, e.g. "CUDNN_STATUS_BAD_PARAM"
	Detail string // what the call was for: the shape
}

func (e *DNNError) Error() string {
	s := fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// cudnnCheck turns a cudnnStatus_t into nil or a *DNNError.
func (l *dnnLib) cudnnCheck(call string, r uintptr) error {
	code := int(uint32(r))
	if code == 0 {
		return nil
	}
	return &DNNError{Call: call, Code: code, Name: nativelib.CStringAt(nativelib.Call(l.cudnnGetErrorString, uintptr(code)), 128)}
}

// cublasCheck turns a cublasStatus_t into nil or a *DNNError.
func (l *dnnLib) cublasCheck(call string, r uintptr) error {
	code := int(uint32(r))
	if code == 0 {
		return nil
	}
	name := fmt.Sprintf("cublasStatus %d", code)
	if l.cublasGetStatusString != 0 {
		name = nativelib.CStringAt(nativelib.Call(l.cublasGetStatusString, uintptr(code)), 128)
	}
	return &DNNError{Call: call, Code: code, Name: name}
}

// cuDNN's and cuBLAS's enums the DNN passes.
const (
	cudnnTensorNCHW   = 0 // CUDNN_TENSOR_NCHW
	cudnnDataFloat    = 0 // CUDNN_DATA_FLOAT
	cudnnCrossCorr    = 1 // CUDNN_CROSS_CORRELATION (what a Conv2d computes)
	cudnnTensorOpMath = 1 // CUDNN_TENSOR_OP_MATH: TF32 tensor cores allowed
	cudnnFMAMath      = 3 // CUDNN_FMA_MATH: fp32 FMA only, no TF32
	cudnnReLU         = 1 // CUDNN_ACTIVATION_RELU
	cudnnNoNaNProp    = 0 // CUDNN_NOT_PROPAGATE_NAN
	cublasDefaultMath = 0 // CUBLAS_DEFAULT_MATH
	cublasTF32Math    = 3 // CUBLAS_TF32_TENSOR_OP_MATH
	cublasOpN         = 0 // CUBLAS_OP_N
	cublasOpT         = 1 // CUBLAS_OP_T
	dnnSearch         = 8 // the algorithms a search asks to be timed
)

// convMath is cuDNN's math type for a precision: PyTorch's choice with
// allow_tf32 on (tensor-op math) and off (FMA math).
func convMath(precision string) (int, error) {
	switch precision {
	case "fp32":
		return cudnnFMAMath, nil
	case "tf32":
		return cudnnTensorOpMath, nil
	}
	return 0, fmt.Errorf("cuda: precision %q: want fp32 or tf32", precision)
}

// ConvShape is one 2-D convolution: a batch of N inputs of C channels of
// H×W, K filters of C×R×S, zero padding Pad, stride 1, output N×K×H'×W'.
type ConvShape struct{ N, C, H, W, K, R, S, Pad int }

func (s ConvShape) String() string {
	return fmt.Sprintf("conv %dx%dx%dx%d * %dx%dx%dx%d pad %d", s.N, s.C, s.H, s.W, s.K, s.C, s.R, s.S, s.Pad)
}

// out is the output's height and width.
func (s ConvShape) out() (int, int) { return s.H + 2*s.Pad - s.R + 1, s.W + 2*s.Pad - s.S + 1 }

// algoPerf is cudnnConvolution*AlgoPerf_t (one layout for the three).
type algoPerf struct {
	Algo, Status int32
	Time         float32
	Memory       uint64
	Determinism  int32
	MathType     int32
	reserved     [3]int32
}

// Conv is a convolution made ready on a DNN: its descriptors, and the
// algorithm of each direction that the search found fastest.
type Conv struct {
	Shape         ConvShape
	x, w, y, conv uintptr // descriptors
	b             uintptr // the bias's, 1×K×1×1
	convAlgos
}

// convAlgos is what the search found for a shape and precision: the
// fastest algorithm of each direction and the workspace they need. A
// Context keeps them (the search runs once per shape on it).
type convAlgos struct {
	FwdAlgo, BwdDataAlgo int
	BwdFilterAlgo        int
	Workspace            int64 // the most any of its algorithms needs
}

type convKey struct {
	shape     ConvShape
	precision string
}

// DNN is cuDNN's and cuBLAS's handles on one stream of a Context, with
// the convolutions made so far (a search once per shape and precision)
// and one workspace, grown to the largest they need. Its methods run on
// the context's driver thread.
type DNN struct {
	c                     *Context
	lib                   *dnnLib
	stream                uintptr
	cudnn, cublas         uintptr
	act                   uintptr // the ReLU's activation descriptor
	convs                 map[convKey]*Conv
	elems                 map[int]uintptr // 1×count×1×1 tensor descriptors, by count
	ws                    uint64
	wsBytes               int64
	one, zero             *float32  // alpha and beta, kept for the calls
	a                     []uintptr // a call's arguments (the step's calls allocate nothing)
	CudnnVersion          int
	CudnnFile, CublasFile string
}

// newDNN makes the handles of lib on stream of c. On the driver thread.
func newDNN(c *Context, lib *dnnLib, stream uintptr) (_ *DNN, err error) {
	d := &DNN{c: c, lib: lib, stream: stream, convs: map[convKey]*Conv{}, elems: map[int]uintptr{}, one: new(float32), zero: new(float32),
		a: make([]uintptr, 0, 16), CudnnFile: lib.cudnnPath, CublasFile: lib.cublasPath}
	*d.one = 1
	defer func() {
		if err != nil {
			err = errors.Join(err, d.close())
		}
	}()
	d.CudnnVersion = int(nativelib.Call(lib.cudnnGetVersion))
	if err := lib.cudnnCheck("cudnnCreate", nativelib.Call(lib.cudnnCreate, uintptr(unsafe.Pointer(&d.cudnn)))); err != nil {
		return d, err
	}
	if err := lib.cudnnCheck("cudnnSetStream", nativelib.Call(lib.cudnnSetStream, d.cudnn, stream)); err != nil {
		return d, err
	}
	if err := lib.cudnnCheck("cudnnCreateActivationDescriptor", nativelib.Call(lib.createAct, uintptr(unsafe.Pointer(&d.act)))); err != nil {
		return d, err
	}
	if err := lib.cudnnCheck("cudnnSetActivationDescriptor", uintptr(uint32(lib.setActivation(d.act, cudnnReLU, cudnnNoNaNProp, 0)))); err != nil {
		return d, err
	}
	if err := lib.cublasCheck("cublasCreate_v2", nativelib.Call(lib.cublasCreate, uintptr(unsafe.Pointer(&d.cublas)))); err != nil {
		return d, err
	}
	return d, lib.cublasCheck("cublasSetStream_v2", nativelib.Call(lib.cublasSetStream, d.cublas, stream))
}

// close destroys every descriptor, the workspace and the handles. On the
// driver thread.
func (d *DNN) close() error {
	var errs []error
	for k, cv := range d.convs {
		errs = append(errs, d.freeConv(cv))
		delete(d.convs, k)
	}
	for k, e := range d.elems {
		errs = append(errs, d.lib.cudnnCheck("cudnnDestroyTensorDescriptor", nativelib.Call(d.lib.destroyTensor, e)))
		delete(d.elems, k)
	}
	if d.act != 0 {
		errs = append(errs, d.lib.cudnnCheck("cudnnDestroyActivationDescriptor", nativelib.Call(d.lib.destroyAct, d.act)))
		d.act = 0
	}
	if d.ws != 0 {
		errs = append(errs, d.c.memFree(d.ws))
		d.ws, d.wsBytes = 0, 0
	}
	if d.cublas != 0 {
		errs = append(errs, d.lib.cublasCheck("cublasDestroy_v2", nativelib.Call(d.lib.cublasDestroy, d.cublas)))
		d.cublas = 0
	}
	if d.cudnn != 0 {
		errs = append(errs, d.lib.cudnnCheck("cudnnDestroy", nativelib.Call(d.lib.cudnnDestroy, d.cudnn)))
		d.cudnn = 0
	}
	return errors.Join(errs...)
}

func (d *DNN) freeConv(cv *Conv) error {
	var errs []error
	for _, x := range []struct {
		fn, h uintptr
		name  string
	}{{d.lib.destroyTensor, cv.x, "cudnnDestroyTensorDescriptor"}, {d.lib.destroyFilter, cv.w, "cudnnDestroyFilterDescriptor"},
		{d.lib.destroyTensor, cv.y, "cudnnDestroyTensorDescriptor"}, {d.lib.destroyTensor, cv.b, "cudnnDestroyTensorDescriptor"},
		{d.lib.destroyConv, cv.conv, "cudnnDestroyConvolutionDescriptor"}} {
		if x.h != 0 {
			errs = append(errs, d.lib.cudnnCheck(x.name, nativelib.Call(x.fn, x.h)))
		}
	}
	return errors.Join(errs...)
}

// conv is the convolution of shape at precision, made (descriptors, math
// type, the three searches, the workspace) on its first use and kept:
// the search runs once per shape and precision on the Context (its
// algorithms are kept there for every DNN on it), as
// cudnn.benchmark=True does once per process. On the driver thread.
func (d *DNN) conv(shape ConvShape, precision string) (_ *Conv, err error) {
	key := convKey{shape, precision}
	if cv, ok := d.convs[key]; ok {
		return cv, nil
	}
	math, err := convMath(precision)
	if err != nil {
		return nil, err
	}
	oh, ow := shape.out()
	if shape.N <= 0 || shape.C <= 0 || shape.K <= 0 || shape.R <= 0 || shape.S <= 0 || shape.Pad < 0 || oh <= 0 || ow <= 0 {
		return nil, fmt.Errorf("cuda: %s: not a convolution", shape)
	}
	cv := &Conv{Shape: shape}
	defer func() {
		if err != nil {
			var e *DNNError
			if errors.As(err, &e) {
				e.Detail = shape.String() + ", " + precision
			}
			err = errors.Join(err, d.freeConv(cv))
		}
	}()
	if err := d.describe(cv, math); err != nil {
		return nil, err
	}
	if err := d.findAlgos(cv, key); err != nil {
		return nil, err
	}
	if err := d.growWorkspace(cv.Workspace); err != nil {
		return nil, err
	}
	d.convs[key] = cv
	return cv, nil
}

// dnnCall is one cuDNN call: its name (for the error), its function and
// its arguments.
type dnnCall struct {
	name string
	fn   uintptr
	args []uintptr
}

// cudnnCalls makes calls in order and stops at the first that fails.
func (l *dnnLib) cudnnCalls(calls ...dnnCall) error {
	for _, c := range calls {
		if err := l.cudnnCheck(c.name, nativelib.Call(c.fn, c.args...)); err != nil {
			return err
		}
	}
	return nil
}

// describe creates cv's descriptors (input, filter, output, bias,
// convolution) and sets them to its shape, the convolution's math type
// to math.
func (d *DNN) describe(cv *Conv, math int) error {
	l, shape := d.lib, cv.Shape
	if err := l.cudnnCalls(
		dnnCall{"cudnnCreateTensorDescriptor", l.createTensor, []uintptr{uintptr(unsafe.Pointer(&cv.x))}},
		dnnCall{"cudnnCreateFilterDescriptor", l.createFilter, []uintptr{uintptr(unsafe.Pointer(&cv.w))}},
		dnnCall{"cudnnCreateTensorDescriptor", l.createTensor, []uintptr{uintptr(unsafe.Pointer(&cv.y))}},
		dnnCall{"cudnnCreateTensorDescriptor", l.createTensor, []uintptr{uintptr(unsafe.Pointer(&cv.b))}},
		dnnCall{"cudnnCreateConvolutionDescriptor", l.createConv, []uintptr{uintptr(unsafe.Pointer(&cv.conv))}},
	); err != nil {
		return err
	}
	oh, ow := shape.out()
	u := func(v int) uintptr { return uintptr(v) }
	return l.cudnnCalls(
		dnnCall{"cudnnSetTensor4dDescriptor", l.setTensor4d, []uintptr{cv.x, cudnnTensorNCHW, cudnnDataFloat, u(shape.N), u(shape.C), u(shape.H), u(shape.W)}},
		dnnCall{"cudnnSetFilter4dDescriptor", l.setFilter4d, []uintptr{cv.w, cudnnDataFloat, cudnnTensorNCHW, u(shape.K), u(shape.C), u(shape.R), u(shape.S)}},
		dnnCall{"cudnnSetTensor4dDescriptor", l.setTensor4d, []uintptr{cv.y, cudnnTensorNCHW, cudnnDataFloat, u(shape.N), u(shape.K), u(oh), u(ow)}},
		dnnCall{"cudnnSetTensor4dDescriptor", l.setTensor4d, []uintptr{cv.b, cudnnTensorNCHW, cudnnDataFloat, 1, u(shape.K), 1, 1}},
		dnnCall{"cudnnSetConvolution2dDescriptor", l.setConv2d, []uintptr{cv.conv, u(shape.Pad), u(shape.Pad), 1, 1, 1, 1, cudnnCrossCorr, cudnnDataFloat}},
		dnnCall{"cudnnSetConvolutionMathType", l.setConvMath, []uintptr{cv.conv, u(math)}},
	)
}

// findAlgos sets cv's algorithms and workspace to those the Context keeps
// for key, else runs the three searches (forward, backward data, backward
// filter) and keeps what they found on the Context.
func (d *DNN) findAlgos(cv *Conv, key convKey) error {
	if found, ok := d.c.dnnAlgos[key]; ok {
		cv.convAlgos = found
		return nil
	}
	l := d.lib
	for _, s := range []struct {
		name     string
		fn, a, b uintptr
		c        uintptr
		algo     *int
	}{
		{"cudnnFindConvolutionForwardAlgorithm", l.findFwd, cv.x, cv.w, cv.y, &cv.FwdAlgo},
		{"cudnnFindConvolutionBackwardDataAlgorithm", l.findBwdData, cv.w, cv.y, cv.x, &cv.BwdDataAlgo},
		{"cudnnFindConvolutionBackwardFilterAlgorithm", l.findBwdFilter, cv.x, cv.y, cv.w, &cv.BwdFilterAlgo},
	} {
		algo, ws, err := d.search(s.name, s.fn, s.a, s.b, cv.conv, s.c)
		if err != nil {
			return err
		}
		*s.algo = algo
		cv.Workspace = max(cv.Workspace, ws)
	}
	if d.c.dnnAlgos == nil {
		d.c.dnnAlgos = map[convKey]convAlgos{}
	}
	d.c.dnnAlgos[key] = cv.convAlgos
	return nil
}

// search runs one of cuDNN's Find searches (it times the algorithms on
// the GPU) and returns the fastest that succeeded, with its workspace.
func (d *DNN) search(name string, fn, a, b, conv, c uintptr) (int, int64, error) {
	var perf [dnnSearch]algoPerf
	var n int32
	if err := d.lib.cudnnCheck(name, nativelib.Call(fn, d.cudnn, a, b, conv, c, dnnSearch, uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&perf[0])))); err != nil {
		return 0, 0, err
	}
	for _, p := range perf[:min(int(n), dnnSearch)] {
		if p.Status == 0 {
			return int(p.Algo), int64(p.Memory), nil
		}
	}
	return 0, 0, &DNNError{Call: name, Code: -1, Name: fmt.Sprintf("none of the %d algorithms it timed ran", n)}
}

// growWorkspace makes the workspace at least n bytes.
func (d *DNN) growWorkspace(n int64) error {
	if n <= d.wsBytes {
		return nil
	}
	if d.ws != 0 {
		if err := d.c.memFree(d.ws); err != nil {
			return err
		}
		d.ws, d.wsBytes = 0, 0
	}
	p, err := d.c.memAlloc(n)
	if err != nil {
		return fmt.Errorf("cuda: the cuDNN workspace of %d bytes: %w", n, err)
	}
	d.ws, d.wsBytes = p, n
	return nil
}

// ConvDirection is which of a convolution's three computations to run.
type ConvDirection int

const (
	// ConvForward computes y from x and w.
	ConvForward ConvDirection = iota
	// ConvBackwardData computes dx from dy and w.
	ConvBackwardData
	// ConvBackwardFilter computes dw from x and dy (beta 1 accumulates).
	ConvBackwardFilter
)

// run enqueues direction dir of cv on the DNN's stream: for ConvForward
// in is x, w the filters, out y; for ConvBackwardData in is dy, out dx;
// for ConvBackwardFilter in is x, w is dy, out dw. accumulate adds to out
// (beta 1) instead of overwriting it. On the driver thread.
func (d *DNN) run(cv *Conv, dir ConvDirection, in, w, out uint64, accumulate bool) error {
	beta := d.zero
	if accumulate {
		beta = d.one
	}
	alpha, b := uintptr(unsafe.Pointer(d.one)), uintptr(unsafe.Pointer(beta))
	l := d.lib
	var err error
	switch dir {
	case ConvForward:
		err = l.cudnnCheck("cudnnConvolutionForward", d.call(l.convFwd, d.cudnn, alpha, cv.x, uintptr(in), cv.w, uintptr(w), cv.conv,
			uintptr(cv.FwdAlgo), uintptr(d.ws), uintptr(d.wsBytes), b, cv.y, uintptr(out)))
	case ConvBackwardData:
		err = l.cudnnCheck("cudnnConvolutionBackwardData", d.call(l.convBwdData, d.cudnn, alpha, cv.w, uintptr(w), cv.y, uintptr(in), cv.conv,
			uintptr(cv.BwdDataAlgo), uintptr(d.ws), uintptr(d.wsBytes), b, cv.x, uintptr(out)))
	case ConvBackwardFilter:
		err = l.cudnnCheck("cudnnConvolutionBackwardFilter", d.call(l.convBwdFilter, d.cudnn, alpha, cv.x, uintptr(in), cv.y, uintptr(w), cv.conv,
			uintptr(cv.BwdFilterAlgo), uintptr(d.ws), uintptr(d.wsBytes), b, cv.w, uintptr(out)))
	default:
		return fmt.Errorf("cuda: convolution direction %d", dir)
	}
	if err == nil { // errors.As's target escapes: a step's calls allocate nothing
		return nil
	}
	var e *DNNError
	if errors.As(err, &e) {
		e.Detail = cv.Shape.String()
	}
	return err
}

// gemm enqueues C = op(A)·op(B) (+ C where accumulate) with cuBLAS's
// SGEMM on the DNN's stream, column-major as cuBLAS is: C is m×n, op(A)
// m×k, op(B) k×n; transA and transB transpose A and B. precision tf32
// lets cuBLAS use TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH), fp32
// not (CUBLAS_DEFAULT_MATH). On the driver thread.
func (d *DNN) gemm(precision string, transA, transB bool, m, n, k int, a, b, c uint64, accumulate bool) error {
	mode := cublasDefaultMath
	switch precision {
	case "fp32":
	case "tf32":
		mode = cublasTF32Math
	default:
		return fmt.Errorf("cuda: precision %q: want fp32 or tf32", precision)
	}
	if m <= 0 || n <= 0 || k <= 0 {
		return fmt.Errorf("cuda: gemm %dx%dx%d: every side must be positive", m, n, k)
	}
	l := d.lib
	if err := l.cublasCheck("cublasSetMathMode", nativelib.Call(l.cublasSetMathMode, d.cublas, uintptr(mode))); err != nil {
		return err
	}
	op := func(t bool) uintptr {
		if t {
			return cublasOpT
		}
		return cublasOpN
	}
	lda, ldb := m, k
	if transA {
		lda = k
	}
	if transB {
		ldb = n
	}
	beta := d.zero
	if accumulate {
		beta = d.one
	}
	err := l.cublasCheck("cublasSgemm_v2", nativelib.Call(l.cublasSgemm, d.cublas, op(transA), op(transB), uintptr(m), uintptr(n), uintptr(k),
		uintptr(unsafe.Pointer(d.one)), uintptr(a), uintptr(lda), uintptr(b), uintptr(ldb), uintptr(unsafe.Pointer(beta)), uintptr(c), uintptr(m)))
	var e *DNNError
	if errors.As(err, &e) {
		e.Detail = fmt.Sprintf("gemm %dx%dx%d, %s", m, n, k, precision)
	}
	return err
}

// call calls fn with args through the DNN's own argument slice: the
// step's library calls allocate nothing. Pointers among args are C
// memory, device addresses or the DNN's alpha and beta.
func (d *DNN) call(fn uintptr, args ...uintptr) uintptr {
	d.a = append(d.a[:0], args...)
	return nativelib.CallArgs(fn, d.a)
}

// setStream puts the DNN's handles on stream, where they are not already
// (a program's lists run on the stream their caller gives).
func (d *DNN) setStream(stream uintptr) error {
	if stream == d.stream {
		return nil
	}
	if err := d.lib.cudnnCheck("cudnnSetStream", nativelib.Call(d.lib.cudnnSetStream, d.cudnn, stream)); err != nil {
		return err
	}
	if err := d.lib.cublasCheck("cublasSetStream_v2", nativelib.Call(d.lib.cublasSetStream, d.cublas, stream)); err != nil {
		return err
	}
	d.stream = stream
	return nil
}

// biasOffset is where a convolution's biases start in its parameters
// (weights, then biases: cuda/netref's layout), in bytes.
func (cv *Conv) biasOffset() uint64 {
	s := cv.Shape
	return uint64(4 * s.K * s.C * s.R * s.S)
}

// convForward enqueues y = ReLU(conv(x, w) + b) (no ReLU unless relu),
// params holding the weights then the biases: cudnnConvolutionForward,
// cudnnAddTensor of the biases, cudnnActivationForward in place. On the
// driver thread.
func (d *DNN) convForward(cv *Conv, x, params, y uint64, relu bool) error {
	if err := d.run(cv, ConvForward, x, params, y, false); err != nil {
		return err
	}
	one := uintptr(unsafe.Pointer(d.one))
	l := d.lib
	if err := l.cudnnCheck("cudnnAddTensor", d.call(l.addTensor, d.cudnn, one, cv.b, uintptr(params+cv.biasOffset()), one, cv.y, uintptr(y))); err != nil {
		return d.shaped(err, cv)
	}
	if !relu {
		return nil
	}
	zero := uintptr(unsafe.Pointer(d.zero))
	return d.shaped(l.cudnnCheck("cudnnActivationForward", d.call(l.actFwd, d.cudnn, d.act, one, cv.y, uintptr(y), zero, cv.y, uintptr(y))), cv)
}

// convBackwardParams enqueues the gradient of the weights
// (cudnnConvolutionBackwardFilter) and of the biases
// (cudnnConvolutionBackwardBias) from the input x and the output's
// gradient dy, into grad (weights then biases, overwritten). On the
// driver thread.
func (d *DNN) convBackwardParams(cv *Conv, dy, x, grad uint64) error {
	if err := d.run(cv, ConvBackwardFilter, x, dy, grad, false); err != nil {
		return err
	}
	l := d.lib
	return d.shaped(l.cudnnCheck("cudnnConvolutionBackwardBias", d.call(l.convBwdBias, d.cudnn, uintptr(unsafe.Pointer(d.one)), cv.y, uintptr(dy),
		uintptr(unsafe.Pointer(d.zero)), cv.b, uintptr(grad+cv.biasOffset()))), cv)
}

// reluBackward enqueues ReLU's gradient in place: g where y > 0, else 0
// (cudnnActivationBackward, y standing for the input too: for a ReLU
// they are positive at the same places). On the driver thread.
func (d *DNN) reluBackward(g, y uint64, count int) error {
	desc, err := d.elem(count)
	if err != nil {
		return err
	}
	l := d.lib
	err = l.cudnnCheck("cudnnActivationBackward", d.call(l.actBwd, d.cudnn, d.act, uintptr(unsafe.Pointer(d.one)), desc, uintptr(y), desc, uintptr(g),
		desc, uintptr(y), uintptr(unsafe.Pointer(d.zero)), desc, uintptr(g)))
	if err == nil {
		return nil
	}
	var e *DNNError
	if errors.As(err, &e) {
		e.Detail = fmt.Sprintf("relu of %d values", count)
	}
	return err
}

// elem is the tensor descriptor of count values (1×count×1×1), made on
// first use and kept.
func (d *DNN) elem(count int) (uintptr, error) {
	if e, ok := d.elems[count]; ok {
		return e, nil
	}
	if count <= 0 {
		return 0, fmt.Errorf("cuda: relu of %d values", count)
	}
	var e uintptr
	l := d.lib
	if err := l.cudnnCheck("cudnnCreateTensorDescriptor", nativelib.Call(l.createTensor, uintptr(unsafe.Pointer(&e)))); err != nil {
		return 0, err
	}
	if err := l.cudnnCheck("cudnnSetTensor4dDescriptor", nativelib.Call(l.setTensor4d, e, cudnnTensorNCHW, cudnnDataFloat, 1, uintptr(count), 1, 1)); err != nil {
		return 0, errors.Join(err, l.cudnnCheck("cudnnDestroyTensorDescriptor", nativelib.Call(l.destroyTensor, e)))
	}
	d.elems[count] = e
	return e, nil
}

// shaped names cv's shape in a library error.
func (d *DNN) shaped(err error, cv *Conv) error {
	if err == nil {
		return nil
	}
	var e *DNNError
	if errors.As(err, &e) && e.Detail == "" {
		e.Detail = cv.Shape.String()
	}
	return err
}

var (
	dnnOnce sync.Once
	dnnLoad *dnnLib
	dnnErr  error
)

// LoadDNN opens cuDNN and cuBLAS once (CudnnCandidates, CublasCandidates)
// and returns the error of that: nil where both loaded, the reason for
// ChooseBackend where not.
func LoadDNN() error {
	dnnOnce.Do(func() { dnnLoad, dnnErr = openDNN(nil, nil) })
	return dnnErr
}

// LoadDNNFrom is LoadDNN with cuDNN and cuBLAS at the given paths: for
// the tests of code above this package with a fake of both
// (testdata/fakednn.c, which computes on the fake driver's host memory:
// never a source of figures). It must come before any LoadDNN, and fails
// after one.
func LoadDNNFrom(cudnn, cublas string) error {
	ran := false
	dnnOnce.Do(func() {
		ran = true
		dnnLoad, dnnErr = openDNN([]string{cudnn}, []string{cublas})
	})
	if !ran {
		return fmt.Errorf("cuda: LoadDNNFrom(%s, %s) after the libraries were loaded or tried", cudnn, cublas)
	}
	return dnnErr
}

// LoadedDNN is the files of the cuDNN and cuBLAS that LoadDNN (or
// LoadDNNFrom) loaded and cuDNN's version (cudnnGetVersion: 10000·major
// + 100·minor + patch for cuDNN 9), for a result file's lines; ok is
// false where they did not load (LoadDNN's error says why).
func LoadedDNN() (cudnnFile string, cudnnVersion int, cublasFile string, ok bool) {
	if LoadDNN() != nil {
		return "", 0, "", false
	}
	return dnnLoad.cudnnPath, int(nativelib.Call(dnnLoad.cudnnGetVersion)), dnnLoad.cublasPath, true
}

// libraries is the cuDNN and cuBLAS c's plans call: the one a test gave c, else
// LoadDNN's. On the driver thread.
func (c *Context) libraries() (*dnnLib, error) {
	if c.dnn != nil {
		return c.dnn, nil
	}
	if err := LoadDNN(); err != nil {
		return nil, err
	}
	return dnnLoad, nil
}
