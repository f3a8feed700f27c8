#!/usr/bin/env bash
# ci/nightly.sh STEP — one step of the nightly workflow (ci/nightly-gpu.yml
# runs them in this order; ci/smoke.sh runs the workflow's steps on the
# emulated device). Settings come from the environment:
#   DEVICE          cuda on a GPU runner, emulated in the smoke test
#   NIGHTLY_OUT     this night's result file (default results/nightly.txt)
#   HISTORY_STORE   the history store (default results/history)
#   PAGE            the published page (default site/index.html)
#   BENCH_LEVELS, BENCH_WORKERS, BENCH_TRANSFORMS, BENCH_STEPS,
#   BENCH_COUNT, BENCH_FLAGS   the sweep (Makefile)
#   GITHUB_STEP_SUMMARY        where the step summary goes (if set)
#   NIGHTLY_PUSH=1  commit and push the store's new run (push step)
# Steps:
#   check   the GPU's self-check (cuda check), on DEVICE=cuda only
#   bench   the ladder sweep into NIGHTLY_OUT (ci/bench.sh)
#   gate    NIGHTLY_OUT against this machine's committed baseline and its
#           latest run in the store, both with the store's spread between
#           runs (ci/gate.sh); the tables go to the step summary
#   record  add NIGHTLY_OUT to the store; the history's summary to the
#           step summary
#   push    commit the store's new run and push it (retrying on a race
#           with another machine's job)
#   page    write the store's page to PAGE
set -euo pipefail
cd "$(dirname "$0")/.."
step=${1:?usage: ci/nightly.sh check|bench|gate|record|push|page}
export DEVICE=${DEVICE:-emulated}
out=${NIGHTLY_OUT:-results/nightly.txt}
store=${HISTORY_STORE:-results/history}
page=${PAGE:-site/index.html}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
hs=bin/headspace
[ -x "$hs" ] || make -s build >/dev/null
case "$step" in
check)
  if [ "$DEVICE" != cuda ]; then echo "nightly: check: DEVICE=$DEVICE has no GPU to check"; exit 0; fi
  mkdir -p "$(dirname "$out")"
  "$hs" cuda check --out "${out%.txt}-cuda-check.txt"
  ;;
bench)
  mkdir -p "$(dirname "$out")"
  ci/bench.sh "$out"
  ;;
gate)
  machine=$("$hs" baseline "$out")
  machine=$(basename "$machine" .txt)
  prev=$("$hs" history latest --store "$store" "$out" 2>/dev/null || true)
  status=0
  HISTORY="$store" ci/gate.sh "$out" "$prev" >"$out.gate" 2>&1 || status=$?
  cat "$out.gate"
  { echo "## Gate: $machine"; echo; echo '```'; cat "$out.gate"; echo '```'; echo; } >>"$summary"
  exit "$status"
  ;;
record)
  "$hs" history add --store "$store" "$out"
  "$hs" history report --store "$store" --format markdown >>"$summary"
  ;;
push)
  [ "${NIGHTLY_PUSH:-}" = 1 ] || { echo "nightly: push: NIGHTLY_PUSH is not 1; the store's new run stays in this checkout"; exit 0; }
  git add "$store"
  git -c user.name="headspace nightly" -c user.email="nightly@users.noreply.github.com" \
    commit -q -m "history: nightly run of $(git rev-parse --short HEAD) on $(basename "$(dirname "$(ls -t "$store"/*/*.txt | head -n 1)")")"
  for try in 1 2 3 4 5; do
    git pull -q --rebase && git push -q && exit 0
    echo "nightly: push: try $try failed; retrying"; sleep $((try * 7))
  done
  exit 1
  ;;
page)
  mkdir -p "$(dirname "$page")"
  "$hs" history report --store "$store" --out "$page"
  ;;
*)
  echo "ci/nightly.sh: unknown step $step" >&2; exit 2 ;;
esac
