package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/harness/blocks/machine"
	"github.com/headspace-bench/headspace/harness/blocks/results"
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
benchmark format (CUDADecode/decoder=nvjpeg/…, images/s).`

// decoders lists the --decoder values of cuda decode. The CPU decoders
// (go, turbojpeg) are the loader's, on the commands that read a dataset.
var cudaDecoders = []string{"nvjpeg"}

func runCUDADecode(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("cuda decode", cudaDecodeUsage, stdout)
	decoder := fs.String("decoder", "nvjpeg", "`decoder`: nvjpeg")
	dir := fs.String("jpegs", "", "`directory` of JPEG files of one size")
	batch := fs.Int("batch", 256, "images per `batch`")
	batches := fs.Int("batches", 20, "timed `batches` (one more is run first, untimed)")
	threads := fs.Int("threads", 4, "CPU `threads` nvJPEG's host stage may use")
	ordinal := fs.Int("gpu", 0, "`ordinal` of the GPU")
	out := fs.String("out", "", "benchmark-format result `file`")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, err := parseList("--decoder", *decoder, cudaDecoders); err != nil {
		return err
	}
	switch {
	case *dir == "":
		return usagef("--jpegs DIR is required")
	case *batch <= 0 || *batch > 65536:
		return usagef("--batch %d: want 1 to 65536", *batch)
	case *batches <= 0 || *batches > 1000000:
		return usagef("--batches %d: want 1 to 1000000", *batches)
	case *threads <= 0 || *threads > 1024:
		return usagef("--threads %d: want 1 to 1024", *threads)
	}
	if err := checkResultsOut(*out, benchmarks(false, "CUDADecode")); err != nil {
		return err
	}
	files, err := readJPEGs(*dir, *batch)
	if err != nil {
		return err
	}
	if err := cuda.Load(); err != nil {
		return err
	}
	c, err := cuda.Open(*ordinal)
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := cuda.NewJPEGDecoder(c, nil, *batch, *threads)
	if err != nil {
		return err
	}
	defer d.Close()
	_, w, h, err := d.ImageInfo(files[0])
	if err != nil {
		return fmt.Errorf("%s: the first file: %w", *dir, err)
	}
	dst, free, err := cuda.DeviceAlloc(c, int64(*batch)*3*int64(w)*int64(h))
	if err != nil {
		return err
	}
	defer free()
	fmt.Fprintf(stdout, "nvJPEG: %s on %s; %d files of %dx%d from %s, batches of %d\n", d.Library(), c.Info().Name, len(files), w, h, *dir, *batch)
	var rates []float64
	for i := range *batches + 1 {
		if err := ctx.Err(); err != nil {
			return err
		}
		lo := (i * *batch) % len(files)
		b := make([][]byte, *batch)
		for j := range b {
			b[j] = files[(lo+j)%len(files)]
		}
		took, err := d.Decode(b, dst, w, h)
		if err != nil {
			return fmt.Errorf("batch %d: %w", i, err)
		}
		if i > 0 {
			rates = append(rates, float64(*batch)/took.Seconds())
		}
	}
	sorted := slices.Clone(rates)
	slices.Sort(sorted)
	fmt.Fprintf(stdout, "nvjpeg: median %.0f images/s over %d batches of %d (min %.0f, max %.0f)\n",
		sorted[len(sorted)/2], len(rates), *batch, sorted[0], sorted[len(sorted)-1])
	if *out == "" {
		return nil
	}
	info := c.Info()
	cfg := append(machine.Environment("cuda:"+info.Name),
		results.Config{Key: "cuda-driver", Value: info.Driver()},
		results.Config{Key: "nvjpeg", Value: filepath.Base(d.Library())},
		results.Config{Key: "jpegs", Value: filepath.Base(filepath.Clean(*dir))},
		results.Config{Key: "threads", Value: fmt.Sprint(*threads)})
	var rs []*benchfmt.Result
	for _, r := range rates {
		rs = append(rs, &benchfmt.Result{
			Name:   benchfmt.Name(fmt.Sprintf("CUDADecode/decoder=nvjpeg/batch=%d/size=%dx%d", *batch, w, h)),
			Iters:  *batch,
			Values: []benchfmt.Value{{Value: r, Unit: "images/s"}},
		})
	}
	if err := results.WriteFile(*out, cfg, rs); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "results: %s\n", *out)
	return nil
}

// readJPEGs reads up to max files named *.jpg or *.jpeg from dir, in name
// order (a dataset of `headspace dataset write --format jpeg` qualifies).
func readJPEGs(dir string, max int) ([][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files [][]byte
	for _, e := range ents {
		n := strings.ToLower(e.Name())
		if e.IsDir() || !(strings.HasSuffix(n, ".jpg") || strings.HasSuffix(n, ".jpeg")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, b)
		if len(files) == max {
			break
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no .jpg or .jpeg files", dir)
	}
	return files, nil
}
