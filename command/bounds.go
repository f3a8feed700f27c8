package command

import (
	"time"

	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/internal/cli"
)

// The bounds of the numeric flags the commands in workloads' *cmd.go
// files define, in the command line's table (internal/cli): by flag name
// for one several of them define alike, by "command flag" for a
// command's own. They move beside their flags when those files come to
// this layer; the pipeline's and the data's are package loader's, the
// counting flags' internal/cli's, cmd/headspace's commands' their own.
var _ = cli.Declare(map[string]cli.Bound{
	// The emulated device.
	"step":          {Lo: 0, Hi: float64(time.Hour)},
	"pinned-gbps":   {Lo: 0, Hi: 1e4},
	"pageable-gbps": {Lo: 0, Hi: 1e4},
	"convert-gbps":  {Lo: 0, Hi: 1e5},
	// A user's own training command (analyze, ladder, whatif -- COMMAND).
	"loader":              {Lo: 1, Hi: 1 << 20},
	"first-batch-timeout": {Lo: 0, Hi: float64(24 * time.Hour)},
	"stall-timeout":       {Lo: 0, Hi: float64(24 * time.Hour)},

	"analyze load-latency":        {Lo: 0, Hi: float64(time.Minute)},
	"analyze workers":             {Lo: 1, Hi: loader.MaxWorkers},
	"analyze num-caches":          {Lo: 1, Hi: cli.MaxBatches},
	"analyze return-caches-after": {Lo: 1, Hi: cli.MaxSteps},
	"analyze steps-after":         {Lo: 1, Hi: cli.MaxSteps},
	"analyze total-steps":         {Lo: 1, Hi: 1 << 40},
	"analyze stats-every":         {Lo: 0, Hi: float64(24 * time.Hour)},
	"cuda check gpu":              {Lo: 0, Hi: 1024},
	"cuda check side":             {Lo: 1, Hi: 32768},
	"cuda check reps":             {Lo: 1, Hi: cli.MaxCount},
	"cuda decode gpu":             {Lo: 0, Hi: 1024},
	"cuda decode threads":         {Lo: 1, Hi: 1024},
	"cuda decode batches":         {Lo: 1, Hi: 1_000_000},
	"node min-au":                 {Lo: 0, Hi: 1},
	"node barrier-timeout":        {Lo: 0, Hi: float64(24 * time.Hour)},
	"whatif min-au":               {Lo: 0, Hi: 1},
	"whatif target":               {Lo: 0, Hi: 4096},
	"whatif profile-cores":        {Lo: 0, Hi: 4096},
	"tune budget":                 {Lo: 0, Hi: float64(7 * 24 * time.Hour)},
	"tune rounds":                 {Lo: 1, Hi: cli.MaxCount},
	"tune pairs":                  {Lo: 1, Hi: cli.MaxCount},
	"tune max-workers":            {Lo: 0, Hi: loader.MaxWorkers},
	"loaders crop":                {Lo: 1, Hi: 32768},
	"loaders batches":             {Lo: 2, Hi: cli.MaxBatches},
	"peer batches":                {Lo: 2, Hi: cli.MaxBatches},
	"peer calibration-batches":    {Lo: 6, Hi: 1000},
	"peer shard-size":             {Lo: 1, Hi: 1 << 16},
	"peer jpeg-quality":           {Lo: 1, Hi: 100},
	"peer steps-after":            {Lo: 4, Hi: cli.MaxSteps},
	"sim loaders":                 {Lo: 1, Hi: 1024},
	"sim load":                    {Lo: 0, Hi: float64(10000 * time.Hour)},
	"sim load-stddev":             {Lo: 0, Hi: float64(10000 * time.Hour)},
	"sim step":                    {Lo: 0, Hi: float64(10000 * time.Hour)},
	"sim step-stddev":             {Lo: 0, Hi: float64(10000 * time.Hour)},
	"sim duration":                {Lo: 0, Hi: float64(24 * time.Hour)},
	"sim prefetch":                {Lo: 1, Hi: 1024},
	"sim gif-tick":                {Lo: 0, Hi: float64(24 * time.Hour)},
})
