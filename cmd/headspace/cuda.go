package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/cuda/kernels"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/blocks/batching"
	"github.com/headspace-bench/headspace/harness/blocks/device"
	"github.com/headspace-bench/headspace/harness/blocks/machine"
	"github.com/headspace-bench/headspace/harness/blocks/results"
	"github.com/headspace-bench/headspace/internal/summary"
)

func init() {
	register(command{name: "cuda", summary: "check the GPU: kernels against their reference, copy speeds, the Net's step", run: runCUDA})
}

// netPlan is the Net's training step as kernels at a precision
// (kernels.PrecisionFP32 or PrecisionTF32).
func netPlan(batch, side int, seed uint64, precision string) (cuda.Plan, error) {
	p, err := kernels.NetPlan(batch, side, seed)
	if err != nil {
		return cuda.Plan{}, err
	}
	return kernels.WithPrecision(p, precision)
}

// cudaDevice is a CUDA Device that owns its context.
type cudaDevice struct {
	*cuda.Device
	ctx *cuda.Context
}

func (d cudaDevice) Close() error { return errors.Join(d.Device.Close(), d.ctx.Close()) }

// openCUDA opens the first GPU with the Net's kernels, uploading from
// pinned (or pageable) memory, or says why there is none.
func openCUDA(pf *pipelineFlags, pinned bool) (device.Device, error) {
	c, err := openGPU()
	if err != nil {
		return nil, err
	}
	planFor, err := planForSample(pf)
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	d, err := cuda.NewDevice(c, cuda.DeviceConfig{PlanForSample: planFor, Pinned: pinned, Graphs: pf.graphs})
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return cudaDevice{d, c}, nil
}

// planForSample gives the device the Net's plan for each batch shape: a
// sample of 3×side×side values is a transformed sample (uploaded as
// float32 or uint8), and any other length a device-transform sample
// (transforms.DeviceApplier: a 16-byte header, so never a multiple of 3),
// for which the plan runs the transform's kernels first
// (kernels.NetPlanDevice) with the pipeline's crop, mask ratio and raw size.
func planForSample(pf *pipelineFlags) (func(batch, sampleLen int) (cuda.Plan, error), error) {
	cfg, err := pf.config(1, transforms.DeviceName)
	if err != nil {
		return nil, err
	}
	t := kernels.DeviceTransform{Config: cfg.Transforms, Width: cfg.Dataset.Width, Height: cfg.Dataset.Height, DeviceCrop: pf.deviceCrop}
	seed, precision := pf.seed, pf.precision
	return func(batch, sampleLen int) (cuda.Plan, error) {
		if sampleLen%3 == 0 {
			side := int(math.Round(math.Sqrt(float64(sampleLen) / 3)))
			if 3*side*side != sampleLen {
				return cuda.Plan{}, fmt.Errorf("a sample of %d values is not 3×side×side", sampleLen)
			}
			return netPlan(batch, side, seed, precision)
		}
		if sampleLen != t.SampleBytes() {
			return cuda.Plan{}, fmt.Errorf("a sample of %d bytes is neither 3×side×side values nor a device-transform sample of %d bytes (crop %d of %dx%d, device crop %v)",
				sampleLen, t.SampleBytes(), t.Config.Crop, t.Width, t.Height, t.DeviceCrop)
		}
		p, err := kernels.NetPlanDevice(batch, t, seed)
		if err != nil {
			return cuda.Plan{}, err
		}
		return kernels.WithPrecision(p, precision)
	}, nil
}

const cudaUsage = `
headspace cuda check: on the first NVIDIA GPU, prints the device, its
driver and the architecture the driver JIT-compiles the kernels' PTX for;
runs every kernel of the Net, and the device transform's kernels against
the Go fast transform, on small random inputs and reports its largest
error against the reference (exit 1 if any is above its stated
tolerance); measures host-to-device and device-to-host copy speeds from
pinned and from pageable memory, at sizes from 1 MiB to 256 MiB; and times
the Net's training step at --batch samples of --side×--side (the median
of --steps, each timed on the GPU with CUDA events), launched kernel by
kernel and then replayed from CUDA Graphs (exit 1 if the two losses
differ), at each --precision: fp32 (the default) and/or tf32 (the
convolutions on TF32 tensor cores). The kernel checks cover both
precisions' kernels whatever --precision says; tf32's tolerance is
derived from TF32's rounding (docs/gpu.md).

--out writes the copy speeds (GB/s) and step times (step-ns) in Go
benchmark format. Without a driver it exits 1 with "no CUDA driver found
(libcuda.so.1): …".`

