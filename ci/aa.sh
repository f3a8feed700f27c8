#!/usr/bin/env bash
# ci/aa.sh N [OUTDIR] — measures the gate's false-alarm rate on this
# machine: N runs of one small `make bench` (the same code, so every
# alarm is false), then `headspace compare` of every pair of them. Prints
# how many pairs the gate failed (exit 1) and how many metrics it called
# regressions, and, for contrast, how many metrics had a raw p-value
# under alpha and a change beyond the threshold in the worse direction
# (what the gate flagged before the Benjamini–Hochberg correction).
# BENCH_* as in the Makefile; the defaults below are small (about 10 s a
# run on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: ci/aa.sh N [OUTDIR]}
dir=${2:-$(mktemp -d)}
mkdir -p "$dir"
export DEVICE=emulated BENCH_LEVELS=${BENCH_LEVELS:-none,raw,host,device} BENCH_WORKERS=${BENCH_WORKERS:-1} \
  BENCH_TRANSFORMS=${BENCH_TRANSFORMS:-fast} BENCH_STEPS=${BENCH_STEPS:-2} BENCH_COUNT=${BENCH_COUNT:-8} \
  BENCH_FLAGS=${BENCH_FLAGS:---raw-size 64 --crop 32 --batch 4 --step 20ms}
make -s build >/dev/null
for i in $(seq 1 "$n"); do
  [ -f "$dir/run$i.txt" ] || ci/bench.sh "$dir/run$i.txt" >/dev/null
done
pairs=0 failed=0 regs=0 raw=0 metrics=0
for i in $(seq 1 "$n"); do
  for j in $(seq $((i + 1)) "$n"); do
    pairs=$((pairs + 1))
    s=0; bin/headspace compare "$dir/run$i.txt" "$dir/run$j.txt" >"$dir/cmp.txt" || s=$?
    [ "$s" = 1 ] && failed=$((failed + 1))
    [ "$s" -gt 1 ] && { cat "$dir/cmp.txt"; exit "$s"; }
    regs=$((regs + $(grep -c ' REGRESSION$' "$dir/cmp.txt" || true)))
    metrics=$((metrics + $(sed -n 's/.* over \([0-9]*\) tested metrics.*/\1/p' "$dir/cmp.txt")))
    # Raw: p < 0.05, |delta| > 5%, the worse way (sec/op and *-sec up; per-second units and au-% down).
    raw=$((raw + $(awk '$1 ~ /^Benchmark/ && $NF != "" {
        for (k = 1; k <= NF; k++) if ($k ~ /%$/ && $k ~ /^[+-]/) { d = $k; p = $(k+1); break }
        sub(/%/, "", d); u = $2
        worse = (u ~ /sec/ && d > 5) || ((u ~ /\/s$/ || u == "au-%") && d < -5)
        if (worse && p != "-" && p + 0 < 0.05) c++ } END { print c + 0 }' "$dir/cmp.txt")))
  done
done
echo "A/A: $n runs, $pairs pairs, $metrics metrics compared; the gate failed $failed pairs ($regs metrics called regressions); uncorrected (raw p < 0.05 beyond 5%, worse way): $raw metrics"
