#!/usr/bin/env bash
# ci/slurm/sweep.sh — runs a headspace sweep on Slurm as a job array, one
# shard per task, then a dependent job that merges the shards and adds the
# result to the history. docs/cluster.md is the guide.
#
#   ci/slurm/sweep.sh --run DIR --shards N [options] -- COMMAND [FLAGS...]
#       submits the array (tasks 0..N-1) and the merge job.
#   ci/slurm/sweep.sh --run DIR --tasks 1,3 [options]
#       resubmits those tasks alone (each resumes its shard file: --shard
#       keeps what a failed task finished) and a new merge job after them.
#
# COMMAND [FLAGS...] is a sweep that takes --shard and --out, which it must
# not set itself (nor --fresh: a resubmitted task resumes its shard), e.g.
# `ladder --workers 4,8 --placement host,device --count 6`; task i runs
#   headspace COMMAND FLAGS... --shard i/N --out DIR/shard-i.txt
# N comes from --shards, not from SLURM_ARRAY_TASK_COUNT, which is 1 in a
# resubmitted task.
#
# Options:
#   --run DIR          run directory on a filesystem every node mounts
#                      (shard files, logs/, status/, merged.txt)
#   --shards N         number of shards (array tasks)
#   --throttle M       at most M tasks at once (--array=0-N-1%M; default N)
#   --partition P      Slurm partition (one GPU kind per partition)
#   --gpu              request one GPU per task (--gres=gpu:1)
#   --time T           time limit of each task (sbatch --time)
#   --bin PATH         the headspace binary every node can run
#                      (default: bin/headspace of this checkout)
#   --history DIR      history store the merged file is added to
#                      (default: $HISTORY; none when both are empty)
#   --sbatch ARG       one more sbatch argument for every job (repeatable)
#
# It prints the array's and the merge job's ids. Each task's log is
# logs/shard-<i>-<array job id>.log (a resubmitted task keeps its earlier
# logs), its exit status status/shard-<i>.exit and a line in
# status/tasks.log; the merge job's in logs/merge-<id>.log and
# status/merge.exit. A failed task cancels the pending merge job
# (--kill-on-invalid-dep): resubmit the failed tasks with --tasks.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
run= shards= throttle= partition= gpu= time_limit= tasks=
bin=$here/../../bin/headspace
history=${HISTORY:-}
extra=()
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit "${1:-2}"; }
die() { echo "ci/slurm/sweep.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --run) run=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --throttle) throttle=$2; shift 2 ;;
    --partition) partition=$2; shift 2 ;;
    --gpu) gpu=1; shift ;;
    --time) time_limit=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --history) history=$2; shift 2 ;;
    --sbatch) extra+=("$2"); shift 2 ;;
    -h|--help) usage 0 ;;
    --) shift; break ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -n "$run" ] || die "--run DIR is required"
# sbatch's --output is a filename pattern: a backslash in it turns off
# every replacement (%a, %A), so the tasks would share one log.
case $run in *\\*) die "--run $run: a backslash in the run directory would turn off Slurm's %a/%A in the log names; use another directory" ;; esac
[ -z "$throttle" ] || [[ $throttle =~ ^[1-9][0-9]*$ ]] || die "--throttle M: want a positive whole number, got '$throttle'"
command -v sbatch >/dev/null || die "sbatch not found: run this on a Slurm submit host"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
[ -x "$bin" ] || die "$bin is not an executable headspace binary (make build, or --bin)"
mkdir -p "$run/logs" "$run/status"
run=$(cd "$run" && pwd)

if [ -z "$tasks" ]; then
  # A new sweep: record its command and shards for the tasks, the merge
  # and any resubmission.
  [ $# -gt 0 ] || die "no sweep: want -- COMMAND [FLAGS...]"
  [[ $shards =~ ^[1-9][0-9]*$ ]] || die "--shards N: want a positive whole number, got '$shards'"
  # Go's flag package takes -name as --name, and -name=value: refuse every
  # spelling of the flags the tasks set, and of --fresh, which would make a
  # resubmitted task throw away the points its shard file holds.
  for a in "$@"; do
    [ "$a" != -- ] || break # the flags end there
    case $a in -*) ;; *) continue ;; esac
    name=${a#-}
    name=${name#-}
    name=${name%%=*}
    case $name in shard|out|fresh) die "the sweep's flags must not set $a: the tasks set --shard and --out, and resume their shard files" ;; esac
  done
  [ ! -e "$run/command" ] || die "$run already holds a sweep ($run/command): use another --run, or --tasks to resubmit"
  printf '%s\0' "$@" >"$run/command"
  echo "$shards" >"$run/shards"
  array="0-$((shards - 1))%${throttle:-$shards}"
else
  [ -f "$run/command" ] && [ -f "$run/shards" ] || die "$run holds no sweep to resubmit tasks of"
  [ $# -eq 0 ] || die "--tasks resubmits the recorded sweep: give no command"
  [ -z "$shards" ] || [ "$shards" = "$(cat "$run/shards")" ] || die "--shards $shards: the sweep in $run has $(cat "$run/shards")"
  shards=$(cat "$run/shards")
  IFS=, read -ra list <<<"$tasks"
  for t in "${list[@]}"; do
    [[ $t =~ ^[0-9]+$ ]] && [ "$t" -lt "$shards" ] || die "--tasks: $t is not a task of 0..$((shards - 1))"
  done
  array=$tasks
  [ -z "$throttle" ] || array="$array%$throttle"
fi

opts=(--parsable --kill-on-invalid-dep=yes "${extra[@]}")
[ -z "$partition" ] || opts+=(--partition="$partition")
[ -z "$time_limit" ] || opts+=(--time="$time_limit")
task_opts=()
[ -z "$gpu" ] || task_opts+=(--gres=gpu:1)
export HEADSPACE_RUN=$run HEADSPACE_SHARDS=$shards HEADSPACE_BIN=$bin HEADSPACE_HISTORY=$history
# sbatch expands % in --output: the run directory's own are written %%.
logs=${run//%/%%}/logs
array_id=$(sbatch "${opts[@]}" "${task_opts[@]}" --job-name=headspace-shard --array="$array" \
  --output="$logs/shard-%a-%A.log" --export=ALL "$here/shard.sbatch")
array_id=${array_id%%;*}
merge_id=$(sbatch "${opts[@]}" --job-name=headspace-merge --dependency=afterok:"$array_id" \
  --output="$logs/merge-%j.log" --export=ALL "$here/merge.sbatch")
merge_id=${merge_id%%;*}
echo "$array_id" >>"$run/status/array-jobs"
echo "$merge_id" >"$run/status/merge-job"
rm -f "$run/status/merge.exit"
echo "array job $array_id (tasks $array), merge job $merge_id after it; run directory $run"
