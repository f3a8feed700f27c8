package batching_test

import (
	"fmt"

	"github.com/headspace-bench/headspace/batching"
)

func ExampleNewPoolOf() {
	// Two samples of 3×2×2 values each, as uint8: the masked crops that
	// transforms.Uint8Applier writes, for the device to convert.
	p, err := batching.NewPoolOf(batching.Uint8, 2, 12)
	if err != nil {
		panic(err)
	}
	b := p.Get()
	sample := []uint8{255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if err := b.PutUint8(0, sample, 3); err != nil {
		panic(err)
	}
	fmt.Println(b.DType, b.Bytes(), "bytes to upload")
	f, _ := batching.NewPool(2, 12)
	fmt.Println(f.Get().DType, f.Get().Bytes(), "bytes to upload")
	// Output:
	// uint8 32 bytes to upload
	// float32 104 bytes to upload
}
