package command

import (
	"time"

	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/internal/cli"
)

// The bounds of the numeric flags the commands still in workloads'
// *cmd.go files define (peer and tune), in the command
// line's table (internal/cli): by flag name for one several of them
// define alike, by "command flag" for a command's own. They move beside
// their flags when those files come to this layer; the other commands'
// are declared beside their flags (workloads' Flags methods, this
// package's commands), the pipeline's and the data's are package
// loader's, the counting flags' internal/cli's, cmd/headspace's
// commands' their own.
var _ = cli.Declare(map[string]cli.Bound{
	"tune budget":              {Lo: 0, Hi: float64(7 * 24 * time.Hour)},
	"tune rounds":              {Lo: 1, Hi: cli.MaxCount},
	"tune pairs":               {Lo: 1, Hi: cli.MaxCount},
	"tune max-workers":         {Lo: 0, Hi: loader.MaxWorkers},
	"peer batches":             {Lo: 2, Hi: cli.MaxBatches},
	"peer calibration-batches": {Lo: 6, Hi: 1000},
	"peer shard-size":          {Lo: 1, Hi: 1 << 16},
	"peer jpeg-quality":        {Lo: 1, Hi: 100},
	"peer steps-after":         {Lo: 4, Hi: cli.MaxSteps},
})
