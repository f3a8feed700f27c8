package whatif

import (
	"time"

	"github.com/headspace-bench/headspace/harness/node"
)

// MachineBusy is the busy CPU time of the whole machine so far, every
// process's at every priority (Linux only): /proc/stat as
// node.ReadCPUTimes reads it.
func MachineBusy() (time.Duration, error) {
	c, err := node.ReadCPUTimes()
	return c.Normal + c.Niced, err
}
