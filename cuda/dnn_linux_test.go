//go:build linux

package cuda

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/headspace-bench/headspace/internal/nativelib"
)

// fakeDNN is testdata/fakednn.c built into a shared library (a fresh one
// per test: its log and counts are the test's own) and opened as both
// cuDNN and cuBLAS, with handles on its controls.
type fakeDNN struct {
	t                     *testing.T
	so                    string
	lib                   *dnnLib
	logFn, liveFn, failFn uintptr
}

func loadFakeDNN(t *testing.T) *fakeDNN {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("the fake cuDNN needs the C compiler cc: %v", err)
	}
	so := filepath.Join(t.TempDir(), "libfakednn.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", so, "testdata/fakednn.c").CombinedOutput(); err != nil {
		t.Fatalf("cc testdata/fakednn.c: %v\n%s", err, out)
	}
	lib, err := openDNN([]string{so}, []string{so})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDNN{t: t, so: so, lib: lib}
	if _, err := nativelib.Open(so, []nativelib.Symbol{{Name: "fake_dnn_log", Addr: &f.logFn}, {Name: "fake_dnn_live", Addr: &f.liveFn}, {Name: "fake_dnn_fail", Addr: &f.failFn}}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeDNN) Log() string {
	var p *byte
	nativelib.Call(f.logFn, uintptr(unsafe.Pointer(&p)))
	return nativelib.CString(p, 1<<20)
}

func (f *fakeDNN) Live() int { return int(nativelib.Call(f.liveFn)) }

// Fail makes the after+1-th next call of call fail with code.
func (f *fakeDNN) Fail(call string, after, code int) {
	b := append([]byte(call), 0)
	nativelib.Call(f.failFn, uintptr(unsafe.Pointer(&b[0])), uintptr(after), uintptr(code))
}

// newFakeDNN opens a DNN on a stream of the fake driver's context; the
// cleanup closes both and checks that neither fake holds anything.
func newFakeDNN(t *testing.T, f *fakeDNN) (*Context, *DNN, *fake) {
	t.Helper()
	drv := loadFake(t)
	c := drv.open()
	var d *DNN
	var stream uintptr
	err := c.run(func() (err error) {
		if stream, err = c.streamCreate(); err != nil {
			return err
		}
		d, err = newDNN(c, f.lib, stream)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.run(func() error { return errors.Join(d.close(), c.streamDestroy(stream)) }); err != nil {
			t.Error(err)
		}
		if n := f.Live(); n != 0 {
			t.Errorf("after close the fake cuDNN/cuBLAS holds %d objects", n)
		}
	})
	return c, d, drv
}

// devMem allocates n float32 on the fake driver (host memory, which the
// fake cuDNN computes on) on c's driver thread, freed at the test's end.
func devMem(t *testing.T, c *Context, n int) uint64 {
	t.Helper()
	var p uint64
	if err := c.run(func() (err error) { p, err = c.memAlloc(int64(4 * n)); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.run(func() error { return c.memFree(p) }) })
	return p
}

