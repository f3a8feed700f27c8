package main

import (
	"fmt"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/harness/device"
)

// openCUDA opens the CUDA device, or says why there is none.
func openCUDA(pf *pipelineFlags, pinned bool) (device.Device, error) {
	if _, err := cuda.Load(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("--device cuda: the driver is present, but this build's CUDA backend does not implement the Device interface yet (issue 7)")
}
