#!/usr/bin/env bash
# ci/smoke.sh — our own CI's run of the nightly workflow's scripts, on the
# emulated device with a tiny pipeline, so the scripts are exercised on every
# change: bench.sh twice (as a baseline and as a new run), then gate.sh.
# The gate must reach a verdict on the same code and must fail on a crafted
# regression. Then `headspace reproduce --quick` must write all four reports
# and their result files, and `--from` must rebuild them byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
small="BENCH_LEVELS=none,device BENCH_WORKERS=1 BENCH_TRANSFORMS=fast BENCH_STEPS=2 BENCH_COUNT=8"
# The smoke checks the scripts' plumbing, not the disturbance rules (their
# tests are internal/disturb's and the gate's): on a busy CI machine a
# disturbed run would make the same-code gate say "rerun" (exit 3) and a
# machine-busy line appear, so no run is marked disturbed here and none
# waits for a quiet machine.
flags="--raw-size 64 --crop 32 --batch 4 --step 20ms --max-run-delay 9.9 --reruns 0 --quiet-wait 0"
export DEVICE=emulated
env $small BENCH_FLAGS="$flags" ci/bench.sh "$tmp/base.txt" >/dev/null
env $small BENCH_FLAGS="$flags" ci/bench.sh "$tmp/new.txt" >/dev/null
# Every BENCH_* setting reached the command: the file holds exactly the
# requested points (levels none and device, 1 worker, fast transforms),
# 8 runs (BENCH_COUNT) of 2 steps (BENCH_STEPS) each.
points=$(awk '/^Benchmark/ { n[$1]++ } END { for (k in n) print k, n[k] }' "$tmp/base.txt" | sort)
want=$(printf '%s\n' "BenchmarkLadder/level=device/workers=1/transforms=fast/placement=host/pinned=true-$(nproc) 8" \
  "BenchmarkLadder/level=none/workers=1/transforms=fast/placement=host/pinned=true-$(nproc) 8" | sort)
[ "$points" = "$want" ] || { printf 'got:\n%s\nwant:\n%s\n' "$points" "$want"; echo "ci/smoke.sh: make bench did not run exactly the requested points" >&2; exit 1; }
grep -qx 'steps: 2' "$tmp/base.txt" || { echo "ci/smoke.sh: BENCH_STEPS=2 did not reach the ladder" >&2; exit 1; }
# Same code: the gate must reach a verdict (exit 0, or 1 where the shared
# machine's noise really moved a metric: timing decides no pass here) and
# never call the evidence short (exit 2).
rc=0; BASELINE="$tmp/base.txt" GATE_FLAGS="--threshold 0.5" ci/gate.sh "$tmp/new.txt" "$tmp/base.txt" >"$tmp/aa.out" 2>&1 || rc=$?
[ "$rc" -le 1 ] || { cat "$tmp/aa.out"; echo "ci/smoke.sh: the gate reached no verdict on two runs of the same code (exit $rc)" >&2; exit 1; }
# A crafted regression (every step twice as slow) must fail the gate.
awk '/^Benchmark/ { $3 = $3 * 2; $5 = $5 / 2; $7 = $7 / 2 } { print }' "$tmp/new.txt" > "$tmp/slow.txt"
if BASELINE="$tmp/base.txt" ci/gate.sh "$tmp/slow.txt" >"$tmp/gate.out" 2>&1; then
  cat "$tmp/gate.out"; echo "ci/smoke.sh: the gate passed a 2x slowdown" >&2; exit 1
fi
grep -q 'regression' "$tmp/gate.out" || { cat "$tmp/gate.out"; echo "ci/smoke.sh: the gate did not name the regression" >&2; exit 1; }
# make reproduce, at --quick sizes: every document's report.
make -s build >/dev/null
bin/headspace reproduce --quick --out "$tmp/nb" >/dev/null 2>"$tmp/reproduce.err" || { cat "$tmp/reproduce.err"; echo "ci/smoke.sh: reproduce --quick failed" >&2; exit 1; }
for r in 000-headspace 002-loaders 003-caching-ladder 004-sim; do
  test -s "$tmp/nb/$r.md" || { echo "ci/smoke.sh: reproduce --quick wrote no $r.md" >&2; exit 1; }
  test -s "$tmp/nb/results/$r.txt" || { echo "ci/smoke.sh: reproduce --quick saved no results/$r.txt" >&2; exit 1; }