// lines are the log's lines that start with one of prefixes.
func lines(log string, prefixes ...string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// The call sequence of a convolution on the libraries: the handles on
// the context's stream; the descriptors of the Net's first convolution
// (3→30 channels, 3×3, padding 1); the math type of the precision (FMA
// for fp32, tensor-op for tf32, as PyTorch sets them with allow_tf32 off
// and on); the three searches once per shape and precision, whose
// fastest working algorithm and its workspace are taken; the three
// directions with that algorithm and workspace on the stream; and cuBLAS's
// SGEMM with the precision's math mode.
func TestDNNConvSequence(t *testing.T) {
	f := loadFakeDNN(t)
	c, d, _ := newFakeDNN(t, f)
	shape := ConvShape{N: 2, C: 3, H: 16, W: 16, K: 30, R: 3, S: 3, Pad: 1}
	x, y, w := devMem(t, c, 2*3*16*16), devMem(t, c, 2*30*16*16), devMem(t, c, 30*3*9+30)
	var cv, again, tf *Conv
	err := c.run(func() (err error) {
		if cv, err = d.conv(shape, "fp32"); err != nil {
			return err
		}
		if again, err = d.conv(shape, "fp32"); err != nil {
			return err
		}
		if tf, err = d.conv(shape, "tf32"); err != nil {
			return err
		}
		return errors.Join(d.run(cv, ConvForward, x, w, y, false), d.run(cv, ConvBackwardData, y, w, x, false),
			d.run(cv, ConvBackwardFilter, x, y, w, true), d.convForward(cv, x, w, y, true), d.convBackwardParams(cv, y, x, w),
			d.reluBackward(y, y, 2*30*16*16), d.gemm("tf32", false, true, 10, 4, 30, x, y, w, false),
			d.gemm("fp32", true, false, 10, 4, 30, x, y, w, true))
	})
	if err != nil {
		t.Fatal(err)
	}
	if cv != again || cv == tf {
		t.Errorf("conv of one shape and precision made twice, or fp32 and tf32 share one")
	}
	if cv.FwdAlgo != 1 || cv.BwdDataAlgo != 1 || cv.BwdFilterAlgo != 1 || cv.Workspace != 4096 || d.wsBytes != 4096 {
		t.Errorf("algorithms %d %d %d, workspace %d (DNN's %d): want the fastest, 1, and its 4096 bytes", cv.FwdAlgo, cv.BwdDataAlgo, cv.BwdFilterAlgo, cv.Workspace, d.wsBytes)
	}
	log := f.Log()
	want := []string{
		"cudnnCreate", "cudnnSetStream", "cudnnSetActivationDescriptor mode 1 nan 0 coef 0", "cublasCreate_v2", "cublasSetStream_v2",
		"cudnnSetTensor4dDescriptor 2 3 16 16", "cudnnSetFilter4dDescriptor 30 3 3 3", "cudnnSetTensor4dDescriptor 2 30 16 16", "cudnnSetTensor4dDescriptor 1 30 1 1",
		"cudnnSetConvolution2dDescriptor pad 1 1 stride 1 1 mode 1 compute 0", "cudnnSetConvolutionMathType 3",
		"cudnnFindConvolutionForwardAlgorithm math 3", "cudnnFindConvolutionBackwardDataAlgorithm math 3", "cudnnFindConvolutionBackwardFilterAlgorithm math 3",
		"cudnnSetTensor4dDescriptor 2 3 16 16", "cudnnSetFilter4dDescriptor 30 3 3 3", "cudnnSetTensor4dDescriptor 2 30 16 16", "cudnnSetTensor4dDescriptor 1 30 1 1",
		"cudnnSetConvolution2dDescriptor pad 1 1 stride 1 1 mode 1 compute 0", "cudnnSetConvolutionMathType 1",
		"cudnnFindConvolutionForwardAlgorithm math 1", "cudnnFindConvolutionBackwardDataAlgorithm math 1", "cudnnFindConvolutionBackwardFilterAlgorithm math 1",
		"cudnnConvolutionForward algo 1 workspace 4096 alpha 1 beta 0 stream set",
		"cudnnConvolutionBackwardData algo 1 workspace 4096 alpha 1 beta 0 stream set",
		"cudnnConvolutionBackwardFilter algo 1 workspace 4096 alpha 1 beta 1 stream set",
		// The forward pass with bias and ReLU, the parameters' gradient,
		// ReLU's gradient in place.
		"cudnnConvolutionForward algo 1 workspace 4096 alpha 1 beta 0 stream set",
		"cudnnAddTensor 1 30 1 1 to 2 30 16 16 alpha 1 beta 1", "cudnnActivationForward 15360 alpha 1 beta 0",
		"cudnnConvolutionBackwardFilter algo 1 workspace 4096 alpha 1 beta 0 stream set",
		"cudnnConvolutionBackwardBias 2 30 16 16 alpha 1 beta 0",
		"cudnnSetTensor4dDescriptor 1 15360 1 1", "cudnnActivationBackward 15360 alpha 1 beta 0",
		"cublasSetMathMode 3", "cublasSgemm_v2 NT 10 4 30 alpha 1 beta 0 math 3",
		"cublasSetMathMode 0", "cublasSgemm_v2 TN 10 4 30 alpha 1 beta 1 math 0",
	}
	if got := lines(log, "cudnn", "cublas"); !slices.Equal(got, want) {
		t.Errorf("call sequence:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A failing library call is an error naming the call, the library's name
// for the status and the shape; a failure while a convolution is made
// leaves nothing behind (the cleanup checks both fakes), and so does one
// while the handles are made.
func TestDNNErrors(t *testing.T) {
	shape := ConvShape{N: 2, C: 30, H: 8, W: 8, K: 30, R: 3, S: 3, Pad: 1}
	for _, tc := range []struct {
		call   string
		after  int
		code   int
		driver bool // a fake driver call
		want   string
	}{
		{"cudnnSetTensor4dDescriptor", 1, 2000, false, "cuda: cudnnSetTensor4dDescriptor: CUDNN_STATUS_BAD_PARAM (2000): conv 2x30x8x8 * 30x30x3x3 pad 1, fp32"},
		{"cudnnSetConvolutionMathType", 0, 3000, false, "cuda: cudnnSetConvolutionMathType: CUDNN_STATUS_NOT_SUPPORTED (3000): conv 2x30x8x8"},
		{"cudnnFindConvolutionBackwardFilterAlgorithm", 0, 4001, false, "cuda: cudnnFindConvolutionBackwardFilterAlgorithm: CUDNN_STATUS_ALLOC_FAILED (4001)"},
		{"cudnnConvolutionForward", 0, 4000, false, "cuda: cudnnConvolutionForward: CUDNN_STATUS_INTERNAL_ERROR (4000): conv 2x30x8x8"},
		{"cudnnAddTensor", 0, 2000, false, "cuda: cudnnAddTensor: CUDNN_STATUS_BAD_PARAM (2000): conv 2x30x8x8"},
		{"cudnnActivationForward", 0, 4000, false, "cuda: cudnnActivationForward: CUDNN_STATUS_INTERNAL_ERROR (4000): conv 2x30x8x8"},
		{"cudnnActivationBackward", 0, 4000, false, "cuda: cudnnActivationBackward: CUDNN_STATUS_INTERNAL_ERROR (4000): relu of 64 values"},
		{"cublasSgemm_v2", 0, 13, false, "cuda: cublasSgemm_v2: CUBLAS_STATUS_EXECUTION_FAILED (13): gemm 8x8x8, fp32"},
		{"cuMemAlloc_v2", 0, 2, true, "cuda: the cuDNN workspace of 4096 bytes: cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)"},
	} {
		t.Run(tc.call, func(t *testing.T) {
			f := loadFakeDNN(t)
			c, d, drv := newFakeDNN(t, f)
			x, w, y := devMem(t, c, 2*30*8*8), devMem(t, c, 30*30*9+30), devMem(t, c, 2*30*8*8)
			if tc.driver {
				drv.Fail(tc.call, tc.after, tc.code)
			} else {
				f.Fail(tc.call, tc.after, tc.code)
			}
			err := c.run(func() error {
				cv, err := d.conv(shape, "fp32")
				if err != nil {
					return err
				}
				return errors.Join(d.convForward(cv, x, w, y, true), d.reluBackward(y, y, 64), d.gemm("fp32", false, false, 8, 8, 8, x, w, y, false))
			})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want one starting %q", err, tc.want)
			}
		})
	}
	t.Run("activation", func(t *testing.T) {
		f := loadFakeDNN(t)
		f.Fail("cudnnSetActivationDescriptor", 0, 2000)
		c := loadFake(t).open()
		err := c.run(func() error {
			_, err := newDNN(c, f.lib, 0)
			return err
		})
		if err == nil || err.Error() != "cuda: cudnnSetActivationDescriptor: CUDNN_STATUS_BAD_PARAM (2000)" {
			t.Errorf("error %v, want cudnnSetActivationDescriptor's", err)
		}
		if n := f.Live(); n != 0 {
			t.Errorf("a failed newDNN left %d objects", n)
		}
	})
	t.Run("handles", func(t *testing.T) {
		f := loadFakeDNN(t)
		f.Fail("cublasSetStream_v2", 0, 1)
		c := loadFake(t).open()
		err := c.run(func() error {
			_, err := newDNN(c, f.lib, 0)
			return err
		})
		if err == nil || err.Error() != "cuda: cublasSetStream_v2: CUBLAS_STATUS_NOT_INITIALIZED (1)" {
			t.Errorf("error %v, want cublasSetStream_v2's", err)
		}
		if n := f.Live(); n != 0 {
			t.Errorf("a failed newDNN left %d objects", n)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		f := loadFakeDNN(t)
		c, d, _ := newFakeDNN(t, f)
		err := c.run(func() error {
			_, e1 := d.conv(ConvShape{N: 1, C: 3, H: 2, W: 2, K: 4, R: 5, S: 5}, "fp32")
			_, e2 := d.conv(ConvShape{N: 1, C: 3, H: 8, W: 8, K: 4, R: 3, S: 3, Pad: 1}, "fp16")
			return errors.Join(e1, e2, d.gemm("tf32", false, false, 0, 1, 1, 0, 0, 0, false))
		})
		for _, want := range []string{"conv 1x3x2x2 * 4x3x5x5 pad 0: not a convolution", `precision "fp16": want fp32 or tf32`, "gemm 0x1x1: every side must be positive"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want it to say %q", err, want)
			}
		}
		if log := f.Log(); strings.Contains(log, "Tensor4dDescriptor") || strings.Contains(log, "Sgemm") {
			t.Errorf("bad input reached the libraries:\n%s", log)
		}
	})
}

// Where the libraries are not, openDNN says which is missing and what it
// tried, in one line; a library without the entry points is named with
// the one it lacks.
func TestOpenDNNMissing(t *testing.T) {
	f := loadFakeDNN(t)
	driver := loadFake(t).lib.path
	for _, tc := range []struct {
		cudnn, cublas []string
		want          []string
	}{
		{[]string{"/nonexistent/libcudnn.so.9"}, []string{f.so}, []string{"no cuDNN library found (libcudnn; $HEADSPACE_CUDNN, or pip's nvidia-cudnn-cu13): ", "/nonexistent/libcudnn.so.9"}},
		{[]string{f.so}, []string{"/nonexistent/libcublas.so.13"}, []string{"no cuBLAS library found (libcublas; $HEADSPACE_CUBLAS, or pip's nvidia-cublas): ", "/nonexistent/libcublas.so.13"}},
		{[]string{driver}, []string{f.so}, []string{"no cuDNN library found", driver + " has no cudnnGetVersion"}},
	} {
		_, err := openDNN(tc.cudnn, tc.cublas)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
				t.Errorf("openDNN(%v, %v): %v; want one line with %q", tc.cudnn, tc.cublas, err, w)
			}
		}
	}
}

// The candidates: the environment's path first, then the sonames, then
// the wheels' libraries in a Python environment (nvidia/cudnn/lib,
// nvidia/cublas/lib, and CUDA 13's nvidia/cu13/lib, where torch 2.11's
// nvidia-cublas puts libcublas.so.13), as the lent machine's image has
// them.
func TestDNNCandidates(t *testing.T) {
	venv := t.TempDir()
	for _, p := range []string{"lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.13",
		"lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13"} {
		if err := os.MkdirAll(filepath.Join(venv, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(venv, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv(CudnnEnv, "/x/libcudnn.so")
	t.Setenv(CublasEnv, "")
	cudnn, cublas := CudnnCandidates(), CublasCandidates()
	if cudnn[0] != "/x/libcudnn.so" || cudnn[1] != "libcudnn.so.9" || !slices.Contains(cudnn, venv+"/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9") {
		t.Errorf("cuDNN candidates %v", cudnn)
	}
	if cublas[0] != "libcublas.so.13" || !slices.Contains(cublas, venv+"/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.13") ||
		!slices.Contains(cublas, venv+"/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13") {
		t.Errorf("cuBLAS candidates %v", cublas)
	}
}

// The one rule for the Net's backend: auto takes the libraries where they
// loaded and falls back to the kernels, saying why, where not; cudnn
// without them is an error; kernels is the kernels; anything else is
// refused by name.
func TestChooseBackend(t *testing.T) {
	missing := errors.New("no cuDNN library found (libcudnn): libcudnn.so.9: cannot open")
	for _, tc := range []struct {
		want    string
		libErr  error
		backend Backend
		err     string
	}{
		{"auto", nil, Backend{Name: "cudnn"}, ""},
		{"", nil, Backend{Name: "cudnn"}, ""},
		{"auto", missing, Backend{Name: "kernels", Reason: missing.Error()}, ""},
		{"cudnn", nil, Backend{Name: "cudnn"}, ""},
		{"cudnn", missing, Backend{}, "the Net on cuDNN and cuBLAS: no cuDNN library found"},
		{"kernels", nil, Backend{Name: "kernels", Reason: "asked for"}, ""},
		{"gpu", nil, Backend{}, `backend "gpu": want auto, cudnn or kernels`},
	} {
		b, err := ChooseBackend(tc.want, tc.libErr)
		if b != tc.backend || (err == nil) != (tc.err == "") || err != nil && !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("ChooseBackend(%q, %v) = %+v, %v; want %+v, %q", tc.want, tc.libErr, b, err, tc.backend, tc.err)
		}
	}
}
