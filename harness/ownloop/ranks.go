package ownloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/level"
)

// Ranks: a training command whose ranks are processes of their own, one
// per accelerator, started by torchrun (or python -m
// torch.distributed.run), by accelerate launch (which runs
// torch.distributed.run's launcher in its own process for its ranks) or
// by the script's own torch.multiprocessing.spawn. The hook runs in
// every rank (a launcher's ranks run `-m headspace_hook SCRIPT`, the
// launcher's own module option; a spawned rank runs the script's
// function under the hook's wrapper), tags its events with the rank's
// number, and wraps the rank's training loader with the same settings:
// every rank switches to cached batches at the same step, fixed up front
// (Settings.ReturnCachesAfter), so their collectives stay in lockstep.

// supportedLaunchers says what runs ranks under the hook, for the
// refusals of the others.
const supportedLaunchers = "headspace runs torchrun, python -m torch.distributed.run, accelerate launch, srun and scripts that start their ranks with torch.multiprocessing.spawn, on one node"

// torchrunFlags are torchrun's options that take no value.
var torchrunFlags = map[string]bool{"--standalone": true, "-m": true, "--module": true, "--no_python": true, "--no-python": true,
	"--run_path": true, "--run-path": true, "-h": true, "--help": true}

// parseTorchrun is c, a torchrun command line (c.Argv), parsed.
func parseTorchrun(c Command, base string) (Command, error) {
	path, err := exec.LookPath(c.Argv[0])
	if err != nil {
		return c, refusef("command %s not found", c.Argv[0])
	}
	c.Interpreter = path
	return parseLauncherArgs(c, base, c.Argv[1:])
}

// parseLauncherArgs reads a torchrun command's arguments after the
// launcher (its options, the script or -m module, the script's
// arguments) into c. It refuses what the hook cannot run: ranks on more
// than one node, --no-python (the script is not Python), --run-path (the
// script runs inside the launcher's own process).
func parseLauncherArgs(c Command, name string, args []string) (Command, error) {
	c.Launcher, c.Module, c.Script, c.Args = "torchrun", false, "", nil
	if strings.HasPrefix(name, "python") {
		c.Launcher = "torch.distributed.run"
	}
	var err error
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return script(c, a, args[i+1:])
		}
		opt, val, hasVal := strings.Cut(a, "=")
		switch {
		case opt == "-m" || opt == "--module":
			c.Module = true
			continue // replaced by the hook's -m
		case opt == "--no_python" || opt == "--no-python":
			return c, refusef("%s %s runs a program that is not Python: headspace's hook runs in Python ranks", name, opt)
		case opt == "--run_path" || opt == "--run-path":
			return c, refusef("%s %s runs the script inside the launcher's own process: leave it out", name, opt)
		case opt == "-h" || opt == "--help":
			return c, refusef("%s %s prints its help: give a training command", name, opt)
		}
		c.LauncherArgs = append(c.LauncherArgs, a)
		if !hasVal && !torchrunFlags[opt] {
			if val, i, err = nextValue(&c, name, opt, args, i); err != nil {
				return c, err
			}
		}
		switch opt {
		case "--nnodes":
			if !oneNode(val) {
				return c, refusef("%s --nnodes %s: ranks on more than one node are not supported this round: run the ranks of one node (--nnodes 1)", name, val)
			}
		case "--nproc_per_node", "--nproc-per-node":
			if n, err := strconv.Atoi(val); err == nil {
				if n < 1 {
					return c, refusef("%s %s %s: want at least 1", name, opt, val)
				}
				c.Procs = n
			}
		}
	}
	return c, refusef("%s with no script: give the command as %s [OPTIONS] SCRIPT [ARGS...]", name, name)
}

// oneNode says a torchrun --nnodes value (N or MIN:MAX) is one node.
func oneNode(v string) bool {
	lo, hi, ok := strings.Cut(v, ":")
	if !ok {
		hi = lo
	}
	return strings.TrimSpace(lo) == "1" && strings.TrimSpace(hi) == "1"
}

