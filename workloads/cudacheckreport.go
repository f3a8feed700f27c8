package workloads

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/cuda/kernels"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/summary"
)

// cudaDevice is a CUDA Device that owns its context.
type cudaDevice struct {
	*cuda.Device
	ctx *cuda.Context
	dec *cuda.JPEGDecoder // --decoder nvjpeg's, or nil
}

func (d cudaDevice) Close() error {
	err := d.Device.Close()
	if d.dec != nil {
		err = errors.Join(err, d.dec.Close())
	}
	return errors.Join(err, d.ctx.Close())
}

// openCUDA opens the first GPU with the Net's kernels, uploading from
// pinned (or pageable) memory, or says why there is none.
func openCUDA(ctx context.Context, pf *pipelineFlags, pinned bool) (device.Device, error) {
	c, err := openGPU(ctx, 0)
	if err != nil {
		return nil, err
	}
	planFor, err := planForSample(pf)
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	dc := cuda.DeviceConfig{PlanForSample: planFor, Pinned: pinned, Graphs: pf.graphs}
	var dec *cuda.JPEGDecoder
	if pf.data.Decoder == ondisk.DecoderNvjpeg {
		// The loader's batches carry JPEG files: the device decodes
		// them, a batch at a time, with as many CPU threads for nvJPEG's
		// host stage as the machine has cores.
		cfg, err := pf.config(ctx, 1, transforms.DeviceName)
		if err == nil {
			dec, err = cuda.NewJPEGSampleDecoder(c, nil, pf.batch, runtime.NumCPU())
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("--decoder nvjpeg: %w", err), c.Close())
		}
		dc.Decode = &cuda.DeviceDecode{Decoder: dec, Width: cfg.Dataset.Width, Height: cfg.Dataset.Height, Header: transforms.DeviceHeader}
	}
	d, err := cuda.NewDevice(c, dc)
	if err != nil {
		if dec != nil {
			err = errors.Join(err, dec.Close())
		}
		return nil, errors.Join(err, c.Close())
	}
	return cudaDevice{d, c, dec}, nil
}

// nvjpegSettings is what a result file records of the device's JPEG
// decoder with --decoder nvjpeg (the loader's lines say decoder nvjpeg):
// NvjpegSettings of a decoder opened on the GPU and closed
// again, before the device opens (the backend depends on the card).
func nvjpegSettings(ctx context.Context) ([]resultfile.Config, error) {
	c, err := openGPU(ctx, 0)
	if err != nil {
		return nil, err
	}
	dec, err := cuda.NewJPEGSampleDecoder(c, nil, 1, 1)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("--decoder nvjpeg: %w", err), c.Close())
	}
	v, err := dec.Version()
	settings := NvjpegSettings(dec.Library(), v, dec.Backend())
	if err = errors.Join(err, dec.Close(), c.Close()); err != nil {
		return nil, fmt.Errorf("--decoder nvjpeg: %w", err)
	}
	return settings, nil
}

// planForSample gives the device the Net's plan for each batch shape: a
// sample of 3×side×side values is a transformed sample (uploaded as
// float32 or uint8), and any other length a device-transform sample
// (transforms.DeviceApplier: a 16-byte header, so never a multiple of 3),
// for which the plan runs the transform's kernels first
// (kernels.NetPlanDevice) with the pipeline's crop, mask ratio and raw size.
func planForSample(pf *pipelineFlags) (func(batch, sampleLen int) (cuda.Plan, error), error) {
	cfg, err := pf.config(context.Background(), 1, transforms.DeviceName)
	if err != nil {
		return nil, err
	}
	t := kernels.DeviceTransform{Config: cfg.Transforms, Width: cfg.Dataset.Width, Height: cfg.Dataset.Height, DeviceCrop: cfg.DeviceCrop}
	seed, precision, backend := pf.seed, pf.precision, pf.backend
	if backend == "" {
		backend = cuda.BackendKernels
	}
	return func(batch, sampleLen int) (cuda.Plan, error) {
		if sampleLen%3 == 0 {
			side := int(math.Round(math.Sqrt(float64(sampleLen) / 3)))
			if 3*side*side != sampleLen {
				return cuda.Plan{}, fmt.Errorf("a sample of %d values is not 3×side×side", sampleLen)
			}
			return CUDANetPlan(batch, side, seed, precision, backend)
		}
		if sampleLen != t.SampleBytes() {
			return cuda.Plan{}, fmt.Errorf("a sample of %d bytes is neither 3×side×side values nor a device-transform sample of %d bytes (crop %d of %dx%d, device crop %v)",
				sampleLen, t.SampleBytes(), t.Config.Crop, t.Width, t.Height, t.DeviceCrop)
		}
		p, err := kernels.NetPlanDevice(batch, t, seed)
		if err != nil {
			return cuda.Plan{}, err
		}
		if backend == cuda.BackendLibraries {
			return kernels.OnLibraries(p, precision)
		}
		return kernels.WithPrecision(p, precision)
	}, nil
}

