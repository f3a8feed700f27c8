package ownloop_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// fakeTorchrun puts executables named torchrun, accelerate,
// accelerate-launch and srun on PATH (a launcher is found on PATH like an
// interpreter) and returns a script beside them.
func fakeTorchrun(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"torchrun", "accelerate", "accelerate-launch", "srun"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	script := filepath.Join(dir, "train.py")
	if err := os.WriteFile(script, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestParseLaunchers: torchrun and python -m torch.distributed.run are
// read into the launcher's options, the script and its arguments, and
// run each rank under the hook (-m headspace_hook before the script,
// the user's -m after it).
func TestParseLaunchers(t *testing.T) {
	script := fakeTorchrun(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv     []string
		launcher string
		procs    int
		script   string
		module   bool
		args     string
		hook     string // hookArgs, script as S, python as PY
	}{
		{[]string{"torchrun", "--nproc_per_node", "2", script, "--lr", "1"}, "torchrun", 2, script, false, "--lr 1",
			"--nproc_per_node 2 -m headspace_hook S --lr 1"},
		{[]string{"torchrun", "--nproc-per-node=4", "--standalone", "--nnodes", "1:1", script}, "torchrun", 4, script, false, "",
			"--nproc-per-node=4 --standalone --nnodes 1:1 -m headspace_hook S"},
		{[]string{"torchrun", "--nproc_per_node", "auto", "-m", "pkg.train", "-x"}, "torchrun", 0, "pkg.train", true, "-x",
			"--nproc_per_node auto -m headspace_hook -m S -x"},
		{[]string{py, "-u", "-m", "torch.distributed.run", "--nproc_per_node", "2", "-r", "1", script, "a"}, "torch.distributed.run", 2, script, false, "a",
			"-u -m torch.distributed.run --nproc_per_node 2 -r 1 -m headspace_hook S a"},
		// accelerate launch: its own -m runs the hook in each rank.
		{[]string{"accelerate", "launch", "--multi_gpu", "--num_processes", "2", "--main_process_port=29600", script, "--lr", "1"}, "accelerate launch", 2, script, false, "--lr 1",
			"launch --multi_gpu --num_processes 2 --main_process_port=29600 -m headspace_hook S --lr 1"},
		{[]string{"accelerate", "launch", "--num-processes=4", "--use_fsdp", "--num_machines", "1", "-m", "pkg.train", "-x"}, "accelerate launch", 4, "pkg.train", true, "-x",
			"launch --num-processes=4 --use_fsdp --num_machines 1 -m headspace_hook -m S -x"},
		// Without --multi_gpu, accelerate runs the script as one process.
		{[]string{"accelerate-launch", "--cpu", "--num_processes", "2", script}, "accelerate launch", 0, script, false, "",
			"--cpu --num_processes 2 -m headspace_hook S"},
		// srun: each task runs its Python under the hook.
		{[]string{"srun", "--ntasks", "2", "-l", "--nodes=1", "-p", "test", py, "-u", script, "--lr", "1"}, "srun", 2, script, false, "--lr 1",
			"--ntasks 2 -l --nodes=1 -p test PY -u -m headspace_hook S --lr 1"},
		{[]string{"srun", "-n2", "-N", "1-1", "--export=ALL,X=1", "--", py, "-m", "pkg.train"}, "srun", 2, "pkg.train", true, "",
			"-n2 -N 1-1 --export=ALL,X=1 PY -m headspace_hook -m S"},
	} {
		c, err := ownloop.ParseCommand(tc.argv)
		if err != nil {
			t.Errorf("ParseCommand(%q) = %v", tc.argv, err)
			continue
		}
		if c.Launcher != tc.launcher || c.Procs != tc.procs || c.Script != tc.script || c.Module != tc.module || strings.Join(c.Args, " ") != tc.args {
			t.Errorf("ParseCommand(%q) = %+v", tc.argv, c)
		}
		hook := strings.ReplaceAll(strings.ReplaceAll(strings.Join(ownloop.HookArgs(c), " "), tc.script, "S"), py, "PY")
		if hook != tc.hook {
			t.Errorf("ParseCommand(%q): runs %q, want %q", tc.argv, hook, tc.hook)
		}
	}
}

// TestParseLaunchersRefuses: what the hook cannot run is one line, named.
func TestParseLaunchersRefuses(t *testing.T) {
	script := fakeTorchrun(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"torchrun", "--nnodes", "2", "--nproc_per_node", "2", script}, "more than one node"},
		{[]string{"torchrun", "--nnodes=1:4", script}, "more than one node"},
		{[]string{py, "-m", "torch.distributed.run", "--nnodes", "2", script}, "more than one node"},
		{[]string{"torchrun", "--no_python", "./train"}, "not Python"},
		{[]string{"torchrun", "--run-path", script}, "inside the launcher's own process"},
		{[]string{"torchrun", "--nproc_per_node", "2"}, "with no script"},
		{[]string{"torchrun", "--nproc_per_node"}, "needs a value"},
		{[]string{"torchrun", "--nproc_per_node", "0", script}, "want at least 1"},
		{[]string{"torchrun", filepath.Join(t.TempDir(), "missing.py")}, "missing.py"},
		{[]string{"accelerate", "launch", "--multi_gpu", "--num_machines", "2", script}, "more than one node"},
		{[]string{"accelerate", "launch", "--use_deepspeed", script}, "DeepSpeed's launcher"},
		{[]string{"accelerate", "launch", "--mpirun_hostfile", "hosts", script}, "mpirun"},
		{[]string{"accelerate", "launch", "--tpu", script}, "TPUs"},
		{[]string{"accelerate", "launch", "--no_python", "./train"}, "not Python"},
		{[]string{"accelerate", "launch", "--num_processes", "0", script}, "want at least 1"},
		{[]string{"accelerate", "launch", "--multi_gpu"}, "accelerate launch with no script"},
		{[]string{"accelerate", "launch", "--num_processes"}, "needs a value"},
		{[]string{"accelerate", "config"}, "accelerate config is not a launcher"},
		{[]string{"accelerate"}, "accelerate with no command is not a launcher"},
		{[]string{"deepspeed", "--num_gpus", "2", script}, "deepspeed is not supported yet"},
		{[]string{"srun", "-N", "2", "-n", "4", py, script}, "more than one node"},
		{[]string{"srun", "--nodes=1-3", py, script}, "more than one node"},
		{[]string{"srun", "-N2", py, script}, "more than one node"},
		{[]string{"srun", "-w", "node[1-2]", py, script}, "more than one node"},
		{[]string{"srun", "--multi-prog", "tasks.conf"}, "--multi-prog"},
		{[]string{"srun", "--export=NONE", py, script}, "--export=NONE"},
		{[]string{"srun", "-n", "0", py, script}, "at least 1"},
		{[]string{"srun", "-n", "2", "torchrun", "--nproc_per_node", "2", script}, "a launcher in each task"},
		{[]string{"srun", "-n", "2", "/bin/hostname"}, "not a Python interpreter"},
		{[]string{"srun", "-n", "2"}, "srun with no program"},
		{[]string{"mpirun", "-np", "2", py, script}, "mpirun is not supported yet"},
		{[]string{py, "-m", "torch.distributed.launch", script}, "-m torch.distributed.launch is not supported"},
	} {
		_, err := ownloop.ParseCommand(tc.argv)
		if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseCommand(%q) = %v, want one line refusing with %q", tc.argv, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "out of scope") {
			t.Errorf("ParseCommand(%q) = %v: the old refusal", tc.argv, err)
		}
	}
}

