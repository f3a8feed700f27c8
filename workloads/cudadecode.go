package workloads

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// CUDADecode is `headspace cuda decode`: nvJPEG's batched decode
// (nvjpegDecodeBatched) of the JPEG files of a directory into GPU memory
// as planar RGB, the layout of a uint8 batch. The files (*.jpg, *.jpeg,
// all of one size, cycled when fewer than a batch) are read into memory
// first; one untimed batch runs, then each of Batches is timed from the
// host stage to the wait for the GPU.
//
// Like CUDACheck it is not in Experiments: it needs a GPU and libnvjpeg
// (loaded with purego, as package cuda loads libcuda). Without a driver
// Run returns package cuda's "no CUDA driver found (libcuda.so.1): …",
// without libnvjpeg "no nvJPEG library found (libnvjpeg…): …".
type CUDADecode struct {
	// Decoder is DecodeNvjpeg (the GPU) or DecodeTurbo (libjpeg-turbo on
	// the host's cores, Threads at once: the decode rate nvJPEG's stands
	// beside); "" is DecodeNvjpeg.
	Decoder string
	Ordinal int    // the GPU's ordinal
	JPEGs   string // the directory of JPEG files
	Batch   int    // images per batch
	Batches int    // timed batches, after one untimed
	Threads int    // CPU threads nvJPEG's host stage may use
	// Libraries are the libnvjpeg paths tried in order; nil searches
	// cuda.NvjpegCandidates ($HEADSPACE_NVJPEG, a CUDA install, a
	// PyTorch wheel's).
	Libraries []string
	// run is what headspace cuda decode keeps of a run (nil but in its
	// command): its console, what it opened.
	run *cudaDecodeRun
}

// The decoders of CUDADecode.
const (
	DecodeNvjpeg = "nvjpeg"
	DecodeTurbo  = "turbojpeg"
)

// DefaultCUDADecode is `headspace cuda decode`'s defaults: batches of
// 256, 20 timed, 4 host threads; JPEGs is the caller's.
func DefaultCUDADecode() CUDADecode {
	return CUDADecode{Decoder: DecodeNvjpeg, Batch: 256, Batches: 20, Threads: 4}
}

// QuickCUDADecode is every code path in seconds: 2 timed batches of 4.
func QuickCUDADecode() CUDADecode {
	return CUDADecode{Batch: 4, Batches: 2, Threads: 1}
}

// Name is "CUDADecode": BenchmarkCUDADecode/decoder=nvjpeg/….
func (CUDADecode) Name() string { return "CUDADecode" }

// Document is "": the decode benchmark is headspace's own.
func (CUDADecode) Document() string { return "" }

// Settings is what changes a number and is in no record's name: the
// files' directory (by its name) and the host stage's threads. The GPU's
// lines (GPUSettings) and the library's are known once they are open:
// Measure's outcome holds a CUDADecodeSetup, whose Settings gives them.
func (d CUDADecode) Settings() []resultfile.Config {
	return []resultfile.Config{
		{Key: "jpegs", Value: filepath.Base(filepath.Clean(d.JPEGs))},
		{Key: "threads", Value: strconv.Itoa(d.Threads)},
	}
}

// Validate reports the first problem with d, before anything runs.
func (d CUDADecode) Validate() error {
	switch {
	case d.JPEGs == "":
		return errors.New("no directory of JPEG files")
	case d.Batch <= 0 || d.Batch > 65536:
		return fmt.Errorf("batch %d: want 1 to 65536", d.Batch)
	case d.Batches <= 0 || d.Batches > 1000000:
		return fmt.Errorf("batches %d: want 1 to 1000000", d.Batches)
	case d.Threads <= 0 || d.Threads > 1024:
		return fmt.Errorf("threads %d: want 1 to 1024", d.Threads)
	case d.Ordinal < 0:
		return fmt.Errorf("GPU ordinal %d must not be negative", d.Ordinal)
	case d.Decoder != "" && d.Decoder != DecodeNvjpeg && d.Decoder != DecodeTurbo:
		return fmt.Errorf("decoder %q: want %s or %s", d.Decoder, DecodeNvjpeg, DecodeTurbo)
	}
	return nil
}