// cudaCheckRun is what headspace cuda check keeps of a run beside the
// experiment: its console, and what the run opened and found.
type cudaCheckRun struct {
	stdout  io.Writer
	outcome CUDACheckOutcome
	failed  error // a check that ran and failed still leaves its measurements
}

// The bounds of cuda check's flags.
var _ = cli.Declare(map[string]cli.Bound{
	"cuda check gpu":  {Lo: 0, Hi: 1024},
	"cuda check side": {Lo: 1, Hi: 32768},
	"cuda check reps": {Lo: 1, Hi: cli.MaxCount},
})

// Flags are cuda check's, bound to the check's fields.
func (c *CUDACheck) Flags(fs *flag.FlagSet) {
	fs.IntVar(&c.Ordinal, "gpu", c.Ordinal, "`ordinal` of the GPU")
	fs.IntVar(&c.Batch, "batch", c.Batch, "samples per `batch` of the timed Net step")
	fs.IntVar(&c.Side, "side", c.Side, "image `side` of the timed Net step")
	fs.IntVar(&c.Steps, "steps", c.Steps, "timed Net `steps` (after one warm-up)")
	fs.IntVar(&c.Reps, "reps", c.Reps, "`copies` of each size; the median is reported")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "`seed` of the checks' inputs and the Net's weights")
	fs.Var(mibFlag{&c.Sizes}, "sizes", "comma-separated copy `sizes` in MiB")
	fs.Var(listFlag{"precision", &c.Precisions, kernels.Precisions}, "precision", "comma-separated `precisions` of the timed Net step's convolutions: fp32 and/or tf32 (the kernel checks run both always)")
}

// Prepare checks the flags; the console prints each measurement as it
// is made, and the file's lines are the GPU's and the libraries', once
// the check has opened them.
func (c *CUDACheck) Prepare(_ context.Context, stdout, _ io.Writer) (Setup, error) {
	if err := c.Validate(); err != nil {
		return Setup{}, cli.UsageError{Msg: err.Error()}
	}
	r := &cudaCheckRun{stdout: stdout}
	c.run = r
	return Setup{Device: func() string { return "cuda:" + r.outcome.GPU.Name },
		Lines: func() []resultfile.Config {
			return slices.Concat(GPUSettings(r.outcome.GPU), c.Settings(), DNNSettings(r.outcome.Backend))
		}}, nil
}

// Report is nothing more after a run, which printed each measurement as
// it was made, but a failed check (exit 1); from --from, the copy speeds
// and the Net's steps of the file.
func (c *CUDACheck) Report(o CUDACheckOutcome, stdout io.Writer) error {
	if c.run != nil {
		return c.run.failed
	}
	reps, _ := strconv.Atoi(setting(o.Settings, "copy-reps"))
	var sizes []int64
	for _, b := range o.Copies {
		if !slices.Contains(sizes, b.Bytes) {
			sizes = append(sizes, b.Bytes)
		}
	}
	line := "device " + setting(o.Settings, "device")
	for _, k := range []string{"gpu-driver", "gpu-jit-target"} {
		if v := setting(o.Settings, k); v != "" {
			line += ", " + k + " " + v
		}
	}
	fmt.Fprintln(stdout, line)
	p := checkPrinter(stdout, reps, o.Batch, o.Side, sizes, false)
	if len(o.Copies) > 0 {
		p.Copies(o.Copies)
	}
	for _, st := range o.Steps {
		p.NetStep(st)
	}
	return nil
}

