package ownloop

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrRefused is wrapped by every refusal of a command or of what the hook
// found in it: bad input, exit status 2.
var ErrRefused = errors.New("refused")

func refusef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// Command is a training command as the user gives it: an interpreter, its
// options, then a script (or -m module) and the script's arguments.
type Command struct {
	Argv        []string // the whole command, as given
	Interpreter string   // the interpreter's path, found on PATH
	Options     []string // the interpreter's options before the script
	Module      bool     // Script is a module run with -m
	Script      string   // the script's path, or the module's name
	Args        []string // the script's arguments
	// Launcher is the launcher that starts the script's ranks
	// (torchrun, torch.distributed.run, accelerate launch, srun;
	// ranks.go), "" for one process; LauncherArgs are its options before
	// the script (srun's: before its program), Procs the ranks it starts
	// (0: not a number it was given), Python the interpreter srun runs
	// in each task, as found on PATH.
	Launcher     string
	LauncherArgs []string
	Procs        int
	Python       string
	// Line, where set, is what String says: a command read back from a
	// result file's line.
	Line string
}

// Name is the script's base name (or the module's name): the script= key
// of the records.
func (c Command) Name() string {
	if c.Module {
		return c.Script
	}
	return filepath.Base(c.Script)
}

// String is the command line, each argument quoted where it must be.
func (c Command) String() string {
	if c.Line != "" {
		return c.Line
	}
	parts := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		parts[i] = quote(a)
	}
	return strings.Join(parts, " ")
}

func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '=' || r == ',' || r == ':' || r == '+' ||
			('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var pythonName = regexp.MustCompile(`^(python|pypy)[0-9.]*(\.exe)?$`)

// launchers are the multi-process launchers not supported yet (torchrun,
// accelerate launch and srun are: ranks.go).
var launchers = map[string]bool{"deepspeed": true, "mpirun": true, "horovodrun": true}

// optionsWithValue are the interpreter's options that take the next
// argument.
var optionsWithValue = map[string]bool{"-W": true, "-X": true, "--check-hash-based-pycs": true}

// ParseCommand checks argv is a Python training command that the hook can
// run: its interpreter exists and is Python, it runs a script or a module
// (never -c, never a launcher but torchrun), and a script exists. Every refusal is one
// line wrapping ErrRefused.
func ParseCommand(argv []string) (Command, error) {
	if len(argv) == 0 {
		return Command{}, refusef("no command: give the training command after --, as in -- python3 train.py")
	}
	c := Command{Argv: argv}
	base := filepath.Base(argv[0])
	switch strings.TrimSuffix(base, ".exe") {
	case "torchrun":
		return parseTorchrun(c, base)
	case "accelerate", "accelerate-launch":
		return parseAccelerate(c, strings.TrimSuffix(base, ".exe"))
	case "srun":
		return parseSrun(c)
	}
	if launchers[strings.TrimSuffix(base, ".exe")] {
		return c, refusef("%s is not supported yet: %s", base, supportedLaunchers)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return c, refusef("command %s not found", argv[0])
	}
	if !pythonName.MatchString(base) {
		return c, refusef("%s is not a Python interpreter: give the command as python3 SCRIPT [ARGS...]", argv[0])
	}
	c.Interpreter = path
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-c" || strings.HasPrefix(a, "-c"):
			return c, refusef("%s -c runs code from the command line: give a script or -m module", base)
		case a == "-m":
			return module(c, base, argv[i+1:])
		case a == "--" && i+1 < len(argv) && argv[i+1] != "-":
			// The end of the interpreter's options: the script follows.
			return script(c, argv[i+1], argv[i+2:])
		case a == "-" || a == "--":
			return c, refusef("%s reads its script from stdin: give a script file", base)
		case strings.HasPrefix(a, "-"):
			if err := checkOption(base, a); err != nil {
				return c, err
			}
			c.Options = append(c.Options, a)
			if optionsWithValue[a] && i+1 < len(argv) {
				i++
				c.Options = append(c.Options, argv[i])
			}
		default:
			return script(c, a, argv[i+1:])
		}
	}
	return c, refusef("%s with no script: give the command as %s SCRIPT [ARGS...]", base, base)
}

// module is c running the module rest[0] with the arguments after it
// (the interpreter's -m): python -m torch.distributed.run is torchrun,
// the other launchers of torch.distributed are refused.
func module(c Command, base string, rest []string) (Command, error) {
	if len(rest) == 0 {
		return c, refusef("%s -m needs a module", base)
	}
	c.Module, c.Script, c.Args = true, rest[0], rest[1:]
	if c.Script == "torch.distributed.run" {
		return parseLauncherArgs(c, "python -m torch.distributed.run", rest[1:])
	}
	if strings.HasPrefix(c.Script, "torch.distributed") {
		return c, refusef("-m %s is not supported: %s", c.Script, supportedLaunchers)
	}
	return c, nil
}

// script is c running the script at path with args, which must exist
// (a module, c.Module, is not checked).
func script(c Command, path string, args []string) (Command, error) {
	c.Script, c.Args = path, args
	if c.Module {
		return c, nil
	}
	if _, err := os.Stat(path); err != nil {
		return c, refusef("script %s: %v", path, unwrap(err))
	}
	return c, nil
}

// checkOption refuses an interpreter option (or a bundle of short ones,
// as in -uI) that would keep the hook from loading: -I and -E make the
// interpreter ignore PYTHONPATH, where the hook's module is.
func checkOption(base, a string) error {
	if strings.HasPrefix(a, "--") {
		return nil
	}
	for _, r := range a[1:] {
		switch r {
		case 'W', 'X':
			return nil // the rest is the option's value
		case 'I', 'E':
			return refusef("%s -%c makes the interpreter ignore PYTHONPATH, which headspace's hook is loaded from: leave -%c out", base, r, r)
		}
	}
	return nil
}