// CUDADecodeSetup is what CUDADecode.Measure opened before the first
// batch: the GPU, the library and the files.
type CUDADecodeSetup struct {
	GPU           cuda.Info
	Library       string // the libnvjpeg's path
	Version       string // its version, major.minor.patch
	Backend       string // cuda.NvjpegHardware or cuda.NvjpegDefault
	Files         int    // JPEG files read (at most a batch)
	Width, Height int    // their size
}

// Settings is the setup's configuration lines: the GPU's (GPUSettings)
// and the decoder's (NvjpegSettings); for libjpeg-turbo on the host
// (Backend DecodeTurbo), the library's alone.
func (s CUDADecodeSetup) Settings() []resultfile.Config {
	if s.Backend == DecodeTurbo {
		return []resultfile.Config{{Key: "turbojpeg", Value: filepath.Base(s.Library) + " " + s.Version}}
	}
	return append(GPUSettings(s.GPU), NvjpegSettings(s.Library, s.Version, s.Backend)...)
}

// NvjpegSettings is what a result file records of an nvJPEG decoder, for
// cuda decode and for ladder --decoder nvjpeg alike: the library's file
// name and version ("libnvjpeg.so.12 12.4.127") and the backend it
// decodes with (hardware: the card's JPEG engines; default: the SMs).
func NvjpegSettings(library, version, backend string) []resultfile.Config {
	return []resultfile.Config{{Key: "nvjpeg", Value: filepath.Base(library) + " " + version}, {Key: "nvjpeg-backend", Value: backend}}
}

// CUDADecodeOutcome is what a CUDADecode measured: what it opened, and
// each timed batch's rate. Its records (CUDADecodeCodec) hold the
// decoder, the batch, the files' size (Setup.Width, Setup.Height) and the
// rates; the rest of Setup is the result file's configuration lines
// (CUDADecodeSetup.Settings), zero in an outcome decoded from records.
type CUDADecodeOutcome struct {
	Decoder string // DecodeNvjpeg or DecodeTurbo
	Batch   int    // images per batch
	Setup   CUDADecodeSetup
	// Rates are the timed batches' images/s, in order.
	Rates []float64
}

// Measure is MeasureOpened with no callback; in headspace cuda decode,
// with its console's line of what it opened, which it keeps for the
// file's lines.
func (d CUDADecode) Measure(ctx context.Context, env Env) (CUDADecodeOutcome, error) {
	if d.run == nil {
		return d.MeasureOpened(ctx, env, nil)
	}
	o, err := d.MeasureOpened(ctx, env, decodePrinter(d.run.stdout, d))
	d.run.setup = o.Setup
	return o, err
}

// MeasureOpened reads the files, opens the GPU and libnvjpeg (or
// libjpeg-turbo, for DecodeTurbo), passes what it opened to opened (if
// not nil; `headspace cuda decode` prints it) before the first batch,
// and decodes: one untimed batch, then Batches timed.
func (d CUDADecode) MeasureOpened(ctx context.Context, env Env, opened func(CUDADecodeSetup)) (CUDADecodeOutcome, error) {
	out := CUDADecodeOutcome{Decoder: d.Decoder, Batch: d.Batch}
	if out.Decoder == "" {
		out.Decoder = DecodeNvjpeg
	}
	if err := d.Validate(); err != nil {
		return out, err
	}
	files, err := readJPEGs(d.JPEGs, d.Batch)
	if err != nil {
		return out, err
	}
	open := func(s CUDADecodeSetup) {
		out.Setup = s
		if opened != nil {
			opened(s)
		}
	}
	if d.Decoder == DecodeTurbo {
		out.Rates, err = d.runTurbo(ctx, env, files, open)
		return out, err
	}
	c, err := openGPU(ctx, d.Ordinal)
	if err != nil {
		return out, err
	}
	defer c.Close()
	dec, err := cuda.NewJPEGDecoder(c, d.Libraries, d.Batch, d.Threads)
	if err != nil {
		return out, err
	}
	defer dec.Close()
	_, w, h, err := dec.ImageInfo(files[0])
	if err != nil {
		return out, fmt.Errorf("%s: the first file: %w", d.JPEGs, err)
	}
	dst, free, err := cuda.DeviceAlloc(c, int64(d.Batch)*3*int64(w)*int64(h))
	if err != nil {
		return out, err
	}
	defer free()
	version, err := dec.Version()
	if err != nil {
		return out, err
	}
	open(CUDADecodeSetup{GPU: c.Info(), Library: dec.Library(), Version: version, Backend: dec.Backend(), Files: len(files), Width: w, Height: h})
	out.Rates, err = d.nvjpegBatches(ctx, env, dec, dst, files, w, h)
	return out, err
}