// checkPrinter prints cuda check's console output as the check reports
// it (the GPU, each kernel check, the copy speeds, each Net step).
// loss says whether each step's loss is known (a run's; a file holds
// none).
func checkPrinter(stdout io.Writer, reps, batch, side int, sizes []int64, loss bool) CUDACheckProgress {
	var p CUDACheckProgress
	p.GPU = func(info cuda.Info) {
		link := "PCIe link not reported"
		if info.LinkSpeed != "" {
			link = fmt.Sprintf("PCIe %s x%s", info.LinkSpeed, info.LinkWidth)
		}
		fmt.Fprintf(stdout, "device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB, bus %s, %s\n",
			info.Ordinal, info.Name, info.Major, info.Minor, info.SMs, float64(info.TotalMem)/(1<<30), info.PCIBusID, link)
		fmt.Fprintf(stdout, "driver %s (CUDA driver API %d), PTX JIT target %s\n\n", info.Driver(), info.DriverVersion, info.JITTarget())
		fmt.Fprintf(stdout, "%-28s %-12s %12s %12s\n", "kernel check", "output", "max error", "tolerance")
	}
	p.KernelCheck = func(r cuda.CheckResult) {
		for _, o := range r.Outputs {
			verdict := "ok"
			if !o.OK() {
				verdict = "FAIL"
			}
			fmt.Fprintf(stdout, "%-28s %-12s %12.3g %12.3g  %s\n", r.Name, o.Buf, o.MaxErr, o.Tol, verdict)
		}
	}
	p.Copies = func(bw []CUDACopy) {
		label := fmt.Sprintf("copy GB/s (median of %d)", reps)
		if reps == 0 {
			label = "copy GB/s (median)" // a file that does not record its reps
		}
		fmt.Fprintf(stdout, "\n%s  %12s %12s %12s %12s\n", label, "htod pinned", "htod pageable", "dtoh pinned", "dtoh pageable")
		for _, n := range sizes {
			fmt.Fprintf(stdout, "%-25s", fmt.Sprintf("%d MiB", n>>20))
			for _, dir := range []bool{true, false} {
				for _, pin := range []bool{true, false} {
					for _, b := range bw {
						if b.Bytes == n && b.HostToDevice == dir && b.Pinned == pin {
							fmt.Fprintf(stdout, " %12.2f", b.GBps)
						}
					}
				}
			}
			fmt.Fprintln(stdout)
		}
	}
	p.NetStep = func(st CUDANetStep) {
		fmt.Fprintf(stdout, "\nNet step (%s on %s, %s), batch %d at %dx%d: median %v of %d (min %v, max %v)",
			st.Precision, st.Backend, st.launch(), batch, side, side, summary.MedianDuration(st.Times).Round(time.Microsecond), len(st.Times),
			slices.Min(st.Times).Round(time.Microsecond), slices.Max(st.Times).Round(time.Microsecond))
		if loss {
			fmt.Fprintf(stdout, ", loss after them %.4g", st.Loss)
		}
		fmt.Fprintln(stdout)
	}
	return p
}

// mibFlag is --sizes, a comma-separated list of MiB bound to a field of
// bytes.
type mibFlag struct{ p *[]int64 }

func (f mibFlag) String() string {
	if f.p == nil {
		return ""
	}
	mib := make([]int, len(*f.p))
	for i, n := range *f.p {
		mib[i] = int(n >> 20)
	}
	return joinInts(mib)
}

func (f mibFlag) Set(s string) error {
	mib, err := cli.ParseInts("--sizes", s)
	*f.p = make([]int64, len(mib))
	for i, n := range mib {
		(*f.p)[i] = int64(n) << 20
	}
	return err
}

// cudaSettings probes the first GPU before anything is measured or any
// file is opened: without a driver, kernels or a GPU it fails at once, and
// otherwise it gives the configuration lines that say which GPU, driver
// and JIT target the numbers come from.
func cudaSettings(ctx context.Context) ([]resultfile.Config, error) {
	c, err := openGPU(ctx, 0)
	if err != nil {
		return nil, err
	}
	info := c.Info()
	if err := c.Close(); err != nil {
		return nil, err
	}
	return GPUSettings(info), nil
}
