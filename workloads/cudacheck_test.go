package workloads

import (
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/cuda/kernels"
)

// TestCUDACheckCodec: what a CUDACheck's records hold of its outcome
// (the copy speeds, the Net step's batch and side, each step's
// precision, launch and times), encoded then decoded, is itself.
func TestCUDACheckCodec(t *testing.T) {
	copies := []CUDACopy{
		{HostToDevice: true, Pinned: true, Bytes: 1 << 20, GBps: 21.833},
		{HostToDevice: true, Pinned: false, Bytes: 1 << 20, GBps: 9.5},
		{HostToDevice: false, Pinned: true, Bytes: 256 << 20, GBps: 26.122483929282},
		{HostToDevice: false, Pinned: false, Bytes: 256 << 20, GBps: 1e-3},
	}
	for _, tc := range []struct {
		name string
		o    CUDACheckOutcome
	}{
		{"copies and fp32 steps", CUDACheckOutcome{Copies: copies, Batch: 256, Side: 256, Steps: []CUDANetStep{
			{Backend: cuda.BackendKernels, Precision: kernels.PrecisionFP32, Times: []time.Duration{106514432, 106000001, 107 * time.Millisecond}},
			{Backend: cuda.BackendKernels, Precision: kernels.PrecisionFP32, Graphs: true, Times: []time.Duration{98 * time.Millisecond}},
		}}},
		{"both precisions", CUDACheckOutcome{Copies: copies[:1], Batch: 2, Side: 32, Steps: []CUDANetStep{
			{Backend: cuda.BackendKernels, Precision: kernels.PrecisionFP32, Times: []time.Duration{1}},
			{Backend: cuda.BackendKernels, Precision: kernels.PrecisionFP32, Graphs: true, Times: []time.Duration{2}},
			{Backend: cuda.BackendKernels, Precision: kernels.PrecisionTF32, Times: []time.Duration{3, 4}},
			{Backend: cuda.BackendKernels, Precision: kernels.PrecisionTF32, Graphs: true, Times: []time.Duration{5}},
		}}},
		{"both backends", CUDACheckOutcome{Copies: copies[:1], Batch: 2, Side: 32, Steps: []CUDANetStep{
			{Backend: cuda.BackendKernels, Precision: kernels.PrecisionFP32, Times: []time.Duration{1}},
			{Backend: cuda.BackendKernels, Precision: kernels.PrecisionTF32, Graphs: true, Times: []time.Duration{2}},
			{Backend: cuda.BackendLibraries, Precision: kernels.PrecisionFP32, Times: []time.Duration{3, 4}},
			{Backend: cuda.BackendLibraries, Precision: kernels.PrecisionFP32, Graphs: true, Times: []time.Duration{5}},
			{Backend: cuda.BackendLibraries, Precision: kernels.PrecisionTF32, Times: []time.Duration{6}},
			{Backend: cuda.BackendLibraries, Precision: kernels.PrecisionTF32, Graphs: true, Times: []time.Duration{7}},
		}}},
		{"copies alone", CUDACheckOutcome{Copies: copies}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, CUDACheckCodec, tc.o) })
	}
}

// TestCUDACheckCodecCommittedFiles: the committed results of cuda check
// on real GPUs decode, and encode as their records again.
func TestCUDACheckCodecCommittedFiles(t *testing.T) {
	for _, name := range []string{"nvidia-h100-80gb-hbm3-9f400ae-cuda-check.txt", "nvidia-h100-80gb-hbm3-15709d7-cuda-check.txt", "nvidia-h200-3fcbbc1/cuda-check.txt"} {
		t.Run(name, func(t *testing.T) {
			o := reencodes(t, CUDACheckCodec, filepath.Join("..", "results", "gpu", name))
			if len(o.Copies) == 0 || len(o.Steps) == 0 {
				t.Errorf("%d copies and %d steps, want some of each", len(o.Copies), len(o.Steps))
			}
		})
	}
}

// The losses of the same steps kernel by kernel and from CUDA Graphs must
// be equal on the kernels, and within cudnnLossAgreement on cuDNN (its
// algorithms may sum with atomics); NaN never agrees.
func TestSameLoss(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		backend string
		a, b    float32
		want    bool
	}{
		{cuda.BackendKernels, 2.302, 2.302, true},
		{cuda.BackendKernels, 2.302, 2.3020003, false},
		{cuda.BackendLibraries, 2.302, 2.3020003, true},
		{cuda.BackendLibraries, 2.302, 2.31, false},
		{cuda.BackendLibraries, nan, nan, false},
		{cuda.BackendLibraries, 0, 0, true},
	} {
		if got := sameLoss(tc.backend, tc.a, tc.b); got != tc.want {
			t.Errorf("sameLoss(%s, %v, %v) = %v, want %v", tc.backend, tc.a, tc.b, got, tc.want)
		}
	}
}

// Where the Net fell back to the kernels, the result file says that
// cuDNN did not load and why, in one line.
func TestDNNSettingsFallback(t *testing.T) {
	b, err := cuda.ChooseBackend(cuda.BackendAuto, errors.New("no cuDNN library found (libcudnn; $HEADSPACE_CUDNN, or pip's nvidia-cudnn-cu13): libcudnn.so.9: cannot open"))
	if err != nil {
		t.Fatal(err)
	}
	got := DNNSettings(b)
	if len(got) != 1 || got[0].Key != "cudnn" || got[0].Value != "not loaded: no cuDNN library found (libcudnn; $HEADSPACE_CUDNN, or pip's nvidia-cudnn-cu13): libcudnn.so.9: cannot open" {
		t.Errorf("DNNSettings of the kernels' fallback: %+v", got)
	}
	if got := DNNSettings(cuda.Backend{Name: cuda.BackendKernels}); len(got) != 1 || got[0].Value != "not loaded: not tried" {
		t.Errorf("DNNSettings of kernels never tried: %+v", got)
	}
}
