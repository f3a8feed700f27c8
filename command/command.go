// Package command is the command layer's shared part: what headspace's
// commands use that reaches into the packages they run, above them and
// below cmd/headspace. It holds the memory check of a run's buffers
// (Fits, FitsPipeline), the disturbance flags and the wait for a quiet
// machine (DisturbFlags), and the bounds of the numeric flags of the
// commands still defined in workloads' *cmd.go files (bounds.go), which
// move beside their flags when those files come to this layer.
//
// What every command shares and needs nothing above internal/ (the
// command type, flag sets, usage errors, the bounds table's mechanism,
// the list parsers, the output checks) is internal/cli; each package
// that defines a flag declares its bound beside it (cli.Declare), and
// the data flags are the loader's (loader.DataFlags).
package command
