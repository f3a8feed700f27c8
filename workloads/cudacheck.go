package workloads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/cuda/kernels"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// CUDACheck is `headspace cuda check`: on a real NVIDIA GPU, every kernel
// of the Net (both precisions) and the device transform's kernels against
// their reference on small random inputs; host-to-device and
// device-to-host copy speeds from pinned and pageable memory at each of
// Sizes; and the Net's training step at Batch samples of Side×Side, timed
// on the GPU with CUDA events, launched kernel by kernel and then
// replayed from CUDA Graphs, at each of Precisions.
//
// It is not in Experiments: it runs only where a CUDA driver and a GPU
// are (package cuda, loaded with purego), and a benchmark list that must
// pass on every machine cannot hold it without a faked result. Without a
// driver Run returns package cuda's error, which starts "no CUDA driver
// found (libcuda.so.1): ". The gpu suite (ci/gpu-suite.sh) runs it
// through the command.
type CUDACheck struct {
	Ordinal    int     // the GPU's ordinal
	Sizes      []int64 // bytes per copy
	Reps       int     // copies of each size; the median is reported
	Batch      int     // samples per batch of the timed Net step
	Side       int     // image side of the timed Net step
	Steps      int     // timed Net steps, after one warm-up
	Seed       uint64  // the checks' inputs and the Net's weights
	Precisions []string
}

// DefaultCUDACheck is `headspace cuda check`'s defaults: copies of 1 to
// 256 MiB, 5 each; 5 steps of the Net at the document's batch of 256 at
// 256×256, in fp32.
func DefaultCUDACheck() CUDACheck {
	var sizes []int64
	for mib := int64(1); mib <= 256; mib *= 2 {
		sizes = append(sizes, mib<<20)
	}
	return CUDACheck{Sizes: sizes, Reps: 5, Batch: 256, Side: 256, Steps: 5, Seed: 1, Precisions: []string{kernels.PrecisionFP32}}
}

// QuickCUDACheck is every code path in seconds: one copy of 1 MiB, one
// step of a batch of 2 at 32×32, in both precisions.
func QuickCUDACheck() CUDACheck {
	c := DefaultCUDACheck()
	c.Sizes, c.Reps, c.Batch, c.Side, c.Steps = []int64{1 << 20}, 1, 2, 32, 1
	c.Precisions = kernels.Precisions
	return c
}

// Name is "CUDA": BenchmarkCUDACopy/… and BenchmarkCUDAStep/….
func (CUDACheck) Name() string { return "CUDA" }

// Document is "": the check is headspace's own.
func (CUDACheck) Document() string { return "" }

// Settings is what changes a number and is in no record's name: the
// copies' repetitions and the seed. The GPU's own lines (GPUSettings)
// are known once it is open: Run passes its cuda.Info to env.Details.
func (c CUDACheck) Settings() []resultfile.Config {
	return []resultfile.Config{
		{Key: "copy-reps", Value: strconv.Itoa(c.Reps)},
		{Key: "seed", Value: strconv.FormatUint(c.Seed, 10)},
	}
}

// Validate reports the first problem with the check, before anything runs.
func (c CUDACheck) Validate() error {
	switch {
	case c.Batch <= 0 || c.Side <= 0:
		return fmt.Errorf("batch %d and side %d must be positive", c.Batch, c.Side)
	case c.Steps <= 0 || c.Reps <= 0:
		return fmt.Errorf("steps %d and reps %d must be positive", c.Steps, c.Reps)
	case len(c.Sizes) == 0:
		return errors.New("no copy sizes")
	case c.Ordinal < 0:
		return fmt.Errorf("GPU ordinal %d must not be negative", c.Ordinal)
	}
	for _, n := range c.Sizes {
		if n <= 0 {
			return fmt.Errorf("copy size %d must be positive", n)
		}
	}
	for _, p := range c.Precisions {
		if !strings.Contains(" "+strings.Join(kernels.Precisions, " ")+" ", " "+p+" ") {
			return fmt.Errorf("precision %q: want %s", p, strings.Join(kernels.Precisions, " or "))
		}
	}
	return nil
}

