#!/usr/bin/env bash
# ci/backfill.sh N [STORE] — gives a history store its past: runs the
# emulated ladder at the last N commits of HEAD's first-parent line
# (oldest first), each built and run in a temporary git worktree at small
# sizes, and adds every run to STORE (default results/store) with the
# commit's date. Small on purpose (2 levels, 1 worker, 64² images, a 20 ms
# step, 6 runs of 4 steps: about 15 s of measuring per commit plus its
# build), so a shared 2-core machine can backfill a dozen commits.
# BACKFILL_FLAGS replaces the ladder flags; a commit whose ladder cannot
# run them is skipped with a line saying why. Commits already in the
# store are skipped. Nothing is left behind: the worktree is removed on
# exit, even on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: ci/backfill.sh N [STORE]}
store=${2:-results/store}
flags=${BACKFILL_FLAGS:---levels none,device --workers 1 --transforms fast --raw-size 64 --crop 32 --batch 4 --step 20ms --steps 4 --count 6}
repo=$(pwd)
tmp=$(mktemp -d)
cleanup() {
  git -C "$repo" worktree remove --force "$tmp/wt" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/headspace" ./cmd/headspace
for c in $(git rev-list --first-parent -n "$n" HEAD | tac); do
  short=$(git rev-parse --short "$c")
  if ls "$store"/*/*-"$short".txt >/dev/null 2>&1; then
    echo "backfill: $short is already in $store"
    continue
  fi
  date=$(git log -1 --format=%cI "$c")
  git worktree add --detach "$tmp/wt" "$c" >/dev/null 2>&1
  if ! (cd "$tmp/wt" && go build -o "$tmp/at-commit" ./cmd/headspace) 2>"$tmp/build.err"; then
    echo "backfill: $short does not build; skipped: $(head -n 1 "$tmp/build.err")"
  elif ! (cd "$tmp/wt" && HEADSPACE_COMMIT="$short" "$tmp/at-commit" ladder --device emulated $flags --out "$tmp/$short.txt") >/dev/null 2>"$tmp/run.err"; then
    echo "backfill: $short's ladder failed; skipped: $(tail -n 1 "$tmp/run.err")"
  else
    "$tmp/headspace" history add --store "$store" --date "$date" "$tmp/$short.txt"
  fi
  git worktree remove --force "$tmp/wt"
done
