// Package cli holds what headspace's commands share and no user imports:
// the command type (its name, summary, verbs and run function), flag sets
// that report errors instead of exiting, the usage error (exit status 2,
// one line), the bounds table every numeric flag is checked against as it
// is parsed (each package declares its flags' bounds into it, Declare),
// the list and size parsers, the output checks and the CPU profile.
//
// It is the ground floor, as all of internal/ is: it imports no package
// of this module outside internal/ (TestInternalIsGroundFloor). What the
// commands share that reaches into the packages they run is package
// command's; the data flags are package loader's (loader.DataFlags).
//
// The commands themselves are made from the experiments' registry
// (package command's Commands) and cmd/headspace's own few (gate, history, merge,
// dataset, levels, baseline, compare, reproduce): cmd/headspace maps a
// name to its Command and turns the error it returns into an exit status.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Command is one subcommand: a thin layer of flags over the packages.
type Command struct {
	// Name is the command's name: headspace <Name>.
	Name string
	// Summary is its line in headspace help; one starting "internal:" is
	// left out (started by headspace itself).
	Summary string
	// Runs names the registered experiments it runs (workloads.Registry);
	// none for a command that runs no experiment.
	Runs []string
	// Verbs are the command's verbs (history add, report…), each with
	// flags of its own; none for a command that has one set of flags.
	Verbs []string
	// Run runs the command with its arguments (after its name).
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// UsageError is bad input: exit status 2 and a one-line reason.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// AsUsage is err as a usage error (exit 2), or nil.
func AsUsage(err error) error {
	if err == nil {
		return nil
	}
	return UsageError{err.Error()}
}

// Usagef is a usage error of the formatted message.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// NewFlagSet returns a flag set that reports errors instead of exiting and
// prints its usage to stdout on -h.
func NewFlagSet(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("headspace "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fs.SetOutput(stdout)
		// A command that runs a user's own training command (its
		// --first-batch-timeout is the own loop's) says so on its usage line.
		line := "Usage: headspace " + name + " [flags]"
		if fs.Lookup("first-batch-timeout") != nil {
			line += " [-- COMMAND [ARG...]]"
		}
		fmt.Fprintf(stdout, "%s\n\n%s\n\nFlags:\n", line, strings.TrimSpace(usage))
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if FlagSetMade != nil {
		FlagSetMade(fs)
	}
	return fs
}

// ParseArgs parses args, turning flag errors into usage errors; the
// arguments after the flags stay in fs.Args() for the command to check.
func ParseArgs(fs *flag.FlagSet, args []string) error {
	// The flag package prints the usage on every parse error; print it
	// only when asked for, and keep a bad flag to its one line.
	usage := fs.Usage
	fs.Usage = func() {
		for _, a := range args {
			if a == "--" {
				break
			}
			if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
				usage()
				return
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err // Parse has printed the usage
		}
		return UsageError{err.Error()}
	}
	return CheckBounds(fs)
}

// FlagSetMade, when set (by a test), sees every flag set NewFlagSet
// makes.
var FlagSetMade func(*flag.FlagSet)

// ParseFlags is ParseArgs for a command that takes flags only: an argument
// after them is a usage error.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		// "--pinned false": a boolean flag takes its value after "=".
		if a := fs.Arg(0); a == "true" || a == "false" {
			if i := len(args) - fs.NArg() - 1; i >= 0 {
				name := strings.TrimLeft(args[i], "-")
				if f := fs.Lookup(name); f != nil {
					if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
						return Usagef("unexpected argument %q: a boolean flag takes its value after =, as in --%s=%s", a, name, a)
					}
				}
			}
		}
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