// Run measures the decode (Measure) and returns its records
// (CUDADecodeCodec), a record a timed batch.
func (d CUDADecode) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[CUDADecodeOutcome](ctx, d, env)
}

// Codec is CUDADecodeCodec.
func (CUDADecode) Codec() Codec[CUDADecodeOutcome] { return CUDADecodeCodec }

var _ Typed[CUDADecodeOutcome] = CUDADecode{}

// CUDADecodeCodec is a CUDADecode's records codec: a record a timed
// batch, BenchmarkCUDADecode/decoder=…/batch=…/size=WxH, of Batch
// iterations, in images/s; every record of one outcome is of one
// decoder, batch and size.
var CUDADecodeCodec = Codec[CUDADecodeOutcome]{
	Experiment: "CUDADecode",
	Keys:       map[string][]string{"CUDADecode": {"decoder", "batch", "size"}},
	encode: func(o CUDADecodeOutcome) []*benchfmt.Result {
		name := benchfmt.Name(fmt.Sprintf("BenchmarkCUDADecode/decoder=%s/batch=%d/size=%dx%d", o.Decoder, o.Batch, o.Setup.Width, o.Setup.Height))
		return recordsOf(o.Rates, func(r float64) *benchfmt.Result {
			return &benchfmt.Result{Name: name, Iters: o.Batch, Values: []benchfmt.Value{{Value: r, Unit: "images/s"}}}
		})
	},
	decode: func(recs []Record) (CUDADecodeOutcome, error) {
		var out CUDADecodeOutcome
		for i, rec := range recs {
			name := fullName(rec.Result)
			batch, err := rec.count("batch", true)
			if err != nil {
				return out, err
			}
			var w, h int
			if _, err := fmt.Sscanf(rec.Keys["size"], "%dx%d", &w, &h); err != nil || fmt.Sprintf("%dx%d", w, h) != rec.Keys["size"] {
				return out, fmt.Errorf("%s: size %q: want WxH", name, rec.Keys["size"])
			}
			if i == 0 {
				out.Decoder, out.Batch, out.Setup.Width, out.Setup.Height = rec.Keys["decoder"], batch, w, h
			} else if rec.Keys["decoder"] != out.Decoder || batch != out.Batch || w != out.Setup.Width || h != out.Setup.Height {
				return out, fmt.Errorf("%s: a record of another decode than the first's (decoder=%s/batch=%d/size=%dx%d)", name, out.Decoder, out.Batch, out.Setup.Width, out.Setup.Height)
			}
			if rec.Iters != batch {
				return out, fmt.Errorf("%s: %d iterations, want its batch, %d", name, rec.Iters, batch)
			}
			r, err := rec.Value("images/s")
			if err != nil {
				return out, err
			}
			if len(rec.Values) != 1 {
				return out, fmt.Errorf("%s: %d values, want images/s alone", name, len(rec.Values))
			}
			out.Rates = append(out.Rates, r)
		}
		return out, nil
	},
}

// runTurbo decodes the files with libjpeg-turbo on the host: each batch
// split over Threads goroutines, each with its own handle and RGB buffer
// (nothing allocated per image), timed from the first image to the last.
// It returns each timed batch's images/s.
func (d CUDADecode) runTurbo(ctx context.Context, env Env, files [][]byte, opened func(CUDADecodeSetup)) ([]float64, error) {
	lib, err := turbojpeg.Load()
	if err != nil {
		return nil, err
	}
	decs := make([]*turbojpeg.Decoder, d.Threads)
	defer func() {
		for _, dec := range decs {
			if dec != nil {
				dec.Close()
			}
		}
	}()
	for i := range decs {
		if decs[i], err = lib.NewDecoder(); err != nil {
			return nil, err
		}
	}
	w, h, err := decs[0].Header(files[0])
	if err != nil {
		return nil, fmt.Errorf("%s: the first file: %w", d.JPEGs, err)
	}
	opened(CUDADecodeSetup{Library: lib.Path(), Version: lib.Version(), Backend: DecodeTurbo, Files: len(files), Width: w, Height: h})
	bufs := make([][]byte, d.Threads)
	for i := range bufs {
		bufs[i] = make([]byte, 3*w*h)
	}
	env.start(fmt.Sprintf("libjpeg-turbo on %d threads, %d batches of %d", d.Threads, d.Batches, d.Batch))
	return d.timed(ctx, func(i int) (time.Duration, error) { return d.turboBatch(i, files, decs, bufs, w, h) })
}

