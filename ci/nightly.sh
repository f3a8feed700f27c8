#!/usr/bin/env bash
# ci/nightly.sh STEP — one step of the nightly workflow (ci/nightly-gpu.yml
# runs them in this order; ci/smoke.sh runs the workflow's steps on the
# emulated device). Settings come from the environment:
#   DEVICE          cuda on a GPU runner, emulated in the smoke test
#   NIGHTLY_OUT     this night's result file (default results/nightly.txt)
#   HISTORY_STORE   the history store (default results/store)
#   PAGE            the published page (default site/index.html)
#   BENCH_LEVELS, BENCH_WORKERS, BENCH_TRANSFORMS, BENCH_STEPS,
#   BENCH_COUNT, BENCH_FLAGS   the sweep (Makefile)
#   GITHUB_STEP_SUMMARY        where the step summary goes (if set)
#   NIGHTLY_PUSH=1  commit and push the store's new run (push step)
#   NIGHTLY_BASE    the paired step's base revision (default: the commit
#                   of this machine's latest run in the store)
#   NIGHTLY_PAIRED=0  skip the paired step (ci/smoke.sh: minutes of rounds)
# Steps:
#   check   the GPU's self-check (cuda check), on DEVICE=cuda only
#   bench   the ladder sweep into NIGHTLY_OUT (ci/bench.sh)
#   gate    NIGHTLY_OUT against this machine's committed baseline and its
#           latest run in the store, both with the store's spread between
#           runs (ci/gate.sh); the tables go to the step summary
#   paired  the paired gate (ci/paired.sh, headspace gate): NIGHTLY_BASE
#           and this checkout run alternately in randomized rounds on this
#           machine, into ${NIGHTLY_OUT%.txt}-paired/; skipped (exit 0)
#           when there is no base to compare with; exit 0 only when
#           every verdict metric's interval excludes a slowdown beyond the
#           threshold, 1 slower (confirmed), 3 rerun (not sure at the
#           session's bound, or too few undisturbed rounds): a failed
#           step, and the step summary says which
#   canary  the gate measured on itself: one A/A session and one whose
#           head's raw level is 10% slower (the headspace_inject build),
#           this checkout against itself on a small emulated sweep, into
#           ${NIGHTLY_OUT%.txt}-canary-{0,0.10}/; each session's
#           canary.txt goes into the store, and the false-failure rate
#           and power of every canary ever run (headspace gate
#           --canaries) to the step summary; skipped with the paired step
#   record  add NIGHTLY_OUT to the store, and the paired step's base.txt
#           and head.txt where it ran (the history keeps both sides);
#           the history's summary to the step summary
#   push    commit the store's new run (and docs/gate.md's canary rates,
#           rewritten by the canary step) and push it (retrying on a race
#           with another machine's job)
#   page    write the store's page to PAGE
set -euo pipefail
cd "$(dirname "$0")/.."
step=${1:?usage: ci/nightly.sh check|bench|gate|paired|canary|record|push|page}
export DEVICE=${DEVICE:-emulated}
out=${NIGHTLY_OUT:-results/nightly.txt}
store=${HISTORY_STORE:-results/store}
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
paired)
  [ "${NIGHTLY_PAIRED:-1}" = 0 ] && { echo "nightly: paired: NIGHTLY_PAIRED=0; skipped"; exit 0; }
  paired=${out%.txt}-paired
  base=${NIGHTLY_BASE:-}
  if [ -z "$base" ]; then
    prev=$("$hs" history latest --store "$store" "$out" 2>/dev/null || true)
    [ -n "$prev" ] && base=$(sed -n 's/^commit: //p' "$prev" | head -n 1)
    base=${base%-dirty}
  fi
  if [ -z "$base" ] || ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
    echo "nightly: paired: no base revision to compare with (set NIGHTLY_BASE); skipped"
    exit 0
  fi
  rm -rf "$paired"
  status=0
  ci/paired.sh "$base" "$paired" || status=$?
  case $status in
  0) outcome="pass: every verdict metric's interval excludes a slowdown beyond the threshold" ;;
  1) outcome="FAIL: slower, confirmed" ;;
  3) outcome="RERUN (exit 3): no pass without evidence; $(grep -E '^RERUN' "$paired/gate.txt" 2>/dev/null | tail -n 1)" ;;
  *) outcome="ERROR (exit $status): no verdict" ;;
  esac
  { echo "## Paired gate: $base against $(git rev-parse --short HEAD)"; echo; echo "$outcome"; echo; echo '```'; cat "$paired/gate.txt" 2>/dev/null; echo '```'; echo; } >>"$summary"
  exit "$status"
  ;;
canary)
  [ "${NIGHTLY_PAIRED:-1}" = 0 ] && { echo "nightly: canary: NIGHTLY_PAIRED=0; skipped"; exit 0; }
  # The sweep of ci/aa-paired.sh, on which docs/gate.md measured the gate:
  # raw CPU-bound, so the injected slowdown shows in its verdict metric.
  for slowdown in 0 0.10; do
    dir=${out%.txt}-canary-$slowdown
    rm -rf "$dir"
    inject=; [ "$slowdown" = 0 ] || inject=raw=$slowdown
    status=0
    DEVICE=emulated BENCH_LEVELS=raw,host BENCH_WORKERS=1 BENCH_TRANSFORMS=fast BENCH_STEPS=500 \
      BENCH_FLAGS="--raw-size 256 --crop 128 --batch 8 --step 1ms --reruns 0" HEADSPACE_INJECT=$inject \
      PAIRED_FLAGS="--head-tags headspace_inject --canary $slowdown --quiet-wait 1s ${CANARY_FLAGS:-}" \
      ci/paired.sh HEAD "$dir" || status=$?
    # 1 (failed) and 3 (rerun) are the canary's outcome, recorded; 2 and
    # 130 are not.
    case $status in 0|1|3) ;; *) exit "$status" ;; esac
    "$hs" history add --store "$store" "$dir/canary.txt"
  done
  { echo "## Canaries: the paired gate on itself"; echo; echo '```'
    "$hs" gate --canaries "$store" results/paired-aa results/paired-aa-r2; echo '```'; echo; } | tee -a "$summary"
  # docs/gate.md quotes that output (TestDocsCanaries): rewrite its block,
  # which the push step commits with the store.
  HEADSPACE_UPDATE_DOCS=1 go test -count=1 -run '^TestDocsCanaries$' ./cmd/headspace >/dev/null
  ;;
record)
  "$hs" history add --store "$store" "$out"
  paired=${out%.txt}-paired
  for side in base head; do
    [ -f "$paired/$side.txt" ] && "$hs" history add --store "$store" "$paired/$side.txt"
  done
  "$hs" history report --store "$store" --format markdown >>"$summary"
  ;;
push)
  [ "${NIGHTLY_PUSH:-}" = 1 ] || { echo "nightly: push: NIGHTLY_PUSH is not 1; the store's new run stays in this checkout"; exit 0; }
  git add "$store" docs/gate.md
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
