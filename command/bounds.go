package command

import (
	"time"

	"github.com/headspace-bench/headspace/internal/cli"
)

// The bounds of the numeric flags the commands still in workloads'
// *cmd.go files define (the own loop's), in the command
// line's table (internal/cli): by flag name for one several of them
// define alike, by "command flag" for a command's own. They move beside
// their flags when those files come to this layer; the other commands'
// are declared beside their flags (workloads' Flags methods, this
// package's commands), the pipeline's and the data's are package
// loader's, the counting flags' internal/cli's, cmd/headspace's
// commands' their own.
var _ = cli.Declare(map[string]cli.Bound{
	// A user's own training command (analyze, ladder, whatif -- COMMAND).
	"loader":              {Lo: 1, Hi: 1 << 20},
	"first-batch-timeout": {Lo: 0, Hi: float64(24 * time.Hour)},
	"stall-timeout":       {Lo: 0, Hi: float64(24 * time.Hour)},
})