done
bin/headspace reproduce --from "$tmp/nb/results" --out "$tmp/nb2" >/dev/null 2>"$tmp/rebuild.err" || { cat "$tmp/rebuild.err"; echo "ci/smoke.sh: reproduce --from failed" >&2; exit 1; }
diff -r "$tmp/nb" "$tmp/nb2" >/dev/null || { echo "ci/smoke.sh: reproduce --from did not rebuild the --quick run's reports and figures byte for byte" >&2; exit 1; }
echo "ci/smoke.sh: bench.sh and gate.sh work on the emulated device; reproduce --quick writes the four reports, --from rebuilds them byte for byte"
# The nightly workflow's run: steps, in its order, on the emulated device
# with the small sweep: every step must be one `ci/nightly.sh STEP` line,
# so what runs here is what runs there. The store starts with the two
# runs above; the gate uses the first as this machine's baseline.
steps=$(sed -n 's/^ *run: *//p' ci/nightly-gpu.yml)
[ -n "$steps" ] || { echo "ci/smoke.sh: no run: steps in ci/nightly-gpu.yml" >&2; exit 1; }
if grep -n '^ *run: *|' ci/nightly-gpu.yml; then echo "ci/smoke.sh: a multi-line run: step; keep each step one ci/nightly.sh line" >&2; exit 1; fi
bin/headspace history add --store "$tmp/store" "$tmp/base.txt" "$tmp/new.txt" >/dev/null
: >"$tmp/summary.md"
while read -r cmd; do
  rc=0
  case "$cmd" in ci/nightly.sh\ *) ;; *) echo "ci/smoke.sh: workflow step '$cmd' is not a ci/nightly.sh step" >&2; exit 1 ;; esac
  env $small BENCH_FLAGS="$flags" DEVICE=emulated NIGHTLY_OUT="$tmp/nightly.txt" HISTORY_STORE="$tmp/store" \
    PAGE="$tmp/site/index.html" GITHUB_STEP_SUMMARY="$tmp/summary.md" BASELINE="$tmp/base.txt" \
    GATE_FLAGS="--threshold 0.5" NIGHTLY_PUSH= NIGHTLY_PAIRED=0 CI= $cmd >"$tmp/step.out" 2>&1 || rc=$?
  # The gate step's verdict on two runs of the same code is timing, not a
  # test: exit 1 is a verdict; anything else is a broken step.
  if [ "$rc" -ne 0 ] && ! { [ "$cmd" = "ci/nightly.sh gate" ] && [ "$rc" -eq 1 ]; }; then
    cat "$tmp/step.out"; echo "ci/smoke.sh: workflow step '$cmd' failed (exit $rc)" >&2; exit 1
  fi
done <<<"$steps"
[ "$(ls "$tmp/store"/*/*.txt | wc -l)" = 3 ] || { echo "ci/smoke.sh: the nightly did not add its run to the history" >&2; exit 1; }
grep -q '^## Gate: ' "$tmp/summary.md" && grep -q '^## headspace history' "$tmp/summary.md" \
  || { cat "$tmp/summary.md"; echo "ci/smoke.sh: the step summary lacks the gate or the history" >&2; exit 1; }
grep -q '<title>headspace history</title>' "$tmp/site/index.html" || { echo "ci/smoke.sh: the nightly wrote no history page" >&2; exit 1; }
echo "ci/smoke.sh: the nightly workflow's steps run in order on the emulated device: bench, gate (baseline and history), record, page, step summary"
# The GPU suite (ci/gpu-suite.sh), every command on the emulated device at
# tiny sizes: it must pass and write its summary.
# `all` is the one call for a lent GPU; ladder, device and loaders run
# what it leaves out (measured on a card before).
# `all` also packs its folder into one archive (--archive), as a machine
# that gives back a few files needs.
for part in all ladder device loaders; do
  arch=()
  [ $part = all ] && arch=(--archive "$tmp/gpu-suite-all.tgz")
  ci/gpu-suite.sh --emulated --quick "${arch[@]}" $part "$tmp/gpu-suite-$part" 2>"$tmp/gpu-suite.err" || { cat "$tmp/gpu-suite-$part/summary.txt" "$tmp/gpu-suite.err" 2>/dev/null; echo "ci/smoke.sh: ci/gpu-suite.sh --emulated --quick $part failed" >&2; exit 1; }
  grep -q '^result: every command ran and passed' "$tmp/gpu-suite-$part/summary.txt" || { echo "ci/smoke.sh: the GPU suite's $part summary does not say it passed" >&2; exit 1; }
done
grep -q '^== goals' "$tmp/gpu-suite-all/summary.txt" && [ -s "$tmp/gpu-suite-all/goals.txt" ] || { echo "ci/smoke.sh: the GPU suite's summary and goals.txt lack the goals" >&2; exit 1; }
tar tzf "$tmp/gpu-suite-all.tgz" >"$tmp/gpu-suite-all.list" && grep -qx summary.txt "$tmp/gpu-suite-all.list" && grep -qx goals.txt "$tmp/gpu-suite-all.list" && grep -qx ladder-levels.txt "$tmp/gpu-suite-all.list" && ! grep -q / "$tmp/gpu-suite-all.list" \
  || { cat "$tmp/gpu-suite-all.list"; echo "ci/smoke.sh: the GPU suite's --archive lacks the summary, the goals or a result file, or holds a folder" >&2; exit 1; }
tar xzOf "$tmp/gpu-suite-all.tgz" summary.txt | cmp -s - "$tmp/gpu-suite-all/summary.txt" || { echo "ci/smoke.sh: the GPU suite's archive holds another summary than OUTDIR's" >&2; exit 1; }
echo "ci/smoke.sh: ci/gpu-suite.sh runs every command on the emulated device"
