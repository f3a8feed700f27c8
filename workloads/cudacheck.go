package workloads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
// their reference on small random inputs, and the same checks on cuDNN
// where it loads (kernels.LibraryChecks); host-to-device and
// device-to-host copy speeds from pinned and pageable memory at each of
// Sizes; and the Net's training step at Batch samples of Side×Side, timed
// on the GPU with CUDA events, launched kernel by kernel and then
// replayed from CUDA Graphs, at each of Precisions, on the kernels and
// then, where cuDNN and cuBLAS load, on cuDNN (kernels.OnLibraries).
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
	// run is what headspace cuda check keeps of a run (nil but in its
	// command): its console, what it opened, a failed check.
	run *cudaCheckRun
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
// are known once it is open: Measure's outcome holds its cuda.Info.
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
		if !slices.Contains(kernels.Precisions, p) {
			return fmt.Errorf("precision %q: want %s", p, strings.Join(kernels.Precisions, " or "))
		}
	}
	return nil
}

// CUDANetStep is the Net's step timed at one precision on one backend
// (cuda.BackendKernels or cuda.BackendLibraries), launched kernel by
// kernel or replayed from CUDA Graphs, and the loss after the steps
// (which its records do not hold: 0 when decoded).
type CUDANetStep struct {
	Backend   string
	Precision string
	Graphs    bool
	Times     []time.Duration
	Loss      float32
}

// launch is how the step was launched: "kernel by kernel" or "CUDA
// Graphs".
func (st CUDANetStep) launch() string {
	if st.Graphs {
		return "CUDA Graphs"
	}
	return "kernel by kernel"
}

// CUDACheckError is a check that ran and failed: a kernel's output above
// its tolerance, CUDA Graphs that changed the loss, or a loss that is not
// finite. Measure returns it after every measurement, with all of them.
type CUDACheckError struct{ msg string }

func (e *CUDACheckError) Error() string { return e.msg }

// CUDACheckOutcome is what a CUDACheck measured. Its records
// (CUDACheckCodec) hold the copy speeds and the Net's step times; the
// GPU is the result file's configuration lines (GPUSettings), and the
// kernel checks and the losses are in no record: zero in an outcome
// decoded from records.
type CUDACheckOutcome struct {
	GPU    cuda.Info
	Checks []cuda.CheckResult
	// Backend is what cuda.ChooseBackend makes of this machine's cuDNN
	// and cuBLAS (auto): the libraries, whose checks are among Checks
	// and whose steps are among Steps, or the kernels and why.
	Backend cuda.Backend
	// Copies are the copy speeds, in the order measured.
	Copies []CUDACopy
	// Batch and Side are the timed Net step's, Steps each of its timings
	// (a precision, launched kernel by kernel or from CUDA Graphs).
	Batch, Side int
	Steps       []CUDANetStep
	// Settings are the result file's lines, where cuda check --from
	// gives them (settled); the codec reads records alone.
	Settings []resultfile.Config
}

// settle gives o its file's settings.
func (o *CUDACheckOutcome) settle(s []resultfile.Config) { o.Settings = s }

// CUDACopy is one copy speed: its direction, its host memory, its size
// (a whole number of MiB, as its record names it) and its median speed.
type CUDACopy struct {
	HostToDevice, Pinned bool
	Bytes                int64
	GBps                 float64
}

// CUDACheckProgress receives what a CUDACheck measures as it is made,
// for `headspace cuda check`'s console: the GPU it opened, first; each
// kernel check; the copy speeds; each Net step. A field left nil is not
// called.
type CUDACheckProgress struct {
	GPU         func(cuda.Info)
	KernelCheck func(cuda.CheckResult)
	Copies      func([]CUDACopy)
	NetStep     func(CUDANetStep)
}

// Measure is MeasureEach with no callbacks; in headspace cuda check,
// with its console's, and a failed check kept for its exit status while
// the file records every measurement.
func (c CUDACheck) Measure(ctx context.Context, env Env) (CUDACheckOutcome, error) {
	if c.run == nil {
		return c.MeasureEach(ctx, env, CUDACheckProgress{})
	}
	o, err := c.MeasureEach(ctx, env, checkPrinter(c.run.stdout, c.Reps, c.Batch, c.Side, c.Sizes, true))
	c.run.outcome = o
	if errors.As(err, new(*CUDACheckError)) {
		c.run.failed, err = err, nil
	}
	return o, err
}

