#!/usr/bin/env bash
# ci/gate.sh NEW [PREVIOUS] — the regression gate. Compares NEW with the
# baseline of its device (results/baseline/<device>.txt, the device read from
# NEW's "device:" line) and, if given and present, with PREVIOUS (the last
# nightly's file). Exits 1 if either comparison finds a regression, 2 if a
# file cannot be read; prints both tables.
set -euo pipefail
cd "$(dirname "$0")/.."
new=${1:?usage: ci/gate.sh NEW [PREVIOUS]}
prev=${2:-}
headspace=${HEADSPACE:-bin/headspace}
[ -x "$headspace" ] || go build -o "$headspace" ./cmd/headspace
device=$(sed -n 's/^device: //p' "$new" | head -n 1)
[ -n "$device" ] || { echo "ci/gate.sh: $new has no 'device:' line" >&2; exit 2; }
slug=$(printf '%s' "$device" | tr -c 'A-Za-z0-9._-' '-' | sed 's/-*$//')
baseline=${BASELINE:-results/baseline/$slug.txt}
status=0
if [ -f "$baseline" ]; then
  echo "== $new against the baseline $baseline"
  "$headspace" compare ${GATE_FLAGS:-} "$baseline" "$new" || status=$?
else
  echo "== no baseline for device '$device' ($baseline): record one with 'make baseline DEVICE=...'"
fi
if [ -n "$prev" ] && [ -f "$prev" ]; then
  echo "== $new against the previous run $prev"
  s=0; "$headspace" compare ${GATE_FLAGS:-} "$prev" "$new" || s=$?
  [ "$s" -gt "$status" ] && status=$s
fi
exit "$status"