func unwrap(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// hookArgs are the arguments of the command's program that run it under
// the hook: INTERPRETER [OPTIONS] -m headspace_hook SCRIPT ARGS… for one
// process; for a launcher, its options, then -m headspace_hook and the
// script (or -m module) for each rank.
func hookArgs(cmd Command) []string {
	target := []string{"-m", HookModule}
	if cmd.Module {
		target = append(target, "-m")
	}
	target = append(append(target, cmd.Script), cmd.Args...)
	var args []string
	switch cmd.Launcher {
	case "torchrun", "accelerate launch":
		args = append(args, cmd.LauncherArgs...)
	case "torch.distributed.run":
		args = append(append(append(args, cmd.Options...), "-m", "torch.distributed.run"), cmd.LauncherArgs...)
	case "srun":
		args = append(append(append(args, cmd.LauncherArgs...), cmd.Python), cmd.Options...)
	default:
		args = append(args, cmd.Options...)
	}
	return append(args, target...)
}

// rankEvent is what a rank says of itself: its number, the world, its pid.
type rankEvent struct {
	Rank       int `json:"rank"`
	World      int `json:"world"`
	LocalWorld int `json:"local_world"`
	PID        int `json:"pid"`
	N          int `json:"n"`
}

// rankOf is the run of rank r, made as its first line comes.
func (r *Run) rankOf(rank int) (*Run, error) {
	if rank < 0 || rank > 1<<16 {
		return nil, fmt.Errorf("hook event of rank %d: out of range", rank)
	}
	for len(r.Ranks) <= rank {
		r.Ranks = append(r.Ranks, nil)
	}
	if r.Ranks[rank] == nil {
		r.Ranks[rank] = &Run{Rank: rank}
	}
	return r.Ranks[rank], nil
}

// applyRank adds a line of rank `rank` to its run, and keeps what the
// node's run knows of its ranks: how many, their pids, whether every
// one has its steps.
func (r *Run) applyRank(rank int, e event, line []byte) (string, string, error) {
	rr, err := r.rankOf(rank)
	if err != nil {
		return "", "", err
	}
	kind, msg, err := rr.applyEvent(e, line)
	if err != nil {
		return kind, msg, err
	}
	switch kind {
	case "rank":
		var re rankEvent
		if err := json.Unmarshal(line, &re); err != nil {
			return kind, msg, fmt.Errorf("hook event %q: %w", line, err)
		}
		r.World = max(r.World, re.LocalWorld)
		rr.PID = re.PID
	case "start":
		if r.Start.Python == "" || rank == 0 {
			r.Start = rr.Start
		}
	case "raised":
		rr.Raised = msg
	case "done":
		r.Done = r.ranksDone()
	}
	return kind, msg, nil
}

// ranksDone says every rank of the node has its steps.
func (r *Run) ranksDone() bool {
	if r.World == 0 || len(r.Ranks) < r.World {
		return false
	}
	for _, rr := range r.Ranks {
		if rr == nil || !rr.Done {
			return false
		}
	}
	return true
}

// fewestSteps is the steps of the rank that has the fewest (a node's
// run), or of the run itself.
func (r *Run) fewestSteps() int {
	if len(r.Ranks) == 0 {
		return len(r.Steps)
	}
	n := -1
	for _, rr := range r.Ranks {
		if rr == nil {
			return 0
		}
		if n < 0 || len(rr.Steps) < n {
			n = len(rr.Steps)
		}
	}
	return max(n, 0)
}

// RanksFailed is a node whose rank failed: the rank, what it raised (its
// traceback went to the command's output), the steps it had measured.
type RanksFailed struct {
	Rank   int
	Msg    string
	Steps  int
	Status string
}

func (e *RanksFailed) Error() string {
	s := fmt.Sprintf("rank %d failed after %d steps", e.Rank, e.Steps)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Status != "" {
		s += " (" + e.Status + ")"
	}
	return s + "; its traceback is above"
}

// RanksHung is a node whose ranks stopped stepping for Bound: a rank that
// hangs (in its own code, or in a collective another rank never joins).
// Stuck names the ranks that hold the others: those with the fewest
// steps, or where every rank has as many, those not waiting in
// torch.distributed; Where says each rank's innermost Python frame (from
// its stacks on SIGUSR1), Steps each rank's steps.
type RanksHung struct {
	Bound time.Duration
	Stuck []int
	Steps []int
	Where []string
}

func (e *RanksHung) Error() string {
	var parts []string
	for r, n := range e.Steps {
		p := fmt.Sprintf("rank %d at step %d", r, n)
		if r < len(e.Where) && e.Where[r] != "" {
			p += " in " + e.Where[r]
		}
		parts = append(parts, p)
	}
	who := "a rank"
	if len(e.Stuck) > 0 {
		var rs []string
		for _, r := range e.Stuck {
			rs = append(rs, strconv.Itoa(r))
		}
		who = "rank " + strings.Join(rs, ", ")
	}
	return fmt.Sprintf("the ranks made no step for --first-batch-timeout %v: %s hangs, the others wait for it in their collectives (%s)", e.Bound, who, strings.Join(parts, "; "))
}

// hungRanks names the ranks that hold the node up: those behind the
// others by their steps, else those whose innermost frame is not in a
// collective (torch.distributed, or the autograd engine that runs DDP's
// all-reduce).
func hungRanks(steps []int, where []string) []int {
	lo := slices.Min(steps)
	var behind []int
	for r, n := range steps {
		if n == lo {
			behind = append(behind, r)
		}
	}
	if len(behind) < len(steps) {
		return behind
	}
	var out []int
	for r := range steps {
		if r < len(where) && where[r] != "" && !inCollective(where[r]) {
			out = append(out, r)
		}
	}
	return out
}

// inCollective says a frame (file:line in function) is torch's:
// torch.distributed's collectives, or the autograd engine (DDP).
func inCollective(frame string) bool {
	for _, p := range []string{"distributed_c10d", "torch/distributed/", "torch/autograd/", "torch/nn/parallel/"} {
		if strings.Contains(frame, p) {
			return true
		}
	}
	return false
}

// innermostFrame is the innermost frame of the main thread in a Python
// stack dump (faulthandler's: a block a thread, `  File "…", line N in f`
// lines, the most recent call first; the main thread's outermost frame is
// the script's <module> or runpy's _run_module_as_main, a thread's
// threading's _bootstrap), as file:line in f; "" where the dump holds no
// whole main thread's block: one still being written (faulthandler
// writes thread by thread, the newest thread first, and a dump read in
// the middle holds another thread's frames, such as a loader's queue
// feeder, where the main thread's should be), or none at all. A block
// cut at faulthandler's depth (its last line "  ...") is a deep stack's,
// written whole: the main thread's where no block ends in its outermost
// frame.
func innermostFrame(dump string) string {
	deep := ""
	for _, b := range strings.Split(dump, "\n\n") {
		var frames []string
		for _, l := range strings.Split(b, "\n") {
			if f := frameOf(l); f != "" {
				frames = append(frames, f)
			}
		}
		if len(frames) == 0 {
			continue
		}
		outer := frames[len(frames)-1]
		if strings.HasSuffix(outer, " in <module>") || strings.HasSuffix(outer, " in _run_module_as_main") {
			return frames[0]
		}
		if deep == "" && strings.TrimSpace(b[strings.LastIndex(strings.TrimRight(b, "\n"), "\n")+1:]) == "..." {
			deep = frames[0]
		}
	}
	return deep
}

// frameOf reads `  File "PATH", line N in FUNC` as PATH:N in FUNC.
func frameOf(line string) string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, `File "`) {
		return ""
	}
	rest := strings.TrimPrefix(line, `File "`)
	path, rest, ok := strings.Cut(rest, `", line `)
	if !ok {
		return ""
	}
	num, fn, _ := strings.Cut(rest, " in ")
	return fmt.Sprintf("%s:%s in %s", path, strings.TrimSpace(num), strings.TrimSpace(fn))
}