// MeasureEach opens the GPU and runs the check: every kernel check, the
// copies, then the Net's steps, each passed to its callback of each as
// it is made (`headspace cuda check`'s console). A failed check is a
// *CUDACheckError, returned after every measurement, with all of them.
func (c CUDACheck) MeasureEach(ctx context.Context, env Env, each CUDACheckProgress) (CUDACheckOutcome, error) {
	out := CUDACheckOutcome{Batch: c.Batch, Side: c.Side}
	if err := c.Validate(); err != nil {
		return out, err
	}
	gpu, err := openGPU(ctx, c.Ordinal)
	if err != nil {
		return out, err
	}
	defer gpu.Close()
	out.GPU = gpu.Info()
	send(each.GPU, out.GPU)

	failed, err := c.kernelChecks(ctx, env, gpu, &out, each.KernelCheck)
	if err != nil {
		return out, err
	}
	if err := c.copies(ctx, env, gpu, &out, each.Copies); err != nil {
		return out, err
	}
	stepFailed, err := c.netSteps(ctx, env, gpu, &out, each.NetStep)
	failed = append(failed, stepFailed...)
	if err != nil {
		return out, err
	}
	for _, st := range out.Steps {
		if math.IsNaN(float64(st.Loss)) || math.IsInf(float64(st.Loss), 0) {
			return out, &CUDACheckError{fmt.Sprintf("the Net's loss (%s on %s) after %d steps is %v", st.Precision, st.Backend, len(st.Times)+1, st.Loss)}
		}
	}
	if len(failed) > 0 {
		return out, &CUDACheckError{fmt.Sprintf("%d checks failed (kernel outputs above their tolerance, or graphs that changed the loss): %s", len(failed), strings.Join(failed, ", "))}
	}
	return out, nil
}

// Run measures the check (Measure) and returns its records
// (CUDACheckCodec), with a *CUDACheckError after every measurement when
// a check failed.
func (c CUDACheck) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[CUDACheckOutcome](ctx, c, env)
}

// Codec is CUDACheckCodec.
func (CUDACheck) Codec() Codec[CUDACheckOutcome] { return CUDACheckCodec }

var _ Typed[CUDACheckOutcome] = CUDACheck{}

// CUDACheckCodec is a CUDACheck's records codec: a record a copy speed,
// BenchmarkCUDACopy/dir=htod|dtoh/pinned=…/size=…MiB in GB/s, then a
// record a timed Net step, BenchmarkCUDAStep/batch=…/side=…, with
// /backend=cudnn on cuDNN (the kernels' records leave it out, as every
// file before the libraries did), /precision=… unless fp32 and
// /graphs=true when replayed from CUDA Graphs, in step-ns.
var CUDACheckCodec = Codec[CUDACheckOutcome]{
	Experiment: "CUDA",
	Keys: map[string][]string{
		"CUDACopy": {"dir", "pinned", "size"},
		"CUDAStep": {"batch", "side", "backend", "precision", "graphs"},
	},
	Optional: map[string][]string{"CUDAStep": {"backend", "precision", "graphs"}},
	Order:    []string{"CUDACopy", "CUDAStep"},
	encode: func(o CUDACheckOutcome) []*benchfmt.Result {
		out := recordsOf(o.Copies, func(b CUDACopy) *benchfmt.Result {
			dir := "dtoh"
			if b.HostToDevice {
				dir = "htod"
			}
			return &benchfmt.Result{
				Name:   benchfmt.Name(fmt.Sprintf("BenchmarkCUDACopy/dir=%s/pinned=%v/size=%dMiB", dir, b.Pinned, b.Bytes>>20)),
				Iters:  1,
				Values: []benchfmt.Value{{Value: b.GBps, Unit: "GB/s"}},
			}
		})
		for _, st := range o.Steps {
			for _, t := range st.Times {
				out = append(out, stepRecord(o.Batch, o.Side, st, t))
			}
		}
		return out
	},
	decode: decodeCUDACheck,
}

