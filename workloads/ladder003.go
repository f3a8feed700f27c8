package workloads

import (
	"time"

	"github.com/headspace-bench/headspace/harness/device"
	"github.com/headspace-bench/headspace/harness/ladder"
)

// Ladder003 is the document's experiment: its toy pipeline (1024×1024
// random raw images, RandomCrop 256, RandomMask 0.25 with dilation,
// ConvertColor, Scale; batch 256) at every level of the caching ladder, on a
// device whose step takes the document's device-cached 290 ms.
type Ladder003 struct {
	Levels  []ladder.Level
	Workers []int
	Impls   []string
	Config  ladder.Config
	Device  device.EmulatedConfig
}

// DefaultLadder003 is the sweep `make bench` runs.
func DefaultLadder003() Ladder003 {
	return Ladder003{
		Levels:  ladder.Levels,
		Workers: []int{1, 2, 4},
		Impls:   []string{"naive", "fast"},
		Config:  ladder.DefaultConfig(),
		Device:  device.DefaultEmulated(),
	}
}

// DocumentStep is the document's device-cached step time: 1/3.45 s.
const DocumentStep = time.Second * 100 / 345