// lead is the run that speaks for a node's run: rank 0's (the first
// rank's that reported), or the run itself for one process.
func (r *Run) lead() *Run {
	for _, rr := range r.Ranks {
		if rr != nil {
			return rr
		}
	}
	return r
}

// nodePoint is a ladder point of a run: for a node's, the slowest
// rank's (the ranks step together, at the pace of the slowest), From
// the node's run.
func nodePoint(run *Run, s Settings, l level.Level, r int) (LadderPoint, error) {
	if len(run.Ranks) == 0 {
		return point(run, s, l, r)
	}
	var slow LadderPoint
	for i, rr := range run.Ranks {
		if rr == nil {
			return slow, fmt.Errorf("rank %d reported nothing", i)
		}
		p, err := point(rr, s, l, r)
		if err != nil {
			return p, fmt.Errorf("rank %d: %w", i, err)
		}
		if p.StepTime > slow.StepTime {
			slow = p
		}
	}
	slow.From = run // the node's: its command config names the launcher and the ranks
	return slow, nil
}

// accelerateFlags are accelerate launch's options that take no value
// (accelerate 1.x's parser).
var accelerateFlags = map[string]bool{
	"--cpu": true, "--debug": true, "--downcast-bf16": true, "--downcast_bf16": true, "--dynamo-use-dynamic": true,
	"--dynamo_use_dynamic": true, "--dynamo-use-fullgraph": true, "--dynamo_use_fullgraph": true,
	"--dynamo-use-regional-compilation": true, "--dynamo_use_regional_compilation": true, "--enable-cpu-affinity": true,
	"--enable_cpu_affinity": true, "--fp8-use-autocast-during-eval": true, "--fp8_use_autocast_during_eval": true,
	"--multi-gpu": true, "--multi_gpu": true, "--quiet": true, "-q": true, "--same-network": true, "--same_network": true,
	"--use-fsdp": true, "--use_fsdp": true, "--use-megatron-lm": true, "--use_megatron_lm": true,
	"--use-parallelism-config": true, "--use_parallelism_config": true,
	// Refused below, but flags all the same.
	"--tpu": true, "--tpu-cluster": true, "--tpu_cluster": true, "--no-tpu-cluster": true, "--no_tpu_cluster": true,
	"--tpu-use-sudo": true, "--tpu_use_sudo": true, "--use-deepspeed": true, "--use_deepspeed": true,
	"--no-python": true, "--no_python": true, "-m": true, "--module": true, "-h": true, "--help": true,
}