func runCUDA(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "decode" {
		return runCUDADecode(ctx, args[1:], stdout)
	}
	if len(args) == 0 || args[0] != "check" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fs := newFlagSet("cuda check", cudaUsage, stdout)
			cudaCheckFlags(fs)
			fs.Usage()
			return nil
		}
		if len(args) == 0 {
			return usagef("want a verb: headspace cuda check, or headspace cuda decode")
		}
		return usagef("unknown verb %q: want check or decode", args[0])
	}
	fs := newFlagSet("cuda check", cudaUsage, stdout)
	f := cudaCheckFlags(fs)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	sizes, err := parseSizesMiB(f.sizes)
	if err != nil {
		return err
	}
	switch {
	case f.batch <= 0 || f.side <= 0:
		return usagef("--batch %d and --side %d must be positive", f.batch, f.side)
	case f.steps <= 0 || f.reps <= 0:
		return usagef("--steps %d and --reps %d must be positive", f.steps, f.reps)
	}
	if f.precisions, err = parseList("--precision", f.precision, kernels.Precisions); err != nil {
		return err
	}
	if err := checkResultsOut(f.out, benchmarks(false, "CUDACopy", "CUDAStep")); err != nil {
		return err
	}
	if err := cuda.Load(); err != nil {
		return err
	}
	c, err := cuda.Open(f.ordinal)
	if err != nil {
		return err
	}
	defer c.Close()
	return cudaCheck(ctx, c, f, sizes, stdout)
}

type cudaCheckOpts struct {
	ordinal, batch, side, steps, reps int
	seed                              uint64
	sizes, out, precision             string
	precisions                        []string // --precision, parsed
}

func cudaCheckFlags(fs *flag.FlagSet) *cudaCheckOpts {
	f := &cudaCheckOpts{}
	fs.IntVar(&f.ordinal, "gpu", 0, "`ordinal` of the GPU")
	fs.IntVar(&f.batch, "batch", 256, "samples per `batch` of the timed Net step")
	fs.IntVar(&f.side, "side", 256, "image `side` of the timed Net step")
	fs.IntVar(&f.steps, "steps", 5, "timed Net `steps` (after one warm-up)")
	fs.IntVar(&f.reps, "reps", 5, "`copies` of each size; the median is reported")
	fs.Uint64Var(&f.seed, "seed", 1, "`seed` of the checks' inputs and the Net's weights")
	fs.StringVar(&f.sizes, "sizes", "1,2,4,8,16,32,64,128,256", "comma-separated copy `sizes` in MiB")
	fs.StringVar(&f.out, "out", "", "benchmark-format result `file` (GB/s, step-ns), replaced")
	fs.StringVar(&f.precision, "precision", kernels.PrecisionFP32, "comma-separated `precisions` of the timed Net step's convolutions: fp32 and/or tf32 (the kernel checks run both always)")
	return f
}

func parseSizesMiB(s string) ([]int64, error) {
	ns, err := parseInts("--sizes", s)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(ns))
	for i, n := range ns {
		out[i] = int64(n) << 20
	}
	return out, nil
}