// CUDANetStep is the Net's step timed at one precision, launched kernel
// by kernel or replayed from CUDA Graphs, and the loss after the steps:
// what CUDACheck.Run passes to env.Details for each.
type CUDANetStep struct {
	Precision string
	Graphs    bool
	Times     []time.Duration
	Loss      float32
}

// CUDACheckError is a check that ran and failed: a kernel's output above
// its tolerance, CUDA Graphs that changed the loss, or a loss that is not
// finite. Run returns it after every measurement, with every record.
type CUDACheckError struct{ msg string }

func (e *CUDACheckError) Error() string { return e.msg }

// Run opens the GPU and runs the check: env.Details receives its
// cuda.Info first, each kernel check's cuda.CheckResult, the copies'
// []cuda.Bandwidth and each CUDANetStep, as they are made; the records
// are BenchmarkCUDACopy/dir=…/pinned=…/size=…MiB (GB/s) and
// BenchmarkCUDAStep/batch=…/side=…[/precision=…][/graphs=true] (step-ns),
// fp32 kernel by kernel keeping the name files before precisions used.
// A failed check is a *CUDACheckError, returned after every measurement.
func (c CUDACheck) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	gpu, err := openGPU(ctx, c.Ordinal)
	if err != nil {
		return nil, err
	}
	defer gpu.Close()
	send(env.Details.GPU, gpu.Info())
	var out []*benchfmt.Result
	keep := env.collect(&out)

	failed, err := c.kernelChecks(ctx, env, gpu)
	if err != nil {
		return out, err
	}
	if err := c.copies(ctx, env, gpu, keep); err != nil {
		return out, err
	}
	steps, stepFailed, err := c.netSteps(ctx, env, gpu, keep)
	failed = append(failed, stepFailed...)
	if err != nil {
		return out, err
	}
	for _, st := range steps {
		if math.IsNaN(float64(st.Loss)) || math.IsInf(float64(st.Loss), 0) {
			return out, &CUDACheckError{fmt.Sprintf("the Net's loss (%s) after %d steps is %v", st.Precision, len(st.Times)+1, st.Loss)}
		}
	}
	if len(failed) > 0 {
		return out, &CUDACheckError{fmt.Sprintf("%d checks failed (kernel outputs above their tolerance, or graphs that changed the loss): %s", len(failed), strings.Join(failed, ", "))}
	}
	return out, nil
}

// kernelChecks runs every kernel of both precisions against its
// reference, whatever Precisions times, and lists the outputs above their
// tolerance.
func (c CUDACheck) kernelChecks(ctx context.Context, env Env, gpu *cuda.Context) ([]string, error) {
	env.start("kernel checks")
	var failed []string
	for _, ch := range append(kernels.Checks(c.Seed), kernels.TF32Checks(c.Seed)...) {
		r, err := cuda.RunCheck(ctx, gpu, kernels.Modules, ch)
		if err != nil {
			return failed, err
		}
		for _, o := range r.Outputs {
			if !o.OK() {
				failed = append(failed, r.Name+"/"+o.Buf)
			}
		}
		send(env.Details.KernelCheck, r)
	}
	return failed, nil
}

// copies measures the copy speeds and keeps one CUDACopy record each.
func (c CUDACheck) copies(ctx context.Context, env Env, gpu *cuda.Context, keep func(*benchfmt.Result) error) error {
	env.start("copies")
	bw, err := cuda.MeasureBandwidth(ctx, gpu, c.Sizes, c.Reps)
	if err != nil {
		return err
	}
	for _, b := range bw {
		err := keep(&benchfmt.Result{
			Name:   benchfmt.Name(fmt.Sprintf("BenchmarkCUDACopy/dir=%s/pinned=%v/size=%dMiB", b.Direction(), b.Pinned, b.Bytes>>20)),
			Iters:  1,
			Values: []benchfmt.Value{{Value: b.GBps(), Unit: "GB/s"}},
		})
		if err != nil {
			return err
		}
	}
	send(env.Details.Bandwidth, bw)
	return nil
}