// parseAccelerate is c, an accelerate launch command line (accelerate
// launch …, or accelerate-launch …), parsed. Its ranks are the ranks of
// torch.distributed.run, which accelerate launch runs in its own process
// for --multi_gpu and --use_fsdp (on the CPU too, with a script's
// Accelerator(cpu=True)); without them it runs the script as one
// process, measured as one. It refuses the launchers accelerate hands
// over to (DeepSpeed's, mpirun, a TPU's), more than one machine, and a
// program that is not Python.
func parseAccelerate(c Command, base string) (Command, error) {
	c, name, args, err := accelerateLaunch(c, base)
	if err != nil {
		return c, err
	}
	path, err := exec.LookPath(c.Argv[0])
	if err != nil {
		return c, refusef("command %s not found", c.Argv[0])
	}
	c.Interpreter, c.Launcher = path, "accelerate launch"
	ranks := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			if !ranks {
				c.Procs = 0 // one process: the hook learns it is one
			}
			return script(c, a, args[i+1:])
		}
		opt, val, hasVal := strings.Cut(a, "=")
		switch opt {
		case "-m", "--module":
			c.Module = true
			continue // replaced by the hook's -m
		case "--no_python", "--no-python":
			return c, refusef("%s %s runs a program that is not Python: headspace's hook runs in Python ranks", name, opt)
		case "--use_deepspeed", "--use-deepspeed":
			return c, refusef("%s %s starts its ranks with DeepSpeed's launcher, which headspace does not run: %s", name, opt, supportedLaunchers)
		case "--tpu", "--tpu-cluster", "--tpu_cluster", "--tpu-use-sudo", "--tpu_use_sudo":
			return c, refusef("%s %s runs on TPUs, which headspace does not measure: %s", name, opt, supportedLaunchers)
		case "-h", "--help":
			return c, refusef("%s %s prints its help: give a training command", name, opt)
		}
		c.LauncherArgs = append(c.LauncherArgs, a)
		if !hasVal && !accelerateFlags[opt] {
			if val, i, err = nextValue(&c, name, opt, args, i); err != nil {
				return c, err
			}
		}
		switch opt {
		case "--multi_gpu", "--multi-gpu", "--use_fsdp", "--use-fsdp", "--use_megatron_lm", "--use-megatron-lm":
			ranks = true
		case "--num_machines", "--num-machines":
			if strings.TrimSpace(val) != "1" {
				return c, refusef("%s %s %s: ranks on more than one node are not supported this round: run the ranks of one node (%s 1)", name, opt, val, opt)
			}
		case "--mpirun_hostfile", "--mpirun-hostfile":
			return c, refusef("%s %s starts its ranks with mpirun, which headspace does not run: %s", name, opt, supportedLaunchers)
		case "--num_processes", "--num-processes":
			if n, err := strconv.Atoi(val); err == nil {
				if n < 1 {
					return c, refusef("%s %s %s: want at least 1", name, opt, val)
				}
				c.Procs = n
			}
		}
	}
	return c, refusef("%s with no script: give the command as %s [OPTIONS] SCRIPT [ARGS...]", name, name)
}

