#!/usr/bin/env bash
# ci/gate.sh NEW [PREVIOUS] — the regression gate. Compares NEW with the
# baseline of the machine it was recorded on (`headspace baseline NEW`:
# results/baseline/<device>[-<gpu>]-<cpu>-<cores>c.txt) and, if given and
# present, with PREVIOUS (the last run). With HISTORY set to a history
# store (results/store), each comparison also requires a change to
# exceed 3 × its metric's spread between that machine's runs in the store
# (compare --history). Exits 1 if either comparison finds a regression, 2
# if a file cannot be read or the evidence is short (see `headspace
# compare -h`), 3 if the only finding is a rerun (a regression on runs
# that stayed disturbed), 0 if both pass; over the two comparisons the
# most telling exit wins, 1 before 2 before 3 before 0 (a rerun on one
# never hides a regression on the other); prints both tables. When this machine has no baseline: on
# a workstation it records NEW as the baseline, says so and exits 0 (a
# baseline from another machine would gate the machine, not the code); in
# CI (CI set, as GitHub Actions sets it) a checkout is thrown away after
# the job, so it exits 2 naming the file to commit.
# BASELINE overrides the baseline's path, GATE_FLAGS adds compare flags.
#
# The PR gate: with GATE_BASE set to a revision (the PR's base branch),
# ci/gate.sh OUTDIR runs the paired gate instead (ci/paired.sh GATE_BASE
# OUTDIR: base and this tree alternately in randomized rounds on this
# machine, a first alarm confirmed; exit 0 only when every verdict
# metric's interval excludes a slowdown beyond the threshold, 1 slower, 3
# rerun: not sure at the session's bound, or too few undisturbed rounds;
# 2 bad base).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${GATE_BASE:-}" ]; then
  exec ci/paired.sh "$GATE_BASE" "${1:?usage: GATE_BASE=REV ci/gate.sh OUTDIR}"
fi
new=${1:?usage: ci/gate.sh NEW [PREVIOUS]}
prev=${2:-}
headspace=${HEADSPACE:-bin/headspace}
[ -x "$headspace" ] || go build -o "$headspace" ./cmd/headspace
baseline=${BASELINE:-$("$headspace" baseline "$new")}
flags=(${GATE_FLAGS:-})
[ -n "${HISTORY:-}" ] && [ -d "$HISTORY" ] && flags+=(--history "$HISTORY")
# worst A B: the more telling of two exits, 1 before 2 before 3 before 0.
worst() {
  local a b
  for a in 1 2 3; do
    for b in "$1" "$2"; do [ "$b" = "$a" ] && { echo "$a"; return; }; done
  done
  [ "$1" = 0 ] && echo "$2" || echo "$1"
}
status=0
if [ -f "$baseline" ]; then
  echo "== $new against the baseline $baseline"
  "$headspace" compare "${flags[@]}" "$baseline" "$new" || status=$?
elif [ -n "${CI:-}" ]; then
  echo "== no committed baseline for this machine: $baseline is missing. Run the nightly's bench on it once and commit the file as $baseline (make baseline does)." >&2
  status=2
else
  mkdir -p "$(dirname "$baseline")"
  cp "$new" "$baseline"
  echo "== no baseline for this machine yet: recorded $new as $baseline (commit it to gate later runs on this machine)"
fi
if [ -n "$prev" ] && [ -f "$prev" ]; then
  echo "== $new against the previous run $prev"
  s=0; "$headspace" compare "${flags[@]}" "$prev" "$new" || s=$?
  status=$(worst "$status" "$s")
fi
exit "$status"
