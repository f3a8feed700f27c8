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
	"github.com/headspace-bench/headspace/harness/batching"
	"github.com/headspace-bench/headspace/harness/device"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/results"
)

func init() {
	register(command{name: "cuda", summary: "check the GPU: kernels against their reference, copy speeds, the Net's step", run: runCUDA})
}

// netKernels is the Net as kernels: its PTX modules, its training step as
// a cuda.Plan, and the checks of every kernel against the float64
// reference. Package cuda/kernels fills it in (kernels.go, beside this
// file); a build without it says so rather than run anything.
var netKernels struct {
	Modules map[string][]byte
	Plan    func(batch, side int, seed uint64) (cuda.Plan, error)
	Checks  func(seed uint64) []cuda.Check
}

func kernelsPresent() error {
	if netKernels.Plan == nil || netKernels.Checks == nil {
		return errors.New("this build has no CUDA kernels (package cuda/kernels)")
	}
	return nil
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
	seed := pf.seed
	planFor := func(batch, side int) (cuda.Plan, error) { return netKernels.Plan(batch, side, seed) }
	d, err := cuda.NewDevice(c, cuda.DeviceConfig{PlanFor: planFor, Pinned: pinned})
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return cudaDevice{d, c}, nil
}

const cudaUsage = `
headspace cuda check: on the first NVIDIA GPU, prints the device, its
driver and the architecture the driver JIT-compiles the kernels' PTX for;
runs every kernel of the Net on small random inputs and reports its largest
error against the float64 Go reference (exit 1 if any is above its stated
tolerance); measures host-to-device and device-to-host copy speeds from
pinned and from pageable memory, at sizes from 1 MiB to 256 MiB; and times
the Net's training step at --batch samples of --side×--side (the median
of --steps, each timed on the GPU with CUDA events).

--out writes the copy speeds (GB/s) and step times (step-ns) in Go
benchmark format. Without a driver it exits 1 with "no CUDA driver found
(libcuda.so.1): …".`

func runCUDA(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fs := newFlagSet("cuda check", cudaUsage, stdout)
			cudaCheckFlags(fs)
			fs.Usage()
			return nil
		}
		if len(args) == 0 {
			return usagef("want a verb: headspace cuda check")
		}
		return usagef("unknown verb %q: want check", args[0])
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
	if err := checkResultsOut(f.out, benchmarks(false, "CUDACopy", "CUDAStep")); err != nil {
		return err
	}
	if err := cuda.Load(); err != nil {
		return err
	}
	if err := kernelsPresent(); err != nil {
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
	sizes, out                        string
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
	for _, ch := range netKernels.Checks(f.seed) {
		r, err := cuda.RunCheck(ctx, c, netKernels.Modules, ch)
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

	// The Net's step.
	plan, err := netKernels.Plan(f.batch, f.side, f.seed)
	if err != nil {
		return err
	}
	d, err := cuda.NewDevice(c, cuda.DeviceConfig{Plan: plan, Pinned: true})
	if err != nil {
		return err
	}
	defer d.Close()
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
	times, loss, err := cuda.TimeSteps(ctx, d, b, 1, f.steps)
	if err != nil {
		return err
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	fmt.Fprintf(stdout, "\nNet step, batch %d at %dx%d: median %v of %d (min %v, max %v), loss after them %.4g\n",
		f.batch, f.side, f.side, sorted[len(sorted)/2].Round(time.Microsecond), len(times),
		sorted[0].Round(time.Microsecond), sorted[len(sorted)-1].Round(time.Microsecond), loss)

	if f.out != "" {
		if err := writeCUDACheck(f, c.Info(), bw, times); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "results: %s\n", f.out)
	}
	if math.IsNaN(float64(loss)) || math.IsInf(float64(loss), 0) {
		return fmt.Errorf("the Net's loss after %d steps is %v", len(times)+1, loss)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d kernel outputs above their tolerance: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

func writeCUDACheck(f *cudaCheckOpts, info cuda.Info, bw []cuda.Bandwidth, times []time.Duration) error {
	cfg := append(machine.Environment("cuda:"+info.Name),
		results.Config{Key: "cuda-driver", Value: info.Driver()},
		results.Config{Key: "jit-target", Value: info.JITTarget()})
	var rs []*benchfmt.Result
	for _, b := range bw {
		rs = append(rs, &benchfmt.Result{
			Name:   benchfmt.Name(fmt.Sprintf("CUDACopy/dir=%s/pinned=%v/size=%dMiB", b.Direction(), b.Pinned, b.Bytes>>20)),
			Iters:  1,
			Values: []benchfmt.Value{{Value: b.GBps(), Unit: "GB/s"}},
		})
	}
	for _, t := range times {
		rs = append(rs, &benchfmt.Result{
			Name:   benchfmt.Name(fmt.Sprintf("CUDAStep/batch=%d/side=%d", f.batch, f.side)),
			Iters:  1,
			Values: []benchfmt.Value{{Value: float64(t.Nanoseconds()), Unit: "step-ns"}},
		})
	}
	return results.WriteFile(f.out, cfg, rs)
}

// openGPU opens the first GPU's context for the Net: without a driver the
// error starts "no CUDA driver found", without kernels it says so.
func openGPU() (*cuda.Context, error) {
	if err := cuda.Load(); err != nil {
		return nil, err
	}
	if err := kernelsPresent(); err != nil {
		return nil, fmt.Errorf("--device cuda: %w", err)
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
	return []results.Config{
		{Key: "gpu", Value: info.Name},
		{Key: "gpu-driver", Value: info.Driver()},
		{Key: "gpu-jit-target", Value: info.JITTarget()},
	}, nil
}
