//go:build linux

package workloads

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/cuda/cudatest"
	"github.com/headspace-bench/headspace/cuda/kernels"
)

// TestCUDACheckOnAFakeDriver runs the check's whole path on package
// cuda's fake driver (cuda/testdata/fakecuda.c, built with the machine's
// cc) and fake cuDNN and cuBLAS (cuda/testdata/fakednn.c): memory is
// malloc, kernels compute nothing, the fake cuDNN computes on that
// memory, and time is a model, so the test checks what MeasureEach
// passes on and in what order, and the records Run makes, never a
// figure. The fake's kernels leave their outputs unwritten, so the
// kernel checks may fail; that failure must be a *CUDACheckError
// returned after every measurement, with every record. The checks that
// run on cuDNN alone (the convolutions, their gradients, ReLU's) pass
// against the host reference end to end.
func TestCUDACheckOnAFakeDriver(t *testing.T) {
	so := cudatest.Load(t)
	c := QuickCUDACheck()
	c.Sizes = []int64{1 << 20, 2 << 20}
	var details []string
	var each CUDACheckProgress
	each.GPU = func(v cuda.Info) { details = append(details, "info "+v.Name) }
	each.KernelCheck = func(cuda.CheckResult) { details = append(details, "check") }
	each.Copies = func(v []CUDACopy) {
		details = append(details, "bandwidth")
		if len(v) != 4*len(c.Sizes) {
			t.Errorf("%d copy speeds, want 4 per size", len(v))
		}
	}
	each.NetStep = func(v CUDANetStep) {
		details = append(details, "step "+v.Backend+" "+v.Precision+map[bool]string{true: " graphs"}[v.Graphs])
		if len(v.Times) != c.Steps {
			t.Errorf("%s: %d times, want %d", v.Precision, len(v.Times), c.Steps)
		}
	}
	o, err := c.MeasureEach(context.Background(), Env{}, each)
	var failed *CUDACheckError
	if err != nil && !errors.As(err, &failed) {
		t.Fatalf("MeasureEach: %v", err)
	}
	checks := len(kernels.Checks(c.Seed)) + len(kernels.TF32Checks(c.Seed)) + len(kernels.LibraryChecks(c.Seed))
	if !strings.HasPrefix(o.GPU.Name, "Fake GPU") || len(o.Checks) != checks || len(o.Copies) != 4*len(c.Sizes) || len(o.Steps) != 8 || o.Backend.Name != cuda.BackendLibraries {
		t.Errorf("outcome: GPU %q, %d checks, %d copies, %d steps, backend %+v: want the fake GPU, %d checks, 4 copies per size, 8 steps, cuDNN", o.GPU.Name, len(o.Checks), len(o.Copies), len(o.Steps), o.Backend, checks)
	}
	// The checks on cuDNN alone pass: the fake computes them on the fake
	// driver's memory, against netref's reference.
	onLibraries := 0
	for _, ch := range kernels.LibraryChecks(c.Seed) {
		if slices.ContainsFunc(ch.Launches, func(l cuda.Launch) bool { return l.Module != cuda.LibraryModule }) {
			continue
		}
		onLibraries++
		i := slices.IndexFunc(o.Checks, func(r cuda.CheckResult) bool { return r.Name == ch.Name })
		if i < 0 || !o.Checks[i].OK() || len(o.Checks[i].Outputs) != len(ch.Outputs) {
			t.Errorf("%s on the fake cuDNN: %+v, want every output within its tolerance", ch.Name, o.Checks[max(i, 0)])
		}
	}
	if onLibraries < 20 {
		t.Errorf("%d checks on cuDNN alone, want the convolutions', their gradients' and ReLU's of both precisions", onLibraries)
	}
	if got := fmt.Sprint(DNNSettings(o.Backend)); !strings.Contains(got, "{cudnn-version 9.1.0}") || !strings.Contains(got, "libfakednn.so") {
		t.Errorf("the libraries' lines %s, want the fake's file and version 9.1.0", got)
	}
	// What the records hold of the outcome decodes back.
	kept := CUDACheckOutcome{Copies: o.Copies, Batch: o.Batch, Side: o.Side}
	for _, st := range o.Steps {
		kept.Steps = append(kept.Steps, CUDANetStep{Backend: st.Backend, Precision: st.Precision, Graphs: st.Graphs, Times: st.Times})
	}
	roundTrip(t, CUDACheckCodec, kept)

	// Run: the outcome's records, each passed to env.Result.
	var env Env
	var streamed []string
	env.Result = func(r *benchfmt.Result) error { streamed = append(streamed, string(r.Name)); return nil }
	recs, err := c.Run(context.Background(), env)
	if err != nil && !errors.As(err, &failed) {
		t.Fatalf("Run: %v", err)
	}

	if len(details) == 0 || !strings.HasPrefix(details[0], "info Fake GPU") {
		t.Fatalf("details %q: want the GPU's Info first", details)
	}
	want := []string{details[0]}
	for range checks {
		want = append(want, "check")
	}
	want = append(want, "bandwidth", "step kernels fp32", "step kernels fp32 graphs", "step kernels tf32", "step kernels tf32 graphs",
		"step cudnn fp32", "step cudnn fp32 graphs", "step cudnn tf32", "step cudnn tf32 graphs")
	if strings.Join(details, "|") != strings.Join(want, "|") {
		t.Errorf("details\n%q\nwant\n%q", details, want)
	}
	var names []string
	for _, r := range recs {
		names = append(names, string(r.Name))
	}
	wantNames := []string{
		"BenchmarkCUDACopy/dir=htod/pinned=true/size=1MiB", "BenchmarkCUDACopy/dir=htod/pinned=false/size=1MiB",
		"BenchmarkCUDACopy/dir=dtoh/pinned=true/size=1MiB", "BenchmarkCUDACopy/dir=dtoh/pinned=false/size=1MiB",
		"BenchmarkCUDACopy/dir=htod/pinned=true/size=2MiB", "BenchmarkCUDACopy/dir=htod/pinned=false/size=2MiB",
		"BenchmarkCUDACopy/dir=dtoh/pinned=true/size=2MiB", "BenchmarkCUDACopy/dir=dtoh/pinned=false/size=2MiB",
		"BenchmarkCUDAStep/batch=2/side=32", "BenchmarkCUDAStep/batch=2/side=32/graphs=true",
		"BenchmarkCUDAStep/batch=2/side=32/precision=tf32", "BenchmarkCUDAStep/batch=2/side=32/precision=tf32/graphs=true",
		"BenchmarkCUDAStep/batch=2/side=32/backend=cudnn", "BenchmarkCUDAStep/batch=2/side=32/backend=cudnn/graphs=true",
		"BenchmarkCUDAStep/batch=2/side=32/backend=cudnn/precision=tf32", "BenchmarkCUDAStep/batch=2/side=32/backend=cudnn/precision=tf32/graphs=true",
	}
	if strings.Join(names, "|") != strings.Join(wantNames, "|") || strings.Join(streamed, "|") != strings.Join(wantNames, "|") {
		t.Errorf("records\n%q\nstreamed\n%q\nwant\n%q", names, streamed, wantNames)
	}
	for _, r := range recs {
		if len(r.Values) != 1 || !(r.Values[0].Value > 0) {
			t.Errorf("%s: values %v, want one positive", r.Name, r.Values)
		}
	}
	if err := cuda.LoadFrom(so); err == nil || !strings.Contains(err.Error(), "after the driver was loaded") {
		t.Errorf("a second LoadFrom: %v", err)
	}
}
