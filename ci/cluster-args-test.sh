#!/usr/bin/env bash
# ci/cluster-args-test.sh — what the cluster scripts hand to Slurm and to
# headspace, with no Slurm and no cluster: ci/cluster-test.sh runs it
# first, and it runs alone anywhere with bash (issue 32, item 17).
#
# ci/slurm/sweep.sh runs against a fake sbatch on PATH that records its
# arguments and prints a job id: every spelling of the flags the tasks
# set (--shard, --out, --fresh; Go's flag package takes -out as --out) is
# refused, --throttle is checked with --tasks as without, and a % in the
# run directory reaches sbatch's --output as %% (sbatch expands %). The
# script of ci/k8s/merge.yaml runs under sh with a fake headspace: each
# shard file is one argument, whatever the run's name holds.
set -euo pipefail
cd "$(dirname "$0")/.."
fails=0
say() { echo "cluster-args-test: $*"; }
bad() { echo "cluster-args-test: FAIL: $*" >&2; fails=$((fails + 1)); }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/headspace-cluster-args.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/path"
# sbatch: each call's arguments, one per line, then a blank line.
cat >"$tmp/path/sbatch" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$@" >>"$SBATCH_LOG"
echo >>"$SBATCH_LOG"
echo "4242;cluster"
EOF
chmod +x "$tmp/path/sbatch"
printf '#!/bin/sh\nexit 0\n' >"$tmp/headspace"
chmod +x "$tmp/headspace"
export SBATCH_LOG=$tmp/sbatch.log
n=0

# sweep WANT_EXIT WANT_STDERR ARGS...: ci/slurm/sweep.sh with ARGS in a
# new run directory (ARGS may name it as RUN), exits WANT_EXIT and, when
# WANT_STDERR is not empty, says it on stderr; sbatch is called only on
# success.
sweep() {
  local want=$1 msg=$2 rc=0
  shift 2
  n=$((n + 1))
  run=$tmp/run-$n
  local args=("${@//RUN/$run}")
  : >"$SBATCH_LOG"
  PATH=$tmp/path:$PATH ci/slurm/sweep.sh --bin "$tmp/headspace" "${args[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ "$rc" != "$want" ]; then
    bad "sweep.sh ${args[*]}: exit $rc, want $want; stderr: $(cat "$tmp/err")"
  elif [ -n "$msg" ] && ! grep -qF -- "$msg" "$tmp/err"; then
    bad "sweep.sh ${args[*]}: stderr $(cat "$tmp/err"), want it to say '$msg'"
  elif [ "$want" != 0 ] && [ -s "$SBATCH_LOG" ]; then
    bad "sweep.sh ${args[*]} exited $rc but called sbatch"
  fi
}

# The flags the tasks set, in every spelling Go's flag package takes.
for f in --fresh -fresh --fresh=true -fresh=false --out -out -out=x.txt --out=x.txt --shard -shard=0/2; do
  sweep 2 "must not set $f" --run RUN --shards 2 -- ladder --count 6 "$f"
  [ ! -e "$run/command" ] || bad "sweep.sh with $f recorded a sweep"
done
# Their names as values, or after the flags' end, are not flags.
sweep 0 "" --run RUN --shards 2 -- ladder --levels none -- -out
sweep 0 "" --run RUN --shards 2 -- ladder --count 6 --workers 1,2
grep -qx -- '--array=0-1%2' "$SBATCH_LOG" || bad "a 2-shard sweep's array is not 0-1%2: $(tr '\n' ' ' <"$SBATCH_LOG")"
good=$run

# --throttle, with and without --tasks.
for t in 0 x -1 2%3; do
  sweep 2 "--throttle M: want a positive whole number, got '$t'" --run RUN --shards 2 --throttle "$t" -- ladder
  run=$good
  PATH=$tmp/path:$PATH ci/slurm/sweep.sh --bin "$tmp/headspace" --run "$run" --tasks 1 --throttle "$t" >"$tmp/out" 2>"$tmp/err" && rc=0 || rc=$?
  [ "$rc" = 2 ] && grep -qF "got '$t'" "$tmp/err" || bad "--tasks 1 --throttle $t: exit $rc, stderr $(cat "$tmp/err"); want 2"
done
: >"$SBATCH_LOG"
PATH=$tmp/path:$PATH ci/slurm/sweep.sh --bin "$tmp/headspace" --run "$good" --tasks 0,1 --throttle 1 >/dev/null 2>"$tmp/err" ||
  bad "--tasks 0,1 --throttle 1 failed: $(cat "$tmp/err")"
grep -qx -- '--array=0,1%1' "$SBATCH_LOG" || bad "--tasks 0,1 --throttle 1: array is not 0,1%1: $(tr '\n' ' ' <"$SBATCH_LOG")"

# A % in the run directory is written %% in --output; the directory
# itself is made as named.
pct=$tmp/100%a-%j
sweep 0 "" --run "$pct" --shards 3 -- ladder
esc=${pct//%/%%}
grep -qxF -- "--output=$esc/logs/shard-%a-%A.log" "$SBATCH_LOG" || bad "the array's --output does not escape the run's %: $(grep -- --output "$SBATCH_LOG")"
grep -qxF -- "--output=$esc/logs/merge-%j.log" "$SBATCH_LOG" || bad "the merge's --output does not escape the run's %: $(grep -- --output "$SBATCH_LOG")"
[ -f "$pct/command" ] || bad "the sweep in $pct was not recorded there"
sweep 2 "a backslash in the run directory" --run "$tmp/back\\slash" --shards 2 -- ladder

# ci/k8s/merge.yaml's script, under sh, with a fake headspace that lists
# its arguments one per line.
awk '/^ *args:$/ { getline; ind = match($0, /[^ ]/); on = 1; next }
     on && NF && match($0, /[^ ]/) <= ind { exit }
     on { print substr($0, ind + 2) }' ci/k8s/merge.yaml >"$tmp/merge.sh"
grep -q 'headspace merge' "$tmp/merge.sh" || bad "no merge script found in ci/k8s/merge.yaml: $(cat "$tmp/merge.sh")"
mkdir -p "$tmp/bin"
printf '#!/bin/sh\nfor a in "$@"; do echo "$a"; done >>"%s"\n' "$tmp/merge-args" >"$tmp/bin/headspace"
chmod +x "$tmp/bin/headspace"
PATH=$tmp/bin:$PATH RUN='night ly *' SHARDS=2 HISTORY= sh "$tmp/merge.sh" || bad "merge.yaml's script failed"
printf '%s\n' merge --out '/results/night ly */merged.txt' '/results/night ly */shard-0.txt' '/results/night ly */shard-1.txt' >"$tmp/want"
diff "$tmp/want" "$tmp/merge-args" >&2 || bad "merge.yaml's script split or globbed the shard files' paths"

[ "$fails" -eq 0 ] || { echo "cluster-args-test: $fails failure(s)" >&2; exit 1; }
say "PASS: sweep.sh's flags, --throttle and --output, and merge.yaml's arguments"
