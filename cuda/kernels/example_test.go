package kernels_test

import (
	"fmt"

	"github.com/headspace-bench/headspace/cuda/kernels"
)

// The document's step: its launches by kernel, and the device memory its
// buffers take.
func ExampleNetPlan() {
	p, err := kernels.NetPlan(256, 256, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	count := map[string]int{}
	for _, l := range p.Step {
		name := l.Kernel
		if name == "conv3x3_forward" && l.Args[8] == int32(1) {
			name = "data gradient" // the same kernel, transposed
		}
		count[name]++
	}
	var bytes int64
	for _, b := range p.Buffers {
		bytes += b.Bytes
	}
	fmt.Println("launches per step:", len(p.Step), "convert:", len(p.Convert))
	fmt.Println("convolutions:", count["conv3x3_forward"], "data gradients:", count["data gradient"], "pools:", count["maxpool2_forward"], "updates:", count["sgd_momentum"])
	fmt.Printf("device memory: %.2f GiB\n", float64(bytes)/(1<<30))
	first := p.Step[0]
	fmt.Println("first:", first.Kernel, "grid", first.Grid, "block", first.Block)
	// Output:
	// launches per step: 75 convert: 1
	// convolutions: 10 data gradients: 9 pools: 8 updates: 10
	// device memory: 9.02 GiB
	// first: conv3x3_forward grid [32768 3 1] block [128 1 1]
}

func ExampleChecks() {
	for _, c := range kernels.Checks(1) {
		fmt.Println(c.Name, len(c.Launches), "launches,", len(c.Outputs), "outputs")
	}
	// Output:
	// conv3x3_forward relu=false 1 launches, 1 outputs
	// conv3x3_forward relu=true 1 launches, 1 outputs
	// conv3x3_backward_data 1 launches, 1 outputs
	// conv3x3_forward 7→12 side 9 1 launches, 1 outputs
	// conv3x3_backward_data 7→12 side 9 1 launches, 1 outputs
	// conv3x3_backward_params chunk=64 2 launches, 1 outputs
	// conv3x3_backward_params chunk=512 2 launches, 1 outputs
	// conv3x3_backward_params chunk=4096 2 launches, 1 outputs
	// relu_backward 1 launches, 1 outputs
	// maxpool2_forward 1 launches, 1 outputs
	// maxpool2_backward 1 launches, 1 outputs
	// softmax_cross_entropy 1 launches, 2 outputs
	// sgd_momentum 1 launches, 2 outputs
	// convert_scale 1 launches, 1 outputs
	// device transform 23x17 crop 10 device-crop=false 3 launches, 2 outputs
	// device transform 23x17 crop 10 device-crop=true 3 launches, 2 outputs
	// device transform 96x80 crop 70 device-crop=false 3 launches, 2 outputs
	// device transform 96x80 crop 70 device-crop=true 3 launches, 2 outputs
	// step float32 x2 70 launches, 12 outputs
	// step uint8 x2 71 launches, 12 outputs
}