// netSteps times the Net's step at each precision, launched kernel by
// kernel and then replayed from CUDA Graphs: the same work from the same
// start, so the same loss (a differing loss is listed as failed).
func (c CUDACheck) netSteps(ctx context.Context, env Env, gpu *cuda.Context, keep func(*benchfmt.Result) error) ([]CUDANetStep, []string, error) {
	pool, err := batching.NewPool(c.Batch, 3*c.Side*c.Side)
	if err != nil {
		return nil, nil, err
	}
	b := pool.Get()
	rng := rand.New(rand.NewPCG(c.Seed, 0))
	for i := range b.Data {
		b.Data[i] = rng.Float32()*2 - 1
	}
	for i := range b.Labels {
		b.Labels[i] = int32(rng.IntN(10))
	}
	var steps []CUDANetStep
	var failed []string
	for _, precision := range c.Precisions {
		for _, graphs := range []bool{false, true} {
			st, err := c.timeStep(ctx, env, gpu, b, precision, graphs)
			if err != nil {
				return steps, failed, err
			}
			for _, t := range st.Times {
				if err := keep(c.stepRecord(st, t)); err != nil {
					return steps, failed, err
				}
			}
			send(env.Details.NetStep, st)
			if graphs && st.Loss != steps[len(steps)-1].Loss {
				failed = append(failed, fmt.Sprintf("%s: CUDA Graphs' loss %v is not the kernel-by-kernel loss %v", precision, st.Loss, steps[len(steps)-1].Loss))
			}
			steps = append(steps, st)
		}
	}
	return steps, failed, nil
}

// timeStep times Steps of the Net at precision on gpu, after one warm-up.
func (c CUDACheck) timeStep(ctx context.Context, env Env, gpu *cuda.Context, b *batching.Batch, precision string, graphs bool) (CUDANetStep, error) {
	st := CUDANetStep{Precision: precision, Graphs: graphs}
	how := "kernel by kernel"
	if graphs {
		how = "CUDA Graphs"
	}
	env.start(fmt.Sprintf("Net step, %s, %s", precision, how))
	plan, err := CUDANetPlan(c.Batch, c.Side, c.Seed, precision)
	if err != nil {
		return st, err
	}
	d, err := cuda.NewDevice(gpu, cuda.DeviceConfig{Plan: plan, Pinned: true, Graphs: graphs})
	if err != nil {
		return st, err
	}
	st.Times, st.Loss, err = cuda.TimeSteps(ctx, d, b, 1, c.Steps)
	return st, errors.Join(err, d.Close())
}

// stepRecord is one timed step's record.
func (c CUDACheck) stepRecord(st CUDANetStep, t time.Duration) *benchfmt.Result {
	suffix := ""
	if st.Precision != kernels.PrecisionFP32 {
		suffix += "/precision=" + st.Precision
	}
	if st.Graphs {
		suffix += "/graphs=true"
	}
	return &benchfmt.Result{
		Name:   benchfmt.Name(fmt.Sprintf("BenchmarkCUDAStep/batch=%d/side=%d%s", c.Batch, c.Side, suffix)),
		Iters:  1,
		Values: []benchfmt.Value{{Value: float64(t.Nanoseconds()), Unit: "step-ns"}},
	}
}

// CUDANetPlan is the Net's training step as kernels, for batches of batch
// samples of 3×side×side, at a precision (kernels.PrecisionFP32 or
// PrecisionTF32): what the check times and what `--device cuda` trains.
func CUDANetPlan(batch, side int, seed uint64, precision string) (cuda.Plan, error) {
	p, err := kernels.NetPlan(batch, side, seed)
	if err != nil {
		return cuda.Plan{}, err
	}
	return kernels.WithPrecision(p, precision)
}

// GPUSettings is the one spelling of the configuration lines that say
// which GPU, driver and JIT target a result file's numbers come from.
// (Files written before it by "cuda check" spell the last two
// cuda-driver and jit-target; nothing reads them by key.)
func GPUSettings(info cuda.Info) []resultfile.Config {
	return []resultfile.Config{
		{Key: "gpu", Value: info.Name},
		{Key: "gpu-driver", Value: info.Driver()},
		{Key: "gpu-jit-target", Value: info.JITTarget()},
	}
}

// openGPU loads the CUDA driver and opens the GPU of ordinal: how both
// GPU experiments (CUDACheck, CUDADecode) start.
func openGPU(ctx context.Context, ordinal int) (*cuda.Context, error) {
	if err := cuda.Load(); err != nil {
		return nil, err
	}
	return cuda.Open(ctx, ordinal)
}