// accelerateLaunch reads the launch sub-command of c, an accelerate
// command line (accelerate-launch has none): it returns the launcher's
// name, as refusals name it, and the arguments after it.
func accelerateLaunch(c Command, base string) (Command, string, []string, error) {
	args := c.Argv[1:]
	if base != "accelerate" {
		return c, base, args, nil
	}
	if len(args) == 0 || args[0] != "launch" {
		sub := "with no command"
		if len(args) > 0 {
			sub = args[0]
		}
		return c, "", nil, refusef("accelerate %s is not a launcher: give the training command as accelerate launch [OPTIONS] SCRIPT [ARGS...]", sub)
	}
	c.LauncherArgs = []string{"launch"}
	return c, "accelerate launch", args[1:], nil
}

// nextValue is the value of the launcher option opt at args[i]: the
// argument after it, added to c.LauncherArgs. It returns the value's
// index.
func nextValue(c *Command, name, opt string, args []string, i int) (string, int, error) {
	if i+1 >= len(args) {
		return "", i, refusef("%s %s needs a value", name, opt)
	}
	c.LauncherArgs = append(c.LauncherArgs, args[i+1])
	return args[i+1], i + 1, nil
}

// srunFlags are srun's options that take no value (those whose value is
// optional take it only as --opt=VALUE).
var srunFlags = map[string]bool{
	"-X": true, "--disable-status": true, "-H": true, "--hold": true, "-I": true, "--immediate": true, "-K": true, "--kill-on-bad-exit": true,
	"-k": true, "--no-kill": true, "-l": true, "--label": true, "-Z": true, "--no-allocate": true, "-O": true, "--overcommit": true,
	"-s": true, "--oversubscribe": true, "-E": true, "--preserve-env": true, "-Q": true, "--quiet": true, "-u": true, "--unbuffered": true,
	"-v": true, "--verbose": true, "--bcast": true, "--compress": true, "--contiguous": true, "--exact": true, "--exclusive": true,
	"--nice": true, "--overlap": true, "--propagate": true, "--pty": true, "--quit-on-interrupt": true, "--reboot": true,
	"--resv-ports": true, "--send-libs": true, "--spread-job": true, "--use-min-nodes": true, "--x11": true, "--whole": true,
	// Refused below, but flags all the same.
	"--multi-prog": true, "--test-only": true, "-h": true, "--help": true, "--usage": true, "-V": true, "--version": true,
}