// readJPEGs reads up to max files named *.jpg or *.jpeg (any case) from
// dir, in name order: a dataset of `headspace dataset write --format
// jpeg` qualifies. Its errors are bad input (badJPEGs): a dir that
// cannot be listed, a file that is not a regular file or cannot be read,
// no JPEG at all.
func readJPEGs(dir string, max int) ([][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, badJPEGs{fmt.Errorf("--jpegs: %w", err)}
	}
	var files [][]byte
	for _, e := range ents {
		n := strings.ToLower(e.Name())
		if e.IsDir() || !(strings.HasSuffix(n, ".jpg") || strings.HasSuffix(n, ".jpeg")) {
			continue
		}
		b, err := ondisk.ReadBounded(filepath.Join(dir, e.Name()), ondisk.MaxSampleBytes)
		if err != nil {
			return nil, badJPEGs{fmt.Errorf("--jpegs: %w", err)}
		}
		files = append(files, b)
		if len(files) == max {
			break
		}
	}
	if len(files) == 0 {
		return nil, badJPEGs{fmt.Errorf("--jpegs %s: no .jpg or .jpeg files in it", dir)}
	}
	return files, nil
}

// badJPEGs is an error of the JPEG files CUDADecode was pointed at: bad
// input, as a dataset that cannot be read is (errors.Is
// ondisk.ErrCorrupt: commands exit 2 on it), found before the GPU is
// opened.
type badJPEGs struct{ err error }

func (b badJPEGs) Error() string      { return b.err.Error() }
func (b badJPEGs) Unwrap() error      { return b.err }
func (badJPEGs) Is(target error) bool { return target == ondisk.ErrCorrupt }

// nvjpegBatches decodes the batches of the files (cycled) into dst with
// nvJPEG (timed).
func (d CUDADecode) nvjpegBatches(ctx context.Context, env Env, dec *cuda.JPEGDecoder, dst uint64, files [][]byte, w, h int) ([]float64, error) {
	b := make([][]byte, d.Batch)
	env.start(fmt.Sprintf("nvJPEG, %d batches of %d", d.Batches, d.Batch))
	return d.timed(ctx, func(i int) (time.Duration, error) {
		lo := (i * d.Batch) % len(files)
		for j := range b {
			b[j] = files[(lo+j)%len(files)]
		}
		took, err := dec.Decode(b, dst, w, h)
		if err != nil {
			return 0, fmt.Errorf("batch %d: %w", i, err)
		}
		return took, nil
	})
}

// timed runs batch i of the files for i from 0, the untimed warm-up
// batch, to Batches, and returns each timed batch's images/s; it stops
// at the first error, or when ctx is done.
func (d CUDADecode) timed(ctx context.Context, batch func(i int) (time.Duration, error)) ([]float64, error) {
	var out []float64
	for i := range d.Batches + 1 {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		took, err := batch(i)
		if err != nil {
			return out, err
		}
		if i > 0 {
			out = append(out, float64(d.Batch)/took.Seconds())
		}
	}
	return out, nil
}

// turboBatch decodes batch i of the files (cycled) split over the
// decoders, each into its own buffer, and returns how long it took.
func (d CUDADecode) turboBatch(i int, files [][]byte, decs []*turbojpeg.Decoder, bufs [][]byte, w, h int) (time.Duration, error) {
	lo := i * d.Batch
	errs := make([]error, d.Threads)
	start := time.Now()
	var wg sync.WaitGroup
	for t := range d.Threads {
		wg.Go(func() {
			for j := t; j < d.Batch; j += d.Threads {
				f := files[(lo+j)%len(files)]
				if err := decs[t].DecodeRGB(f, bufs[t], w, h); err != nil {
					errs[t] = fmt.Errorf("image %d of batch %d: %w", j, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}
