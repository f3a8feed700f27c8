#!/usr/bin/env bash
# ci/paired.sh BASE OUTDIR — the paired regression gate: `headspace gate`
# builds BASE (a commit, branch or tag) in a temporary worktree and this
# tree, and runs the ladder sweep with each alternately in randomized
# rounds on this machine, deciding on per-round ratios (docs/gate.md).
# The sweep is the Makefile's: DEVICE, BENCH_LEVELS, BENCH_WORKERS,
# BENCH_TRANSFORMS, BENCH_STEPS, BENCH_FLAGS (BENCH_COUNT is the gate's:
# one run of each point per side per round). PAIRED_FLAGS adds gate
# flags (--rounds, --confirm, --threshold, --quiet-wait, --head-tags).
# OUTDIR gets base.txt, head.txt (both sides' runs, one per round) and
# gate.txt (the report). Exits as `headspace gate`: 0 pass (every verdict
# metric's interval excludes a slowdown beyond the threshold), 1 slower
# (confirmed), 2 bad input (BASE no commit, a build failing), 3 rerun
# (not sure at the session's bound --max-rounds, or too few undisturbed
# rounds: no pass without evidence), 130 interrupted.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: ci/paired.sh BASE OUTDIR}
out=${2:?usage: ci/paired.sh BASE OUTDIR}
hs=${HEADSPACE:-bin/headspace}
[ -x "$hs" ] || go build -o "$hs" ./cmd/headspace
sweep=(--device "${DEVICE:-emulated}")
[ -n "${BENCH_LEVELS:-}" ] && sweep+=(--levels "$BENCH_LEVELS")
[ -n "${BENCH_WORKERS:-}" ] && sweep+=(--workers "$BENCH_WORKERS")
[ -n "${BENCH_TRANSFORMS:-}" ] && sweep+=(--transforms "$BENCH_TRANSFORMS")
[ -n "${BENCH_STEPS:-}" ] && sweep+=(--steps "$BENCH_STEPS")
# shellcheck disable=SC2206 # word splitting of the flag lists is wanted
flags=(${PAIRED_FLAGS:-})
# shellcheck disable=SC2206
extra=(${BENCH_FLAGS:-})
exec "$hs" gate --base "$base" --out "$out" "${flags[@]}" -- ladder "${sweep[@]}" "${extra[@]}"