// decodeCUDACheck reads the copies and the steps back: the copies
// first (CUDACheckCodec.Order), then each step's records, consecutive
// ones of one backend, precision and launch one step.
func decodeCUDACheck(recs []Record) (CUDACheckOutcome, error) {
	var out CUDACheckOutcome
	for _, rec := range recs {
		name := fullName(rec.Result)
		if rec.Iters != 1 || len(rec.Values) != 1 {
			return out, fmt.Errorf("%s: %d iterations and %d values, want 1 and 1", name, rec.Iters, len(rec.Values))
		}
		if rec.Benchmark == "CUDACopy" {
			b, err := decodeCUDACopy(rec, name)
			if err != nil {
				return out, err
			}
			out.Copies = append(out.Copies, b)
			continue
		}
		batch, err := rec.count("batch", true)
		if err != nil {
			return out, err
		}
		side, err := rec.count("side", true)
		if err != nil {
			return out, err
		}
		if len(out.Steps) == 0 {
			out.Batch, out.Side = batch, side
		} else if batch != out.Batch || side != out.Side {
			return out, fmt.Errorf("%s: a step of another batch or side than the first's (batch=%d/side=%d)", name, out.Batch, out.Side)
		}
		st, err := decodeCUDANetStep(rec, name)
		if err != nil {
			return out, err
		}
		ns, err := rec.Value("step-ns")
		if err != nil {
			return out, err
		}
		if n := len(out.Steps); n == 0 || out.Steps[n-1].Backend != st.Backend || out.Steps[n-1].Precision != st.Precision || out.Steps[n-1].Graphs != st.Graphs {
			out.Steps = append(out.Steps, st)
		}
		last := &out.Steps[len(out.Steps)-1]
		last.Times = append(last.Times, time.Duration(ns))
	}
	return out, nil
}

// decodeCUDACopy reads a copy's record, name: its direction, pinned
// memory, size and GB/s.
func decodeCUDACopy(rec Record, name string) (CUDACopy, error) {
	b := CUDACopy{HostToDevice: rec.Keys["dir"] == "htod"}
	if !b.HostToDevice && rec.Keys["dir"] != "dtoh" {
		return b, fmt.Errorf("%s: dir %q: want htod or dtoh", name, rec.Keys["dir"])
	}
	pinned, err := strconv.ParseBool(rec.Keys["pinned"])
	if err != nil || strconv.FormatBool(pinned) != rec.Keys["pinned"] {
		return b, fmt.Errorf("%s: pinned %q: want true or false", name, rec.Keys["pinned"])
	}
	b.Pinned = pinned
	mib, ok := strings.CutSuffix(rec.Keys["size"], "MiB")
	n, err := strconv.ParseInt(mib, 10, 64)
	if !ok || err != nil || n <= 0 {
		return b, fmt.Errorf("%s: size %q: want a positive number of MiB", name, rec.Keys["size"])
	}
	b.Bytes = n << 20
	b.GBps, err = rec.Value("GB/s")
	return b, err
}

// decodeCUDANetStep reads which step a step record, name, times: its
// backend, precision and launch, each named only where it is not the
// default (the kernels, FP32, no CUDA graph).
func decodeCUDANetStep(rec Record, name string) (CUDANetStep, error) {
	st := CUDANetStep{Backend: rec.Keys["backend"], Precision: rec.Keys["precision"], Graphs: rec.Keys["graphs"] == "true"}
	switch st.Backend {
	case cuda.BackendLibraries:
	case "":
		st.Backend = cuda.BackendKernels
	case cuda.BackendKernels:
		return st, fmt.Errorf("%s: backend=%s, which its name leaves out", name, st.Backend)
	default:
		return st, fmt.Errorf("%s: backend %q: want %s, or no backend= for the kernels", name, st.Backend, cuda.BackendLibraries)
	}
	switch {
	case st.Precision == kernels.PrecisionFP32:
		return st, fmt.Errorf("%s: precision=%s, which its name leaves out", name, st.Precision)
	case st.Precision == "":
		st.Precision = kernels.PrecisionFP32
	}
	if !st.Graphs && rec.Keys["graphs"] != "" {
		return st, fmt.Errorf("%s: graphs %q: want true, or no graphs=", name, rec.Keys["graphs"])
	}
	return st, nil
}

// kernelChecks runs every kernel of both precisions against its
// reference, whatever Precisions times, and lists the outputs above their
// tolerance.
func (c CUDACheck) kernelChecks(ctx context.Context, env Env, gpu *cuda.Context, out *CUDACheckOutcome, each func(cuda.CheckResult)) ([]string, error) {
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
		out.Checks = append(out.Checks, r)
		send(each, r)
	}
	return append(failed, c.dnnChecks(ctx, env, gpu, out, each)...), nil
}

