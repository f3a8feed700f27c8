package transforms

import (
	"fmt"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// BenchmarkTransforms times one sample (ns/op is per sample) of each
// implementation on the document's 256 crop, from the 1024×1024 raw images
// it starts with and from the 256×256 ones it ends with.
func BenchmarkTransforms(b *testing.B) {
	cfg := DefaultConfig()
	for _, name := range Names {
		b.Run("impl="+name, func(b *testing.B) {
			for _, raw := range []int{1024, 256} {
				b.Run(fmt.Sprintf("raw=%d", raw), func(b *testing.B) {
					ds := datasets.Synthetic{Width: raw, Height: raw, Classes: 10, N: 1, Seed: 1}
					s := datasets.NewSample(raw, raw)
					if err := ds.Fill(0, s); err != nil {
						b.Fatal(err)
					}
					tr, err := New(name, cfg)
					if err != nil {
						b.Fatal(err)
					}
					dst := make([]float32, cfg.OutLen())
					// Passed through the interface, the Source escapes: make
					// it once so that only Apply's allocations are counted.
					rng := new(prng.Source)
					b.ReportAllocs()
					for i := uint64(0); b.Loop(); i++ {
						*rng = prng.New(7, i)
						if err := tr.Apply(dst, &s.Image, rng); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