// TestInnermostFrame reads the main thread's innermost frame from
// faulthandler's dump, whichever thread took the signal.
func TestInnermostFrame(t *testing.T) {
	dump := `Thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Current thread 0x00007f0000000002 (most recent call first):
  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 1321 in all_reduce
  File "/tmp/ddp.py", line 75 in train
  File "/tmp/ddp.py", line 120 in <module>
`
	if got, want := ownloop.InnermostFrame(dump), "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:1321 in all_reduce"; got != want {
		t.Errorf("InnermostFrame = %q, want %q", got, want)
	}
	// Under python -m, the main thread's outermost frame is runpy's.
	runpy := `Current thread 0x00007f0000000002 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007f0000000001 (most recent call first):
  File "/tmp/ddp.py", line 80 in train
  File "<frozen runpy>", line 198 in _run_module_as_main
`
	if got, want := ownloop.InnermostFrame(runpy), "/tmp/ddp.py:80 in train"; got != want {
		t.Errorf("InnermostFrame(python -m) = %q, want %q", got, want)
	}
	if got := ownloop.InnermostFrame("no frames at all"); got != "" {
		t.Errorf("InnermostFrame(no frames) = %q", got)
	}
	// Read while faulthandler still writes (newest thread first): a
	// loader's queue feeder thread, cut before its _bootstrap, and no
	// main thread yet. Not the main thread's frame (TestRankHangs once
	// took rank 0 to be waiting for its loader from such a dump).
	partial := `Thread 0x00007f0000000003 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/usr/lib/python3.11/multiprocessing/queues.py", line 231 in _feed
  File "/usr/lib/python3.11/threading.py", line 975 in run
`
	if got := ownloop.InnermostFrame(partial); got != "" {
		t.Errorf("InnermostFrame(a dump cut in a thread's block) = %q, want none: the main thread's block is not there yet", got)
	}
	if got := ownloop.InnermostFrame(partial + "  File \"/usr/lib/python3.11/threading.py\", line 1038 in _bootstrap_inner\n\n" + strings.SplitN(dump, "\n\n", 2)[1]); got != "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:1321 in all_reduce" {
		t.Errorf("InnermostFrame(the whole dump) = %q, want the main thread's all_reduce", got)
	}
	// A stack deeper than faulthandler writes ends in "...": the main
	// thread's, where no block reaches <module>.
	deep := "Current thread 0x00007f0000000002 (most recent call first):\n  File \"/tmp/lit.py\", line 9 in training_step\n  File \"/x/lightning/loop.py\", line 3 in run\n  ...\n"
	if got := ownloop.InnermostFrame(deep); got != "/tmp/lit.py:9 in training_step" {
		t.Errorf("InnermostFrame(a deep stack) = %q", got)
	}
}

// TestHungRanks names the ranks behind the others, or where every rank
// has as many steps, those not waiting in a collective.
func TestHungRanks(t *testing.T) {
	c10d := "/x/torch/distributed/distributed_c10d.py:1321 in all_reduce"
	for _, tc := range []struct {
		steps []int
		where []string
		want  []int
	}{
		{[]int{5, 4}, []string{c10d, "/tmp/ddp.py:3 in __getitem__"}, []int{1}},
		{[]int{5, 5}, []string{c10d, "/tmp/ddp.py:80 in train"}, []int{1}},
		{[]int{5, 5, 5}, []string{"/tmp/ddp.py:80 in train", c10d, c10d}, []int{0}},
		{[]int{5, 5}, []string{c10d, c10d}, nil},
		{[]int{5, 5}, []string{"", ""}, nil},
	} {
		if got := ownloop.HungRanks(tc.steps, tc.where); !slices.Equal(got, tc.want) {
			t.Errorf("HungRanks(%v, %q) = %v, want %v", tc.steps, tc.where, got, tc.want)
		}
	}
}
