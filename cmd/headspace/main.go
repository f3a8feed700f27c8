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
	"sort"
	"strings"
	"syscall"

	"github.com/headspace-bench/headspace/command"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// commands are headspace's commands by name: the experiments' from the
// command layer (command.Commands) and this package's own, each
// registered by its file's init.
var commands = map[string]cli.Command{}

func init() {
	for _, c := range command.Commands() {
		register(c)
	}
}

// register adds c to the commands. It panics, when the program starts,
// on a command that runs an experiment not in workloads.Registry, or on
// a name registered twice: mistakes any test of the package shows.
func register(c cli.Command) {
	if _, ok := commands[c.Name]; ok {
		panic(fmt.Sprintf("headspace: command %s registered twice", c.Name))
	}
	for _, e := range c.Runs {
		if _, err := workloads.Find(e); err != nil {
			panic(fmt.Sprintf("headspace: command %s runs %s, which is not in workloads.Registry", c.Name, e))
		}
	}
	commands[c.Name] = c
}

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
			return exitCode(c.Run(ctx, []string{"-h"}, stdout, stderr), c.Name, stderr)
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
	return exitCode(c.Run(ctx, args[1:], stdout, stderr), c.Name, stderr)
}

func exitCode(err error, name string, stderr io.Writer) int {
	var ue cli.UsageError
	var ee exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "headspace %s: %s\n", name, ue.Msg)
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
		if strings.HasPrefix(commands[n].Summary, "internal:") {
			continue // started by headspace itself, not by users
		}
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].Summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'headspace <command> -h' for a command's flags.")
}
