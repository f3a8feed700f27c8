package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/summary"
)

// cudaDecoders lists the --decoder values of cuda decode. The CPU decoders
// (go, turbojpeg) are the loader's, on the commands that read a dataset.
var cudaDecoders = []string{DecodeNvjpeg, DecodeTurbo}

// The bounds of cuda decode's flags.
var _ = cli.Declare(map[string]cli.Bound{
	"cuda decode gpu":     {Lo: 0, Hi: 1024},
	"cuda decode threads": {Lo: 1, Hi: 1024},
	"cuda decode batches": {Lo: 1, Hi: 1_000_000},
})

// Flags are cuda decode's, bound to the experiment's fields.
func (d *CUDADecode) Flags(fs *flag.FlagSet) {
	fs.StringVar(&d.Decoder, "decoder", d.Decoder, "`decoder`: nvjpeg (the GPU) or turbojpeg (libjpeg-turbo on the host's cores, the rate beside)")
	fs.StringVar(&d.JPEGs, "jpegs", d.JPEGs, "`directory` of JPEG files of one size")
	fs.IntVar(&d.Batch, "batch", d.Batch, "images per `batch`")
	fs.IntVar(&d.Batches, "batches", d.Batches, "timed `batches` (one more is run first, untimed)")
	fs.IntVar(&d.Threads, "threads", d.Threads, "CPU `threads` nvJPEG's host stage may use (turbojpeg: the threads that decode)")
	fs.IntVar(&d.Ordinal, "gpu", d.Ordinal, "`ordinal` of the GPU")
}

// cudaDecodeRun is what headspace cuda decode keeps of a run beside
// the experiment: its console and what the run opened.
type cudaDecodeRun struct {
	stdout io.Writer
	setup  CUDADecodeSetup
}

// Prepare checks the flags; the console says what the run opened, and
// the file's lines are the GPU's and the decoder's once it has.
func (d *CUDADecode) Prepare(_ context.Context, stdout, _ io.Writer) (Setup, error) {
	if _, err := cli.ParseList("--decoder", d.Decoder, cudaDecoders); err != nil {
		return Setup{}, err
	}
	// The flags' ranges are the bounds table's (checked as they are
	// parsed); the experiment's Validate holds the same.
	if d.JPEGs == "" {
		return Setup{}, cli.Usagef("--jpegs DIR is required")
	}
	if err := d.Validate(); err != nil {
		return Setup{}, cli.UsageError{Msg: err.Error()}
	}
	r := &cudaDecodeRun{stdout: stdout}
	d.run = r
	return Setup{Device: func() string {
		if d.Decoder == DecodeTurbo {
			return "host"
		}
		return "cuda:" + r.setup.GPU.Name
	}, Lines: func() []resultfile.Config { return append(r.setup.Settings(), d.Settings()...) }}, nil
}

// Report is the median rate of the timed batches, after a run and from
// --from alike.
func (*CUDADecode) Report(o CUDADecodeOutcome, stdout io.Writer) error {
	rates := o.Rates
	if len(rates) == 0 {
		return fmt.Errorf("cuda decode: no timed batch")
	}
	_, err := fmt.Fprintf(stdout, "%s: median %.0f images/s over %d batches of %d (min %.0f, max %.0f)\n",
		o.Decoder, summary.Median(rates), len(rates), o.Batch, slices.Min(rates), slices.Max(rates))
	return err
}

// decodePrinter prints what cuda decode opened.
func decodePrinter(stdout io.Writer, d CUDADecode) func(CUDADecodeSetup) {
	return func(s CUDADecodeSetup) {
		on := s.GPU.Name
		if d.Decoder == DecodeTurbo {
			on = fmt.Sprintf("the host, %d threads", d.Threads)
		}
		fmt.Fprintf(stdout, "%s: %s on %s; %d files of %dx%d from %s, batches of %d\n", d.Decoder, s.Library, on, s.Files, s.Width, s.Height, d.JPEGs, d.Batch)
	}
}
