// Command headspace answers, for a model trained on a GPU, how much faster
// training would go if data loading were free, and which stage of the input
// pipeline is in the way.
//
// Usage:
//
//	headspace <command> [flags]
//
// Run "headspace help" for the commands and "headspace <command> -h" for a
// command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"sort"
	"strings"
	"syscall"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/workloads"
)

// command is one subcommand: a thin layer of flags over the packages.
// The command of an experiment names the registered experiments it runs
// (workloads.Registry), parses its flags into their specifications,
// starting from their sizes in the registry (workloads.Sized), and runs
// them through workloads.Experiment's Run.
type command struct {
	name    string
	summary string
	// runs are the registered experiments the command runs (any value of
	// each type); none for a command that runs no experiment.
	runs []workloads.Experiment
	// verbs are the command's verbs (history add, report…), each with
	// flags of its own; none for a command that has one set of flags.
	verbs []string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

// register adds c to the commands. It panics, when the program starts,
// on a command that runs an experiment not in workloads.Registry, or on
// a name registered twice: mistakes any test of the package shows.
func register(c command) {
	if _, ok := commands[c.name]; ok {
		panic(fmt.Sprintf("headspace: command %s registered twice", c.name))
	}
	for _, e := range c.runs {
		if r, err := workloads.Find(e.Name()); err != nil || reflect.TypeOf(r.Experiment()) != reflect.TypeOf(e) {
			panic(fmt.Sprintf("headspace: command %s runs %T, which is not in workloads.Registry", c.name, e))
		}
	}
	commands[c.name] = c
}

// usageError is bad input: exit status 2 and a one-line reason.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries a specific exit status with its message (compare's 1).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	atomicfile.StopOn(ctx) // SIGINT ends a wait for a pipe's reader
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			c, ok := commands[args[1]]
			if !ok {
				fmt.Fprintf(stderr, "headspace help: unknown command %q (run 'headspace help')\n", args[1])
				return 2
			}
			return exitCode(c.run(ctx, []string{"-h"}, stdout, stderr), c.name, stderr)
		}
		writeUsage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "headspace: unknown command %q (run 'headspace help')\n", args[0])
		return 2
	}
	return exitCode(c.run(ctx, args[1:], stdout, stderr), c.name, stderr)
}

func exitCode(err error, name string, stderr io.Writer) int {
	var ue usageError
	var ee exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "headspace %s: %s\n", name, ue.msg)
		return 2
	case errors.Is(err, resultfile.ErrRefused):
		// A destination refused before anything was measured.
		fmt.Fprintf(stderr, "headspace %s: %v\n", name, err)
		return 2
	case errors.Is(err, ondisk.ErrCorrupt):
		// Bad input found while reading it: the dataset, not the run.
		fmt.Fprintf(stderr, "headspace %s: %v\n", name, err)
		return 2
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		// SIGINT or SIGTERM (main's context): the conventional 128+2; a
		// command that kept what finished says what (driver.Interrupted).
		msg := "interrupted"
		var ie driver.Interrupted
		if errors.As(err, &ie) {
			msg = ie.Error()
		}
		fmt.Fprintf(stderr, "headspace %s: %s\n", name, msg)
		return 130
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "headspace %s: %s\n", name, ee.msg)
		}
		return ee.code
	default:
		fmt.Fprintf(stderr, "headspace %s: %v\n", name, err)
		return 1
	}
}

func writeUsage(w io.Writer) {
	fmt.Fprintln(w, "headspace: how much faster would training go if data loading were free,")
	fmt.Fprintln(w, "and which stage of the input pipeline is in the way?")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: headspace <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasPrefix(commands[n].summary, "internal:") {
			continue // started by headspace itself, not by users
		}
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'headspace <command> -h' for a command's flags.")
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints its usage to stdout on -h.
func newFlagSet(name, usage string, stdout io.Writer) *flag.FlagSet {
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
	if flagSetMade != nil {
		flagSetMade(fs)
	}
	return fs
}

// parseArgs parses args, turning flag errors into usage errors; the
// arguments after the flags stay in fs.Args() for the command to check.
func parseArgs(fs *flag.FlagSet, args []string) error {
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
		return usageError{err.Error()}
	}
	return checkBounds(fs)
}

// flagSetMade, when set (by a test), sees every flag set newFlagSet
// makes.
var flagSetMade func(*flag.FlagSet)

// parseFlags is parseArgs for a command that takes flags only: an argument
// after them is a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		// "--pinned false": a boolean flag takes its value after "=".
		if a := fs.Arg(0); a == "true" || a == "false" {
			if i := len(args) - fs.NArg() - 1; i >= 0 {
				name := strings.TrimLeft(args[i], "-")
				if f := fs.Lookup(name); f != nil {
					if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
						return usagef("unexpected argument %q: a boolean flag takes its value after =, as in --%s=%s", a, name, a)
					}
				}
			}
		}
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
