#!/usr/bin/env bash
# ci/bench.sh OUT — run the benchmark sweep on $DEVICE (default emulated) and
# write the benchmark-format file OUT. Extra sweep settings come from the
# Makefile's BENCH_* variables, so CI, a GPU runner and a laptop run the same
# command. Used by the nightly GPU workflow and by our own CI (smoke.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: ci/bench.sh OUT}
make bench DEVICE="${DEVICE:-emulated}" BENCH_OUT="$out"
