package cuda_test

import (
	"context"
	"fmt"

	"github.com/headspace-bench/headspace/cuda"
)

// Open the first GPU, describe it and measure its copy speeds. On a machine
// without a driver Open says so: "no CUDA driver found (libcuda.so.1): …".
func ExampleOpen() {
	c, err := cuda.Open(context.Background(), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	info := c.Info()
	fmt.Printf("%s: driver %s, PTX JIT target %s\n", info.Name, info.Driver(), info.JITTarget())
	bw, err := cuda.MeasureBandwidth(context.Background(), c, []int64{64 << 20}, 5)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range bw {
		fmt.Printf("%s pinned=%v: %.1f GB/s\n", b.Direction(), b.Pinned, b.GBps())
	}
}

// A Device runs a plan's training step on batches that a training loop
// uploads; see harness/ladder.Train for the loop.
func ExampleNewDevice() {
	c, err := cuda.Open(context.Background(), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	d, err := cuda.NewDevice(c, cuda.DeviceConfig{
		PlanFor: func(batch, side int) (cuda.Plan, error) {
			return cuda.Plan{}, fmt.Errorf("the Net's plan comes from package cuda/kernels")
		},
		Pinned: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	fmt.Println(d.Name())
}
