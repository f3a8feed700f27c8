#!/usr/bin/env bash
# ci/cluster-test.sh — `make cluster-test`: a real single-node Slurm on
# this machine runs a sweep as a 3-task array through ci/slurm/sweep.sh,
# with the merge job after it, and the merged file must hold the same
# points and settings as a single-process run of the same sweep.
#
# Debian's slurm-wlm and munge are installed where missing (ci/deps.sh).
# munged, slurmctld and slurmd run in the foreground as background jobs
# of this script, on free ports, with a minimal slurm.conf and every
# state, spool, socket and log file under one temporary directory; the
# trap stops them by their pids and removes the directory, whatever
# happens. One task fails on purpose first (its --out is no results
# file): the merge job is cancelled, the task is resubmitted alone with
# --tasks, and a new merge job merges all three shards and adds the
# result to a history store in the temporary directory (headspace history
# add); the test checks both.
#
# ci/cluster-args-test.sh runs first: the scripts' arguments, checked
# against a fake sbatch and a fake headspace.
#
# Environment: HEADSPACE (default bin/headspace, built by make),
# CLUSTER_TIMEOUT (seconds to wait for the jobs; default 300).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${HEADSPACE:-bin/headspace}
timeout=${CLUSTER_TIMEOUT:-300}
start=$(date +%s)
say() { echo "cluster-test: $*"; }
fail() { echo "cluster-test: FAIL: $*" >&2; exit 1; }

# What the scripts hand to sbatch and headspace, with fakes: no Slurm needed.
ci/cluster-args-test.sh || fail "ci/cluster-args-test.sh"
ci/deps.sh slurm-wlm munge
[ -x "$bin" ] || fail "$bin is missing (make build)"
bin=$(pwd)/$bin

