#!/usr/bin/env bash
# ci/aa-summary.sh DIR — summarizes the sessions ci/aa-paired.sh left in
# DIR (docs/gate.md quotes its output): one Markdown row per session (the
# raw level's verdict metric and the host level's in the paired report,
# both gates' exits; where a session also holds the replay $REPLAY
# (gate-replay.txt by default; gate-replay-r5.txt holds issue 52's rule,
# which passes only when the interval excludes a slowdown beyond the
# threshold), from `headspace gate --replay` by a later rule, the paired
# exit by that rule too), then, for each gate, false failures (exit 1 on a
# session without slowdown) and power (exit 1 with one), split by quiet
# and disturbed sessions, each with its Clopper–Pearson 95% interval:
# the k/n rate's exact binomial interval [lo, hi], hi solving
# P(X <= k | n, hi) = 0.025 and lo solving P(X >= k | n, lo) = 0.025
# (hi = 1 - 0.025^(1/n) when k = 0), found by bisection.
set -euo pipefail
dir=${1:?usage: [REPLAY=gate-replay-r5.txt] ci/aa-summary.sh DIR}
replay=${REPLAY:-gate-replay.txt}
row() { # row FILE LEVEL: "ratio [interval], verdict" of LEVEL's verdict metric
  awk -v lv="level=$2/" '$0 ~ /^Benchmark/ && index($1, lv) && $3 == "*" {
    v = $NF; if ($(NF-1) == "disturbed:") v = "rerun"; if ($(NF-1) == "not") v = "not " $NF
    j = 4; r = $j; if (r != "-") j++
    j++; i = $j; if (i != "-") { j++; i = i " " $j }
    printf "%s %s, %s", r, (i == "-" ? "" : i), v; exit }' "$1"
}
exits() { # exits: n, slowdown, disturbance, paired exit as run, by the replay's rule, compare exit
  tail -n +2 "$dir/sessions.tsv" | while IFS=$'\t' read -r n eff what p f _; do
    r=$p
    if [ -f "$dir/s$n/$replay" ]; then
      case $(grep -oE '^(PASS|FAIL|RERUN)' "$dir/s$n/$replay" | tail -n 1) in
      PASS) r=0 ;; FAIL) r=1 ;; RERUN) r=3 ;; *) r=- ;;
      esac
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$eff" "$what" "$p" "$r" "$f"
  done
}
echo "| session | slowdown | disturbance | load (start → end) | min | raw cpu-sec/op: head/base, interval, verdict | host sec/op | paired exit (replayed) | compare exit |"
echo "|---|---|---|---|---|---|---|---|---|"
tail -n +2 "$dir/sessions.tsv" | while IFS=$'\t' read -r n eff what p f l0 l1 min; do
  g="$dir/s$n/gate.txt" pr=$p
  if [ -f "$dir/s$n/$replay" ]; then
    g="$dir/s$n/$replay" pr="$p ($(exits | awk -F'\t' -v n="$n" '$1 == n { print $5 }'))"
  fi
  printf '| s%s | %s | %s | %s → %s | %s | %s | %s | %s | %s |\n' "$n" "$eff" "$what" "$l0" "$l1" "$min" \
    "$(row "$g" raw)" "$(row "$g" host)" "$pr" "$f"
done
echo
exits | awk -F'\t' '
function cdf(k, n, p,   i, c, s) { s = 0; c = 1; for (i = 0; i <= k; i++) { s += c * p^i * (1-p)^(n-i); c = c * (n-i) / (i+1) }; return s }
function hi(k, n,   a, b, m, j) { if (k >= n) return 1; a = 0; b = 1; for (j = 0; j < 60; j++) { m = (a+b)/2; if (cdf(k, n, m) > 0.025) a = m; else b = m }; return a }
function lo(k, n,   a, b, m, j) { if (k <= 0) return 0; a = 0; b = 1; for (j = 0; j < 60; j++) { m = (a+b)/2; if (1 - cdf(k-1, n, m) < 0.025) a = m; else b = m }; return b }
function show(what, k, n) { if (n == 0) { printf "%s: not measured\n", what; return }
  printf "%s: %d/%d = %.0f%%, 95%% CP [%.1f%%, %.1f%%]\n", what, k, n, 100*k/n, 100*lo(k,n), 100*hi(k,n) }
{ kind = ($3 == "none") ? "quiet" : "disturbed"
  for (g = 4; g <= 6; g++) { key = $2 SUBSEP kind SUBSEP g; n[key]++; if ($g == 1) k[key]++; if ($g == 3) r[key]++
    all = $2 SUBSEP "all" SUBSEP g; n[all]++; if ($g == 1) k[all]++; if ($g == 3) r[all]++ } }
END {
  split("5 4 6", gs, " "); name[4] = "paired gate as run"; name[5] = "paired gate"; name[6] = "compare"
  for (gi = 1; gi <= 3; gi++) { g = gs[gi]
    for (e = 1; e <= 3; e++) { eff = (e == 1) ? "aa" : (e == 2) ? "0.10" : "0.05"
      for (c = 1; c <= 3; c++) { kind = (c == 1) ? "all" : (c == 2) ? "quiet" : "disturbed"; key = eff SUBSEP kind SUBSEP g
        what = (eff == "aa") ? "false failures" : "power at +" (eff == "0.10" ? "10" : "5") "%"
        show(sprintf("%s, %s, %s (rerun: %d, passed: %d)", name[g], what, kind, r[key] + 0, n[key] - k[key] - r[key]), k[key] + 0, n[key] + 0) } } } }'
