#!/usr/bin/env bash
# ci/ab.sh OLD NEW N OUTDIR [DOCS] — are `headspace reproduce`'s numbers
# the same at two commits? Builds OLD and NEW in temporary worktrees, then
# runs `reproduce --docs DOCS` (default 000,002,004) N times each,
# alternating OLD and NEW so the machine's drift falls on both, keeps each
# side's runs in OUTDIR/{before,after}-<report>.txt (the runs of a side
# concatenated) and prints benchstat of before against after for each
# report, ignoring the keys that differ between any two runs (commit,
# date, command, elapsed, distro). Used for the refactor of issue 27:
# docs/reproduce.md quotes it.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: ci/ab.sh OLD NEW N OUTDIR [DOCS]} new=${2:?} n=${3:?} out=${4:?} docs=${5:-000,002,004}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'for s in old new; do git worktree remove --force "$tmp/$s" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
for s in old new; do
  rev=$old; [ "$s" = new ] && rev=$new
  git worktree add -q --detach "$tmp/$s" "$rev"
  (cd "$tmp/$s" && go build -o bin/headspace ./cmd/headspace)
done
for i in $(seq 1 "$n"); do
  for s in old new; do
    (cd "$tmp/$s" && bin/headspace reproduce --docs "$docs" --out "$tmp/$s-$i") >"$tmp/$s-$i.log" 2>&1 ||
      { cat "$tmp/$s-$i.log" >&2; exit 1; }
    echo "$s run $i of $n done" >&2
  done
done
for f in "$tmp"/old-1/results/*.txt; do
  r=$(basename "$f")
  for s in old new; do
    side=before; [ "$s" = new ] && side=after
    cat "$tmp/$s"-*/results/"$r" >"$out/$side-$r"
  done
  echo "== $r"
  go tool benchstat -ignore commit,date,command,elapsed,distro before="$out/before-$r" after="$out/after-$r"
done