// srunShort are srun's one-letter options that take a value, which may
// follow in the same argument (-n2).
var srunShort = "ADMSbCcdemexBGiJLFwNnoprqTtW"

// parseSrun is c, an srun command line on one node, parsed: srun's
// options, then a Python interpreter, its options, and the script (or
// -m module). Each task srun starts is a rank (SLURM_PROCID), run under
// the hook. It refuses steps on more than one node, a program that is not
// Python (a launcher under srun included), --multi-prog, and --export
// without ALL (the hook's environment must reach the tasks).
func parseSrun(c Command) (Command, error) {
	path, err := exec.LookPath(c.Argv[0])
	if err != nil {
		return c, refusef("command %s not found", c.Argv[0])
	}
	c.Interpreter, c.Launcher = path, "srun"
	args := c.Argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return srunProgram(c, args[i:])
		}
		if a == "--" {
			return srunProgram(c, args[i+1:])
		}
		opt, val, hasVal := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") && len(a) > 2 {
			if strings.ContainsRune(srunShort, rune(a[1])) {
				opt, val, hasVal = a[:2], a[2:], true // -n2
			} else {
				opt, hasVal = a, true // flags together: -lu
			}
		}
		switch opt {
		case "--multi-prog":
			return c, refusef("srun --multi-prog runs a program of its own in each task: give one Python training command, srun [OPTIONS] python SCRIPT")
		case "--test-only", "-h", "--help", "--usage", "-V", "--version":
			return c, refusef("srun %s runs no training: give a training command", opt)
		}
		c.LauncherArgs = append(c.LauncherArgs, a)
		if !hasVal && !srunFlags[opt] {
			if val, i, err = nextValue(&c, "srun", opt, args, i); err != nil {
				return c, err
			}
		}
		switch opt {
		case "-N", "--nodes":
			if lo, hi, ok := strings.Cut(val, "-"); strings.TrimSpace(lo) != "1" || ok && strings.TrimSpace(hi) != "1" {
				return c, refusef("srun %s %s: ranks on more than one node are not supported this round: run the ranks of one node (srun --nodes 1)", opt, val)
			}
		case "-w", "--nodelist":
			if strings.ContainsAny(val, ",[/") {
				return c, refusef("srun %s %s: ranks on more than one node are not supported this round: name one node", opt, val)
			}
		case "--export":
			if v := strings.ToUpper(val); v != "ALL" && !strings.HasPrefix(v, "ALL,") {
				return c, refusef("srun --export=%s: the tasks would not see headspace's hook in their environment: leave --export out, or begin it with ALL,", val)
			}
		case "-n", "--ntasks":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return c, refusef("srun %s %s: want a number of tasks, at least 1", opt, val)
			}
			c.Procs = n
		}
	}
	return c, refusef("srun with no program: give the command as srun [OPTIONS] python SCRIPT [ARGS...]")
}

// srunProgram reads the program srun runs in each task into c: a Python
// training command (ParseCommand's), not a launcher.
func srunProgram(c Command, argv []string) (Command, error) {
	if len(argv) == 0 {
		return c, refusef("srun with no program: give the command as srun [OPTIONS] python SCRIPT [ARGS...]")
	}
	p, err := ParseCommand(argv)
	if err != nil {
		return c, err
	}
	if p.Launcher != "" {
		return c, refusef("srun %s: a launcher in each task starts ranks of its own; give srun's tasks the script (srun --ntasks N python SCRIPT), or run %s without srun", argv[0], p.Launcher)
	}
	c.Python, c.Options, c.Module, c.Script, c.Args = p.Interpreter, p.Options, p.Module, p.Script, p.Args
	return c, nil
}