tmp=$(mktemp -d "${TMPDIR:-/tmp}/headspace-cluster.XXXXXX")
chmod 755 "$tmp" # slurmd's job steps read the run directory
pids=()
cleanup() {
  local rc=$?
  # Stop the daemons by pid, newest first, then wait for them.
  for ((k = ${#pids[@]} - 1; k >= 0; k--)); do kill "${pids[k]}" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [ $rc -ne 0 ]; then
    for f in "$tmp"/munge/munged.log "$tmp"/slurmctld.log "$tmp"/slurmd.log "$tmp"/run/sweep/logs/*; do
      [ -f "$f" ] && { echo "--- $f (last lines)"; tail -n 15 "$f"; }
    done >&2
  fi
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free TCP port: one nothing on this machine answers on.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  fail "no free port found"
}
ctld_port=$(free_port)
slurmd_port=$(free_port)
[ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$((ctld_port + 1))

# munge: its own key, socket, pid and log under $tmp.
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/run"
chmod 700 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
sock=$tmp/munge/munge.sock
munged -F --force --key-file "$tmp/munge/munge.key" --socket "$sock" \
  --pid-file "$tmp/munge/munged.pid" --log-file "$tmp/munge/munged.log" \
  --seed-file "$tmp/munge/munged.seed" >"$tmp/munge/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "munged did not start (see $tmp/munge/munged.log)"

host=$(hostname -s)
cpus=$(nproc)
conf=$tmp/slurm.conf
cat >"$conf" <<EOF
ClusterName=headspace-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf
slurmctld -D -i -f "$conf" >"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$conf" >"$tmp/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  state=$(sinfo -h -N -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || fail "the node is not idle after 20 s (sinfo says '$state')"
say "slurmctld, slurmd and munged up on ports $ctld_port/$slurmd_port ($(( $(date +%s) - start )) s)"

# The sweep: a tiny ladder of 5 points, 2 runs each, in 3 shards.
sweep=(ladder --workers 1 --transforms fast --levels none,raw,sample,host,device --raw-size 48 --crop 16
  --batch 4 --step 2ms --steps 2 --warmup 1 --count 2)
hist=(--history "$tmp/history")
run=$tmp/run/sweep
mkdir -p "$run"
printf 'not a results file\n' >"$run/shard-1.txt" # task 1 fails: its --out is refused
ci/slurm/sweep.sh --run "$run" --shards 3 --throttle 2 --bin "$bin" "${hist[@]}" -- "${sweep[@]}"

# wait_for FILE: until the file exists, or the timeout.
wait_for() {
  while [ ! -e "$1" ]; do
    [ $(($(date +%s) - start)) -lt "$timeout" ] || fail "timed out after $timeout s waiting for $1"
    sleep 0.5
  done
}
for i in 0 1 2; do wait_for "$run/status/shard-$i.exit"; done
[ "$(cat "$run/status/shard-0.exit")" = 0 ] && [ "$(cat "$run/status/shard-2.exit")" = 0 ] || fail "tasks 0 and 2 did not succeed"
[ "$(cat "$run/status/shard-1.exit")" != 0 ] || fail "task 1 succeeded over a file that is no results file"
grep -q "not a results file" "$run"/logs/shard-1-*.log || fail "task 1's log does not say why it failed"
merge1=$(cat "$run/status/merge-job")
while squeue -h -j "$merge1" 2>/dev/null | grep -q .; do
  [ $(($(date +%s) - start)) -lt "$timeout" ] || fail "timed out: merge job $merge1 still queued after a task failed"
  sleep 0.5
done
[ ! -e "$run/status/merge.exit" ] || fail "the merge job ran although task 1 failed"
say "task 1 failed as it should, merge job $merge1 was cancelled; resubmitting task 1 alone"

rm "$run/shard-1.txt"
ci/slurm/sweep.sh --run "$run" --tasks 1 --bin "$bin" "${hist[@]}"
wait_for "$run/status/merge.exit"
[ "$(cat "$run/status/merge.exit")" = 0 ] || fail "the merge job failed (exit $(cat "$run/status/merge.exit"))"
[ "$(cat "$run/status/shard-1.exit")" = 0 ] || fail "the resubmitted task 1 failed"
[ "$(wc -l <"$run/status/tasks.log")" -eq 4 ] || fail "status/tasks.log holds $(wc -l <"$run/status/tasks.log") lines, want 4 (3 tasks and a retry)"
ls "$run"/logs/shard-1-*.log | wc -l | grep -qx 2 || fail "task 1's two attempts did not keep two logs"

# The same sweep in one process, then: the same points (names and runs of
# each, in order) and the same configuration lines, but for those that
# describe the session, not the setup (resultfile.SessionKeys: machine-busy,
# date, elapsed), which a busy machine sets in one run and not another.
"$bin" "${sweep[@]}" --out "$tmp/single.txt" >/dev/null 2>"$tmp/single.log" || fail "the single-process run failed: $(tail -n 3 "$tmp/single.log")"
points() { grep '^Benchmark' "$1" | awk '{print $1}'; }
config() { sed -n '/^Benchmark/q;/^[a-z][^ ]*: /p' "$1" | grep -Ev '^(machine-busy|date|elapsed): ' || true; }
diff <(points "$tmp/single.txt") <(points "$run/merged.txt") >&2 || fail "the merged file's points differ from the single-process run's"
diff <(config "$tmp/single.txt") <(config "$run/merged.txt") >&2 || fail "the merged file's settings differ from the single-process run's"
n=$(points "$run/merged.txt" | wc -l)
[ "$n" -eq 10 ] || fail "the merged file holds $n results, want 10 (5 points x 2 runs)"
[ -n "$(find "$tmp/history" -type f -name '*.txt' 2>/dev/null)" ] || fail "the merge job did not add the merged file to the history"
"$bin" history report --store "$tmp/history" --format text >/dev/null || fail "history report cannot read the store the merge job added to"
say "the merged file is in the history"
say "PASS: 3 array tasks (one retried alone), merged $n results equal in points and settings to a single-process run, in $(( $(date +%s) - start )) s"
