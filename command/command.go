// Package command is the command layer: headspace's commands made from
// the experiments, above them (workloads) and below cmd/headspace, which
// registers Commands.
//
// Each command is a file: its constructor, its usage text and any run
// of its own (analyze.go, cuda.go, ladder.go, loaders.go, node.go,
// peer.go, remote.go, sim.go, tune.go, whatif.go). A command made from an
// experiment is made by CommandOf (run.go), the one way: the flags the
// experiment defines (its Flags) parsed into the registry's Default size
// of it, checked (its Prepare), the run through driver.Run to --out, the
// records read back through its codec and its Report printed; --from
// FILE decodes a saved file the same way and calls the same Report. What
// an experiment brings to it (Flags, Report, Prepare's Setup, the
// optional interfaces) is workloads' (workloads/command.go).
//
// A command of several experiments (peer) is made by ModesOf (run.go):
// a mode each, picked by its flag, each run by CommandOf's path; --from
// picks the mode whose codec owns the file's first record.
//
// Every numeric flag's bound is declared beside the flag (cli.Declare).
//
// What every command shares and needs nothing above internal/ (the
// command type, flag sets, usage errors, the bounds table's mechanism,
// the list parsers, the output checks) is internal/cli; what a measuring
// run checks before it measures (the memory check, the disturbance
// flags) is harness/preflight; the data flags are the loader's
// (loader.DataFlags).
package command