// dnnChecks runs kernels.LibraryChecks (the checks whose launches cuDNN
// replaces, on cuDNN, against the same reference) where cuDNN and cuBLAS
// load; where they do not, it says why and the Net's step runs on the
// kernels alone (cuda.ChooseBackend's rule). A library's failing call is
// a failed check, listed with the others, not an end to the
// measurements.
func (c CUDACheck) dnnChecks(ctx context.Context, env Env, gpu *cuda.Context, out *CUDACheckOutcome, each func(cuda.CheckResult)) []string {
	b, _ := cuda.ChooseBackend(cuda.BackendAuto, cuda.LoadDNN())
	out.Backend = b
	if b.Name != cuda.BackendLibraries {
		env.start("cuDNN checks: not run, the Net's step runs on the kernels alone: " + b.Reason)
		return nil
	}
	env.start("cuDNN checks")
	var failed []string
	for _, ch := range kernels.LibraryChecks(c.Seed) {
		r, err := cuda.RunCheck(ctx, gpu, kernels.Modules, ch)
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		for _, o := range r.Outputs {
			if !o.OK() {
				failed = append(failed, r.Name+"/"+o.Buf)
			}
		}
		out.Checks = append(out.Checks, r)
		send(each, r)
	}
	return failed
}

// copies measures the copy speeds.
func (c CUDACheck) copies(ctx context.Context, env Env, gpu *cuda.Context, out *CUDACheckOutcome, each func([]CUDACopy)) error {
	env.start("copies")
	bw, err := cuda.MeasureBandwidth(ctx, gpu, c.Sizes, c.Reps)
	if err != nil {
		return err
	}
	copies := make([]CUDACopy, len(bw))
	for i, b := range bw {
		copies[i] = CUDACopy{HostToDevice: b.HostToDevice, Pinned: b.Pinned, Bytes: b.Bytes, GBps: b.GBps()}
	}
	out.Copies = copies
	send(each, copies)
	return nil
}

// netSteps times the Net's step on each backend (the kernels, then cuDNN
// where out.Backend says it loaded) at each precision, launched kernel
// by kernel and then replayed from CUDA Graphs: the same work from the
// same start, so the same loss (a differing loss is listed as failed).
func (c CUDACheck) netSteps(ctx context.Context, env Env, gpu *cuda.Context, out *CUDACheckOutcome, each func(CUDANetStep)) ([]string, error) {
	pool, err := batching.NewPool(c.Batch, 3*c.Side*c.Side)
	if err != nil {
		return nil, err
	}
	b := pool.Get()
	rng := rand.New(rand.NewPCG(c.Seed, 0))
	for i := range b.Data {
		b.Data[i] = rng.Float32()*2 - 1
	}
	for i := range b.Labels {
		b.Labels[i] = int32(rng.IntN(10))
	}
	var failed []string
	backends := []string{cuda.BackendKernels}
	if out.Backend.Name == cuda.BackendLibraries {
		backends = append(backends, cuda.BackendLibraries)
	}
	for _, backend := range backends {
		for _, precision := range c.Precisions {
			for _, graphs := range []bool{false, true} {
				st, err := c.timeStep(ctx, env, gpu, b, backend, precision, graphs)
				if err != nil && backend == cuda.BackendLibraries && ctx.Err() == nil {
					// A library's failure (a call, a capture into a
					// graph) is a failed check; the other variants run.
					failed = append(failed, fmt.Sprintf("the Net's step, %s on %s, %s: %v", precision, backend, st.launch(), err))
					continue
				}
				if err != nil {
					return failed, err
				}
				send(each, st)
				if prev := len(out.Steps) - 1; graphs && prev >= 0 && out.Steps[prev].Backend == backend && out.Steps[prev].Precision == precision &&
					!out.Steps[prev].Graphs && !sameLoss(backend, st.Loss, out.Steps[prev].Loss) {
					failed = append(failed, fmt.Sprintf("%s on %s: CUDA Graphs' loss %v is not the kernel-by-kernel loss %v", precision, backend, st.Loss, out.Steps[prev].Loss))
				}
				out.Steps = append(out.Steps, st)
			}
		}
	}
	return failed, nil
}

