#!/usr/bin/env bash
# ci/gate.sh NEW [PREVIOUS] — the regression gate. Compares NEW with the
# baseline of the machine it was recorded on (`headspace baseline NEW`:
# results/baseline/<device>-<cpu>-<cores>c.txt) and, if given and present,
# with PREVIOUS (the last nightly's file). Exits 1 if either comparison
# finds a regression, 2 if a file cannot be read or the evidence is short
# (see `headspace compare -h`); prints both tables. When this machine has no
# baseline yet, it says so, records NEW as the baseline and exits 0: a
# baseline from another machine would gate the machine, not the code.
# BASELINE overrides the baseline's path, GATE_FLAGS adds compare flags.
set -euo pipefail
cd "$(dirname "$0")/.."
new=${1:?usage: ci/gate.sh NEW [PREVIOUS]}
prev=${2:-}
headspace=${HEADSPACE:-bin/headspace}
[ -x "$headspace" ] || go build -o "$headspace" ./cmd/headspace
baseline=${BASELINE:-$("$headspace" baseline "$new")}
status=0
if [ -f "$baseline" ]; then
  echo "== $new against the baseline $baseline"
  "$headspace" compare ${GATE_FLAGS:-} "$baseline" "$new" || status=$?
else
  mkdir -p "$(dirname "$baseline")"
  cp "$new" "$baseline"
  echo "== no baseline for this machine yet: recorded $new as $baseline (commit it to gate later runs on this machine)"
fi
if [ -n "$prev" ] && [ -f "$prev" ]; then
  echo "== $new against the previous run $prev"
  s=0; "$headspace" compare ${GATE_FLAGS:-} "$prev" "$new" || s=$?
  [ "$s" -gt "$status" ] && status=$s
fi
exit "$status"