// cudaCheck runs the check on an opened context.
func cudaCheck(ctx context.Context, c *cuda.Context, f *cudaCheckOpts, sizes []int64, stdout io.Writer) error {
	info := c.Info()
	link := "PCIe link not reported"
	if info.LinkSpeed != "" {
		link = fmt.Sprintf("PCIe %s x%s", info.LinkSpeed, info.LinkWidth)
	}
	fmt.Fprintf(stdout, "device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB, bus %s, %s\n",
		info.Ordinal, info.Name, info.Major, info.Minor, info.SMs, float64(info.TotalMem)/(1<<30), info.PCIBusID, link)
	fmt.Fprintf(stdout, "driver %s (CUDA driver API %d), PTX JIT target %s\n\n", info.Driver(), info.DriverVersion, info.JITTarget())

	// The kernels against the reference.
	var failed []string
	fmt.Fprintf(stdout, "%-28s %-12s %12s %12s\n", "kernel check", "output", "max error", "tolerance")
	// Every kernel of both precisions, whatever --precision times.
	for _, ch := range append(kernels.Checks(f.seed), kernels.TF32Checks(f.seed)...) {
		r, err := cuda.RunCheck(ctx, c, kernels.Modules, ch)
		if err != nil {
			return err
		}
		for _, o := range r.Outputs {
			verdict := "ok"
			if !o.OK() {
				verdict = "FAIL"
				failed = append(failed, r.Name+"/"+o.Buf)
			}
			fmt.Fprintf(stdout, "%-28s %-12s %12.3g %12.3g  %s\n", r.Name, o.Buf, o.MaxErr, o.Tol, verdict)
		}
	}

	// Copy speeds.
	bw, err := cuda.MeasureBandwidth(ctx, c, sizes, f.reps)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\ncopy GB/s (median of %d)  %12s %12s %12s %12s\n", f.reps, "htod pinned", "htod pageable", "dtoh pinned", "dtoh pageable")
	for _, n := range sizes {
		fmt.Fprintf(stdout, "%-25s", fmt.Sprintf("%d MiB", n>>20))
		for _, dir := range []bool{true, false} {
			for _, pin := range []bool{true, false} {
				for _, b := range bw {
					if b.Bytes == n && b.HostToDevice == dir && b.Pinned == pin {
						fmt.Fprintf(stdout, " %12.2f", b.GBps())
					}
				}
			}
		}
		fmt.Fprintln(stdout)
	}

	// The Net's step, launched kernel by kernel and then replayed from
	// CUDA Graphs: the same work from the same start, so the same loss.
	pool, err := batching.NewPool(f.batch, 3*f.side*f.side)
	if err != nil {
		return err
	}
	b := pool.Get()
	rng := rand.New(rand.NewPCG(f.seed, 0))
	for i := range b.Data {
		b.Data[i] = rng.Float32()*2 - 1
	}
	for i := range b.Labels {
		b.Labels[i] = int32(rng.IntN(10))
	}
	var steps []cudaStepTimes
	for _, precision := range f.precisions {
		for _, graphs := range []bool{false, true} {
			plan, err := netPlan(f.batch, f.side, f.seed, precision)
			if err != nil {
				return err
			}
			d, err := cuda.NewDevice(c, cuda.DeviceConfig{Plan: plan, Pinned: true, Graphs: graphs})
			if err != nil {
				return err
			}
			st := cudaStepTimes{precision: precision, graphs: graphs}
			st.times, st.loss, err = cuda.TimeSteps(ctx, d, b, 1, f.steps)
			if err = errors.Join(err, d.Close()); err != nil {
				return err
			}
			steps = append(steps, st)
			how := "kernel by kernel"
			if graphs {
				how = "CUDA Graphs"
			}
			fmt.Fprintf(stdout, "\nNet step (%s, %s), batch %d at %dx%d: median %v of %d (min %v, max %v), loss after them %.4g\n",
				precision, how, f.batch, f.side, f.side, summary.MedianDuration(st.times).Round(time.Microsecond), len(st.times),
				slices.Min(st.times).Round(time.Microsecond), slices.Max(st.times).Round(time.Microsecond), st.loss)
			if graphs && st.loss != steps[len(steps)-2].loss {
				failed = append(failed, fmt.Sprintf("%s: CUDA Graphs' loss %v is not the kernel-by-kernel loss %v", precision, st.loss, steps[len(steps)-2].loss))
			}
		}
	}

	if f.out != "" {
		if err := writeCUDACheck(f, c.Info(), bw, steps); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "results: %s\n", f.out)
	}
	for _, st := range steps {
		if math.IsNaN(float64(st.loss)) || math.IsInf(float64(st.loss), 0) {
			return fmt.Errorf("the Net's loss (%s) after %d steps is %v", st.precision, len(st.times)+1, st.loss)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d checks failed (kernel outputs above their tolerance, or graphs that changed the loss): %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// cudaStepTimes are the Net's step times at one precision, launched
// kernel by kernel or replayed from CUDA Graphs, and the loss after them.
type cudaStepTimes struct {
	precision string
	graphs    bool
	times     []time.Duration
	loss      float32
}

func writeCUDACheck(f *cudaCheckOpts, info cuda.Info, bw []cuda.Bandwidth, steps []cudaStepTimes) error {
	cfg := append(machine.Environment("cuda:"+info.Name), gpuSettings(info)...)
	var rs []*benchfmt.Result
	for _, b := range bw {
		rs = append(rs, &benchfmt.Result{
			Name:   benchfmt.Name(fmt.Sprintf("CUDACopy/dir=%s/pinned=%v/size=%dMiB", b.Direction(), b.Pinned, b.Bytes>>20)),
			Iters:  1,
			Values: []benchfmt.Value{{Value: b.GBps(), Unit: "GB/s"}},
		})
	}
	// fp32 kernel by kernel keeps its old name, so earlier files compare.
	for _, st := range steps {
		suffix := ""
		if st.precision != kernels.PrecisionFP32 {
			suffix += "/precision=" + st.precision
		}
		if st.graphs {
			suffix += "/graphs=true"
		}
		for _, t := range st.times {
			rs = append(rs, &benchfmt.Result{
				Name:   benchfmt.Name(fmt.Sprintf("CUDAStep/batch=%d/side=%d%s", f.batch, f.side, suffix)),
				Iters:  1,
				Values: []benchfmt.Value{{Value: float64(t.Nanoseconds()), Unit: "step-ns"}},
			})
		}
	}
	return results.WriteFile(f.out, cfg, rs)
}

// openGPU opens the first GPU's context for the Net: without a driver the
// error starts "no CUDA driver found".
func openGPU() (*cuda.Context, error) {
	if err := cuda.Load(); err != nil {
		return nil, err
	}
	return cuda.Open(0)
}

// cudaSettings probes the first GPU before anything is measured or any
// file is opened: without a driver, kernels or a GPU it fails at once, and
// otherwise it gives the configuration lines that say which GPU, driver
// and JIT target the numbers come from.
func cudaSettings() ([]results.Config, error) {
	c, err := openGPU()
	if err != nil {
		return nil, err
	}
	info := c.Info()
	if err := c.Close(); err != nil {
		return nil, err
	}
	return gpuSettings(info), nil
}

// gpuSettings is the one spelling of the configuration lines that say
// which GPU, driver and JIT target a result file's numbers come from.
// (Files written before it by "cuda check" spell the last two
// cuda-driver and jit-target; nothing reads them by key.)
func gpuSettings(info cuda.Info) []results.Config {
	return []results.Config{
		{Key: "gpu", Value: info.Name},
		{Key: "gpu-driver", Value: info.Driver()},
		{Key: "gpu-jit-target", Value: info.JITTarget()},
	}
}
