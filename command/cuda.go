package command

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// cudaCommand is headspace cuda.
func cudaCommand() cli.Command {
	return cli.Command{Name: "cuda", Verbs: []string{"check", "decode"}, Summary: "the GPU: check (kernels against their reference, copy speeds, the Net's step), decode (nvJPEG's rate)", Runs: []string{"CUDA", "CUDADecode"}, Run: runCUDA}
}

// cudaCheckCommand and cudaDecodeCommand are cuda's verbs made from
// their experiments.
var (
	cudaCheckCommand  = CommandOf[workloads.CUDACheckOutcome, workloads.CUDACheck]("cuda check", "", cudaUsage)
	cudaDecodeCommand = CommandOf[workloads.CUDADecodeOutcome, workloads.CUDADecode]("cuda decode", "", cudaDecodeUsage)
)

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
derived from TF32's rounding (docs/gpu.md). Where cuDNN and cuBLAS load
($HEADSPACE_CUDNN, $HEADSPACE_CUBLAS, the sonames, or the NVIDIA wheels'
nvidia/cudnn/lib, nvidia/cublas/lib and nvidia/cu13/lib), the Net also
runs on cuDNN (convolutions, bias and ReLU; its algorithm search once
per shape, as cudnn.benchmark=True; TF32 through cuDNN's math type): the
checks whose kernels cuDNN replaces run again on it against the same
reference, and every step is timed on it too, its records named
/backend=cudnn; where they do not load, it says why, the result file
says "cudnn: not loaded: …" and the step runs on the kernels alone.

--out writes the copy speeds (GB/s) and step times (step-ns) in Go
benchmark format, with the cuDNN and cuBLAS files and cuDNN's version. Without a driver it exits 1 with "no CUDA driver found
(libcuda.so.1): …".`

func runCUDA(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return cli.Usagef("want a verb: headspace cuda check, decode or goals")
	}
	switch args[0] {
	case "check":
		return cudaCheckCommand.Run(ctx, args[1:], stdout, stderr)
	case "decode":
		return cudaDecodeCommand.Run(ctx, args[1:], stdout, stderr)
	case "goals":
		return runCUDAGoals(args[1:], stdout)
	case "-h", "--help", "-help":
		writeCUDAUsage(stdout)
		return nil
	}
	return cli.Usagef("unknown verb %q: want check, decode or goals", args[0])
}

// cudaVerbs are cuda's verbs, in the order `cuda -h` lists them.
var cudaVerbs = []struct{ name, summary, usage string }{
	{"check", "kernels against their reference, copy speeds, the Net's step", cudaUsage},
	{"decode", "nvJPEG's batched JPEG decode rate", cudaDecodeUsage},
	{"goals", "the GPU suite's figures beside their goals and anchors", cudaGoalsUsage},
}

// writeCUDAUsage is `headspace cuda -h`: every verb, each with its usage
// and flags, as `headspace cuda VERB -h` prints them.
func writeCUDAUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: headspace cuda <verb> [flags]\n\nVerbs:\n")
	for _, v := range cudaVerbs {
		fmt.Fprintf(w, "  %-8s %s\n", v.name, v.summary)
	}
	for _, v := range cudaVerbs {
		var b strings.Builder
		switch v.name {
		case "check":
			_ = cudaCheckCommand.Run(context.Background(), []string{"-h"}, &b, io.Discard)
		case "decode":
			_ = cudaDecodeCommand.Run(context.Background(), []string{"-h"}, &b, io.Discard)
		default:
			fs := cli.NewFlagSet("cuda "+v.name, v.usage, &b)
			fs.Usage()
		}
		_, usage, _ := strings.Cut(b.String(), "\n")
		fmt.Fprintf(w, "\nheadspace cuda %s [flags]:\n%s", v.name, usage)
	}
}

const cudaDecodeUsage = `
headspace cuda decode --decoder nvjpeg --jpegs DIR: decodes the JPEG files
of DIR (*.jpg, *.jpeg, all of one size; cycled when fewer than a batch) in
batches of --batch with nvJPEG's batched API (nvjpegDecodeBatched) into
GPU memory as planar RGB, the layout of a uint8 batch, and prints the
median images/s of --batches timed batches (host stage, GPU decode and the
wait for it; the files are read into memory first).

libnvjpeg is loaded at run time: $HEADSPACE_NVJPEG, the CUDA install on the
library path or under /usr/local/cuda*, or the NVIDIA libraries of a
PyTorch wheel (site-packages/nvidia/nvjpeg/lib). Without one it exits 1
with "no nvJPEG library found (libnvjpeg…): …". --out writes the rate in Go
benchmark format (CUDADecode/decoder=nvjpeg/…, images/s).

--decoder turbojpeg decodes the same files, in the same batches, with
libjpeg-turbo on the host instead (no GPU needed): --threads goroutines,
each with its own handle, into interleaved RGB; the rate nvJPEG's stands
beside (ci/gpu-suite.sh runs both on the same natural JPEGs).`

const cudaGoalsUsage = `
headspace cuda goals DIR: the figures a lent GPU is asked for (issue 45),
read from the result files one call of ci/gpu-suite.sh leaves in DIR, each
beside its goal and its public anchor: nvJPEG's batched decode (beside
libjpeg-turbo on the host), level none with device transforms against
level device, the Net's step against PyTorch's (fp32 and tf32, with and
without CUDA Graphs), and the document's 003 ladder beside PyTorch's. A
figure whose file is not there yet is "not measured"; a file that is
there but unreadable is exit 2. Nothing runs on the GPU.`

func runCUDAGoals(args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("cuda goals", cudaGoalsUsage, stdout)
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cli.Usagef("want one folder: headspace cuda goals DIR")
	}
	rep, err := workloads.CUDAGoals(fs.Arg(0))
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return rep.WriteText(stdout)
}
