package ownloop_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// FuzzParseCommand: whatever the command line (python, torchrun,
// python -m torch.distributed.run, accelerate launch, srun), ParseCommand
// refuses it in one line wrapping ErrRefused, or reads a script (or
// module) that ends the command line with its arguments, which the hook
// runs: HookArgs ends with -m headspace_hook [-m] SCRIPT ARGS….
func FuzzParseCommand(f *testing.F) {
	script := fakeTorchrun(f)
	for _, s := range []string{
		"python3 -u -X dev S --epochs 1", "python3 -u -- S a", "python3 -m pkg.train -x", "python3 -m", "python3 -c x", "python3 --",
		"python3 -m torch.distributed.run --nproc_per_node 2 -r 1 S a", "python3 -m torch.distributed.launch S",
		"torchrun --nproc_per_node 2 S --lr 1", "torchrun --nnodes=1:4 S", "torchrun --nproc_per_node", "torchrun -m pkg -x",
		"accelerate launch --multi_gpu --num_processes 2 --main_process_port=29600 S --lr 1", "accelerate config",
		"accelerate-launch --cpu --num_processes 2 S", "accelerate launch --mpirun_hostfile hosts S", "accelerate launch --use_deepspeed S",
		"srun --ntasks 2 -l --nodes=1 -p test python3 -u S --lr 1", "srun -n2 -N 1-1 --export=ALL,X=1 -- python3 -m pkg.train",
		"srun -lu -w node[1-2] python3 S", "srun -n 2 torchrun --nproc_per_node 2 S", "srun --export=NONE python3 S", "deepspeed S",
	} {
		f.Add(strings.ReplaceAll(s, "S", script))
	}
	f.Fuzz(func(t *testing.T, line string) {
		argv := strings.Fields(line) // no argument holds a line break
		c, err := ownloop.ParseCommand(argv)
		if err != nil {
			if !errors.Is(err, ownloop.ErrRefused) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseCommand(%q) = %v, want one line wrapping ErrRefused", argv, err)
			}
			return
		}
		run := append([]string{c.Script}, c.Args...)
		if c.Script == "" || c.Interpreter == "" || len(run) > len(argv) || !slices.Equal(argv[len(argv)-len(run):], run) {
			t.Fatalf("ParseCommand(%q) = %+v: want the interpreter, and a script that ends the command line with its arguments", argv, c)
		}
		hook := append([]string{"-m", ownloop.HookModule}, run...)
		if c.Module {
			hook = append([]string{"-m", ownloop.HookModule, "-m"}, run...)
		}
		if args := ownloop.HookArgs(c); len(args) < len(hook) || !slices.Equal(args[len(args)-len(hook):], hook) {
			t.Fatalf("ParseCommand(%q): the hook runs %q, want it to end with %q", argv, args, hook)
		}
	})
}
