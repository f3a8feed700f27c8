package ondisk

import (
	"context"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
)

// benchRoot holds the benchmarks' datasets, written once per run.
var (
	benchRoot string
	benchMu   sync.Mutex
)

// benchN is the samples per benchmark dataset: enough that the loop cycles
// through several files and shard members.
const benchN = 8

func benchDataset(b *testing.B, side int, format, layout string) *Dataset {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if benchRoot == "" {
		var err error
		if benchRoot, err = os.MkdirTemp("", "ondisk-bench-"); err != nil {
			b.Fatal(err)
		}
	}
	dir := filepath.Join(benchRoot, fmt.Sprintf("%d-%s-%s", side, format, layout))
	if _, err := os.Stat(dir); err != nil {
		src := datasets.Synthetic{Width: side, Height: side, Classes: 10, N: benchN, Seed: 1}
		if _, err := Write(context.Background(), dir, src, WriteOptions{Format: format, Layout: layout, ShardSize: 4}); err != nil {
			b.Fatal(err)
		}
	}
	d, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	if _, err := Warm(context.Background(), dir); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkFetch reads one sample's bytes from a warm page cache.
func BenchmarkFetch(b *testing.B) {
	for _, side := range []int{256, 1024} {
		for _, format := range Formats {
			for _, layout := range Layouts {
				b.Run(fmt.Sprintf("size=%d/format=%s/layout=%s", side, format, layout), func(b *testing.B) {
					d := benchDataset(b, side, format, layout)
					ctx := context.Background()
					var buf []byte
					b.SetBytes(int64(d.Manifest().BytesPerSample()))
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; b.Loop(); i++ {
						var err error
						if buf, err = d.Fetch(ctx, i%benchN, buf); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(d.Manifest().BytesPerSample(), "disk-B/sample")
				})
			}
		}
	}
}

// BenchmarkDecode decodes one sample's bytes, already in memory.
func BenchmarkDecode(b *testing.B) {
	for _, side := range []int{256, 1024} {
		for _, format := range Formats {
			b.Run(fmt.Sprintf("size=%d/format=%s", side, format), func(b *testing.B) {
				d := benchDataset(b, side, format, "shards")
				data := make([][]byte, benchN)
				for i := range data {
					var err error
					if data[i], err = d.Fetch(context.Background(), i, nil); err != nil {
						b.Fatal(err)
					}
				}
				s := datasets.NewSample(side, side)
				b.SetBytes(int64(len(s.Image.Pix)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if err := d.Decode(i%benchN, data[i%benchN], s); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFill is the load stage on disk: Fetch then Decode, warm cache.
func BenchmarkFill(b *testing.B) {
	for _, side := range []int{256, 1024} {
		for _, format := range Formats {
			for _, layout := range Layouts {
				b.Run(fmt.Sprintf("size=%d/format=%s/layout=%s", side, format, layout), func(b *testing.B) {
					d := benchDataset(b, side, format, layout)
					s := datasets.NewSample(side, side)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; b.Loop(); i++ {
						if err := d.Fill(i%benchN, s); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(d.Manifest().BytesPerSample(), "disk-B/sample")
				})
			}
		}
	}
}

// BenchmarkToRGB is the conversion from the JPEG decoder's YCbCr (4:2:0)
// to interleaved RGB, the part of Decode that is ours.
func BenchmarkToRGB(b *testing.B) {
	for _, side := range []int{256, 1024} {
		b.Run(fmt.Sprintf("size=%d/from=ycbcr420", side), func(b *testing.B) {
			img := image.NewYCbCr(image.Rect(0, 0, side, side), image.YCbCrSubsampleRatio420)
			for k := range img.Y {
				img.Y[k] = byte(k)
			}
			pix := make([]byte, side*side*3)
			b.SetBytes(int64(len(pix)))
			b.ReportAllocs()
			for b.Loop() {
				if err := ToRGB(pix, img); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFetchCold reads one sample's bytes after the dataset has been
// evicted from the page cache (Linux; the eviction is not timed). On a VM
// the host may still cache the disk: cold is cold for this kernel.
func BenchmarkFetchCold(b *testing.B) {
	if !EvictAvailable {
		b.Skip("page-cache eviction is not available on this system")
	}
	for _, side := range []int{256, 1024} {
		for _, format := range []string{"raw", "jpeg"} {
			for _, layout := range Layouts {
				b.Run(fmt.Sprintf("size=%d/format=%s/layout=%s", side, format, layout), func(b *testing.B) {
					d := benchDataset(b, side, format, layout)
					ctx := context.Background()
					var buf []byte
					b.SetBytes(int64(d.Manifest().BytesPerSample()))
					for i := 0; b.Loop(); i++ {
						b.StopTimer()
						if _, err := Evict(ctx, d.Dir()); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
						var err error
						if buf, err = d.Fetch(ctx, i%benchN, buf); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