// cudnnLossAgreement is how far apart, relative to the larger, the losses
// of the same steps on cuDNN kernel by kernel and from CUDA Graphs may be:
// cuDNN's search may pick algorithms that sum with atomics
// (cudnn.benchmark does not ask for deterministic ones, nor do we), so
// two runs of the same steps may round differently. An allowance, not a
// derivation; the kernels' losses must be equal.
const cudnnLossAgreement = 1e-3

// sameLoss reports whether two losses of the same steps on backend agree:
// equal on the kernels (every sum in a fixed order), within
// cudnnLossAgreement on cuDNN.
func sameLoss(backend string, a, b float32) bool {
	if backend != cuda.BackendLibraries || a == b {
		return a == b
	}
	d := math.Abs(float64(a) - float64(b))
	return d <= cudnnLossAgreement*max(math.Abs(float64(a)), math.Abs(float64(b)))
}

// timeStep times Steps of the Net at precision on backend on gpu, after
// one warm-up (cuDNN's algorithm search, once per shape, falls before it,
// where the plan is made).
func (c CUDACheck) timeStep(ctx context.Context, env Env, gpu *cuda.Context, b *batching.Batch, backend, precision string, graphs bool) (CUDANetStep, error) {
	st := CUDANetStep{Backend: backend, Precision: precision, Graphs: graphs}
	env.start(fmt.Sprintf("Net step, %s on %s, %s", precision, backend, st.launch()))
	plan, err := CUDANetPlan(c.Batch, c.Side, c.Seed, precision, backend)
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

// stepRecord is the record of one step of st, timed t, at batch and
// side.
func stepRecord(batch, side int, st CUDANetStep, t time.Duration) *benchfmt.Result {
	suffix := ""
	if st.Backend != cuda.BackendKernels {
		suffix += "/backend=" + st.Backend
	}
	if st.Precision != kernels.PrecisionFP32 {
		suffix += "/precision=" + st.Precision
	}
	if st.Graphs {
		suffix += "/graphs=true"
	}
	return &benchfmt.Result{
		Name:   benchfmt.Name(fmt.Sprintf("BenchmarkCUDAStep/batch=%d/side=%d%s", batch, side, suffix)),
		Iters:  1,
		Values: []benchfmt.Value{{Value: float64(t.Nanoseconds()), Unit: "step-ns"}},
	}
}

// CUDANetPlan is the Net's training step for batches of batch samples of
// 3×side×side, at a precision (kernels.PrecisionFP32 or PrecisionTF32),
// on a backend: the kernels (cuda.BackendKernels) or cuDNN
// (cuda.BackendLibraries, kernels.OnLibraries): what the check times and
// what `--device cuda` trains (on the kernels).
func CUDANetPlan(batch, side int, seed uint64, precision, backend string) (cuda.Plan, error) {
	p, err := kernels.NetPlan(batch, side, seed)
	if err != nil {
		return cuda.Plan{}, err
	}
	switch backend {
	case cuda.BackendKernels:
		return kernels.WithPrecision(p, precision)
	case cuda.BackendLibraries:
		return kernels.OnLibraries(p, precision)
	}
	return cuda.Plan{}, fmt.Errorf("the Net's backend %q: want %s or %s", backend, cuda.BackendKernels, cuda.BackendLibraries)
}

// DNNSettings is the one spelling of the configuration lines that say
// which cuDNN and cuBLAS a result file's cuDNN figures come from
// (cuda.LoadedDNN), or why there are none: "cudnn: not loaded: …".
func DNNSettings(b cuda.Backend) []resultfile.Config {
	file, version, cublas, ok := cuda.LoadedDNN()
	if b.Name != cuda.BackendLibraries || !ok {
		reason := b.Reason
		if reason == "" {
			reason = "not tried"
		}
		return []resultfile.Config{{Key: "cudnn", Value: "not loaded: " + reason}}
	}
	return []resultfile.Config{
		{Key: "cudnn", Value: file},
		{Key: "cudnn-version", Value: fmt.Sprintf("%d.%d.%d", version/10000, version%10000/100, version%100)},
		{Key: "cublas", Value: cublas},
	}
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

// send calls f with v if f is set: how CUDACheck passes its progress.
func send[T any](f func(T), v T) {
	if f != nil {
		f(v)
	}
}
