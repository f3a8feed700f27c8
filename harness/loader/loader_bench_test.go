package loader

import (
	"context"
	"fmt"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/pipeline"
)

// BenchmarkLoader measures the whole input pipeline (load, transform,
// collate) per batch with -benchmem: after the pools fill, a batch of 16
// samples costs no allocation, so allocs/op tends to 0 as b.N grows (what
// remains is the pipeline's set-up, amortised over b.N batches). The
// record=true variants keep every task's span for a timeline: compare
// their samples/s with record=false to see what recording costs. The
// placement=device variants collate uint8 samples (ApplyUint8), also at 0
// allocs/op.
func BenchmarkLoader(b *testing.B) {
	for _, placement := range []Placement{Host, Device} {
		for _, impl := range transforms.Names {
			for _, record := range []bool{false, true} {
				name := fmt.Sprintf("transforms=%s/record=%v/placement=%s", impl, record, placement)
				b.Run(name, func(b *testing.B) { benchmarkLoader(b, impl, record, placement) })
			}
		}
	}
}

func benchmarkLoader(b *testing.B, impl string, record bool, placement Placement) {
	cfg := Config{
		Dataset:    datasets.Synthetic{Width: 128, Height: 128, Classes: 10, N: 1000, Seed: 1},
		Transforms: transforms.Config{Crop: 64, MaskRatio: 0.25},
		Impl:       impl, Batch: 16, Workers: 2, Prefetch: 2, Placement: placement,
	}
	if record {
		cfg.Recorder = pipeline.NewRecorder()
	}
	b.ReportAllocs()
	l, err := New(context.Background(), level.None, cfg, b.N)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for range b.N {
		bt, err := l.Next(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		l.Release(bt)
	}
	b.ReportMetric(float64(b.N*cfg.Batch)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkLoaderOnDisk measures the pipeline reading a small dataset on
// disk (fetch, decode, transform, collate) per batch, with -benchmem: raw
// shards allocate nothing per sample once the pools are full (fetch into
// a pooled buffer, decode into a pooled sample); PNG and JPEG show what
// Go's decoders allocate (their own image per call), files what opening a
// file costs.
func BenchmarkLoaderOnDisk(b *testing.B) {
	for _, format := range []string{"raw", "png", "jpeg"} {
		for _, layout := range []string{"files", "shards"} {
			b.Run(fmt.Sprintf("format=%s/layout=%s", format, layout), func(b *testing.B) {
				cfg := onDisk(b, format, layout, 50, 2)
				b.ReportAllocs()
				l, err := New(context.Background(), level.None, cfg, b.N)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				b.ResetTimer()
				for range b.N {
					bt, err := l.Next(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					l.Release(bt)
				}
				b.ReportMetric(float64(b.N*cfg.Batch)/b.Elapsed().Seconds(), "samples/s")
			})
		}
	}
}
