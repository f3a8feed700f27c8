package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/summary"
)

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

// cudaDecoders lists the --decoder values of cuda decode. The CPU decoders
// (go, turbojpeg) are the loader's, on the commands that read a dataset.
var cudaDecoders = []string{DecodeNvjpeg, DecodeTurbo}

// cudaDecodeOpts are cuda decode's flags.
type cudaDecodeOpts struct {
	CUDADecode
	out string
}

func cudaDecodeFlags(fs *flag.FlagSet) *cudaDecodeOpts {
	f := &cudaDecodeOpts{CUDADecode: Sized[CUDADecode](Default)}
	d := &f.CUDADecode
	fs.StringVar(&d.Decoder, "decoder", DecodeNvjpeg, "`decoder`: nvjpeg (the GPU) or turbojpeg (libjpeg-turbo on the host's cores, the rate beside)")
	fs.StringVar(&d.JPEGs, "jpegs", "", "`directory` of JPEG files of one size")
	fs.IntVar(&d.Batch, "batch", d.Batch, "images per `batch`")
	fs.IntVar(&d.Batches, "batches", d.Batches, "timed `batches` (one more is run first, untimed)")
	fs.IntVar(&d.Threads, "threads", d.Threads, "CPU `threads` nvJPEG's host stage may use (turbojpeg: the threads that decode)")
	fs.IntVar(&d.Ordinal, "gpu", d.Ordinal, "`ordinal` of the GPU")
	fs.StringVar(&f.out, "out", "", "benchmark-format result `file`")
	return f
}

func runCUDADecode(ctx context.Context, args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("cuda decode", cudaDecodeUsage, stdout)
	f := cudaDecodeFlags(fs)
	d := &f.CUDADecode
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if _, err := cli.ParseList("--decoder", d.Decoder, cudaDecoders); err != nil {
		return err
	}
	// The flags' ranges are the bounds table's (checked as they are
	// parsed); the experiment's Validate holds the same.
	if d.JPEGs == "" {
		return cli.Usagef("--jpegs DIR is required")
	}
	if err := d.Validate(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	var o CUDADecodeOutcome
	settings := func() []resultfile.Config {
		device := "cuda:" + o.Setup.GPU.Name
		if d.Decoder == DecodeTurbo {
			device = "host"
		}
		return driver.Settings(device, o.Setup.Settings(), d.Settings())
	}
	_, err := driver.Run(ctx, driver.Job{Settings: settings,
		Measure: func(ctx context.Context, _ *driver.Hooks) ([]*benchfmt.Result, error) {
			var err error
			if o, err = d.MeasureOpened(ctx, Env{}, decodePrinter(stdout, d)); err != nil {
				return nil, err
			}
			rates := o.Rates
			fmt.Fprintf(stdout, "%s: median %.0f images/s over %d batches of %d (min %.0f, max %.0f)\n",
				d.Decoder, summary.Median(rates), len(rates), d.Batch, slices.Min(rates), slices.Max(rates))
			return CUDADecodeCodec.Encode(o), nil
		}}, driver.Output{Path: f.out, Benchmarks: []string{"CUDADecode"}})
	if err != nil || f.out == "" {
		return err
	}
	fmt.Fprintf(stdout, "results: %s\n", f.out)
	return nil
}

// decodePrinter prints what cuda decode opened.
func decodePrinter(stdout io.Writer, d *CUDADecode) func(CUDADecodeSetup) {
	return func(s CUDADecodeSetup) {
		on := s.GPU.Name
		if d.Decoder == DecodeTurbo {
			on = fmt.Sprintf("the host, %d threads", d.Threads)
		}
		fmt.Fprintf(stdout, "%s: %s on %s; %d files of %dx%d from %s, batches of %d\n", d.Decoder, s.Library, on, s.Files, s.Width, s.Height, d.JPEGs, d.Batch)
	}
}
