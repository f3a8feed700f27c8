package ondisk

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
)

// jpegBenchDir is the dataset BenchmarkDecodeJPEG decodes:
// $HEADSPACE_JPEG_DIR when set, so that PIL can time the very same files
// (docs/real-data.md gives both commands), or eight 1024² natural JPEGs
// (quality 90) written once per run.
func jpegBenchDir(b *testing.B) string {
	if dir := os.Getenv("HEADSPACE_JPEG_DIR"); dir != "" {
		return dir
	}
	benchMu.Lock()
	defer benchMu.Unlock()
	if benchRoot == "" {
		var err error
		if benchRoot, err = os.MkdirTemp("", "ondisk-bench-"); err != nil {
			b.Fatal(err)
		}
	}
	dir := filepath.Join(benchRoot, "natural-1024-jpeg")
	if _, err := os.Stat(dir); err != nil {
		src := datasets.Synthetic{Width: 1024, Height: 1024, Classes: 10, N: benchN, Seed: 1, Content: datasets.ContentNatural}
		if _, err := Write(context.Background(), dir, src, WriteOptions{Format: "jpeg", Layout: "files"}); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkDecodeJPEG decodes the same JPEGs, already in memory, with
// each decoder, as the decode stage does: ns/op is per image, and the
// turbojpeg decoder allocates nothing (-benchmem). cpu-ns/op is the
// process's CPU time per image, which peers/torch/pil_decode.py reports
// too: on a shared machine it is the steadier figure to compare.
//
// decoder=turbojpeg/decode-scale=auto/crop=256 decodes the same files as
// --decode-scale auto does with the document's 256 crop: at the smallest
// TurboJPEG scaling factor that still holds the crop (1/4 for 1024²), in
// the reused full-size buffer, allocating nothing.
func BenchmarkDecodeJPEG(b *testing.B) {
	dir := jpegBenchDir(b)
	type variant struct {
		name string
		opts Options
	}
	variants := []variant{}
	for _, dec := range Decoders {
		variants = append(variants, variant{"decoder=" + dec, Options{Decoder: dec}})
	}
	variants = append(variants, variant{"decoder=turbojpeg/decode-scale=auto/crop=256", Options{Decoder: DecoderTurbo, DecodeMinSide: 256}})
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			d, err := OpenWith(dir, v.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			if d.Manifest().Format != "jpeg" {
				b.Fatalf("%s holds %s, not jpeg", dir, d.Manifest().Format)
			}
			n := d.Len()
			data := make([][]byte, n)
			for i := range data {
				if data[i], err = d.Fetch(context.Background(), i, nil); err != nil {
					b.Fatal(err)
				}
			}
			w, h := d.Shape()
			s := datasets.NewSample(w, h)
			b.SetBytes(int64(len(s.Image.Pix)))
			b.ReportAllocs()
			cpu0 := processCPU()
			for i := 0; b.Loop(); i++ {
				if err := d.Decode(i%n, data[i%n], s); err != nil {
					b.Fatal(err)
				}
			}
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
