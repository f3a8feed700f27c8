// Package command is the command layer: headspace's commands made from
// the experiments, above them (workloads) and below cmd/headspace.
//
// It holds the bounds of the numeric flags of the commands still defined
// in workloads' *cmd.go files (bounds.go), which move beside their flags
// when those files come to this layer.
//
// What every command shares and needs nothing above internal/ (the
// command type, flag sets, usage errors, the bounds table's mechanism,
// the list parsers, the output checks) is internal/cli; what a measuring
// run checks before it measures (the memory check, the disturbance
// flags) is harness/preflight; each package that defines a flag
// declares its bound beside it (cli.Declare), and the data flags are
// the loader's (loader.DataFlags).
package command
